internal import AttacheCore
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Holds many downloads and runs a bounded number of them at a time (overall and per host), each one
/// a ``Downloader`` transfer: streamed into `DEST.part`, resumed with `Range` + `If-Range`, verified
/// (announced size, a SHA-256 `ETag`, the caller's expected SHA-256) and optionally decrypted before
/// `DEST` appears.
///
/// Transfers belong to groups. ``pause(_:)`` keeps a transfer's bytes, ``resume(_:)`` continues from
/// them, ``cancel(_:)`` removes them, ``restart(_:)`` starts over from byte 0; each has a group form.
/// Everything that happens arrives in ``events`` in order, with per-transfer and aggregate progress.
///
/// With a journal (`AttacheBatch.DownloadJournal` for SQLite), the state survives the process: adding
/// the same items in a new process skips finished files and continues unfinished ones from the
/// bytes on disk, under the validator their bytes were fetched with, so a server copy that changed
/// in between is fetched whole again.
///
/// ```swift
/// let manager = DownloadManager(configuration: .init(maximumConcurrentTransfers: 8))
/// for (url, path) in files { try manager.add(DownloadItem(url: url, destination: path, group: "export")) }
/// Task { for await event in manager.events { print(event) } }
/// let summary = await manager.waitUntilSettled()
/// manager.close()
/// ```
public final class DownloadManager: Sendable {
    /// Limits and pacing.
    public struct Configuration: Sendable {
        /// Transfers running at the same time.
        public var maximumConcurrentTransfers: Int
        /// Transfers running at the same time against one host.
        public var maximumTransfersPerHost: Int
        /// The shortest time between two progress events of one transfer.
        public var progressInterval: Duration

        /// Creates a configuration.
        public init(
            maximumConcurrentTransfers: Int = 8, maximumTransfersPerHost: Int? = nil,
            progressInterval: Duration = .milliseconds(250)
        ) {
            self.maximumConcurrentTransfers = max(1, maximumConcurrentTransfers)
            self.maximumTransfersPerHost = max(1, maximumTransfersPerHost ?? self.maximumConcurrentTransfers)
            self.progressInterval = progressInterval
        }
    }

    /// Where a transfer stands.
    public enum Phase: String, Sendable, Hashable, Codable, CaseIterable {
        /// Waiting for a free slot.
        case queued
        /// Receiving bytes.
        case running
        /// Paused; its bytes are kept in the `.part` file.
        case paused
        /// Complete, verified and in place (now or in an earlier run).
        case completed
        /// Failed; its bytes are kept for ``DownloadManager/resume(_:)``.
        case failed
        /// Cancelled; nothing is left of it.
        case cancelled
    }

    /// One transfer as the manager sees it now.
    public struct Status: Sendable, Hashable {
        /// The transfer.
        public var id: DownloadID
        /// Its group.
        public var group: String
        /// Where it stands.
        public var phase: Phase
        /// Its bytes, rate and time left.
        public var figures: DownloadFigures
    }

    /// The limits it runs with.
    public let configuration: Configuration
    /// Everything that happens, in order. Buffered without limit: consume it (or never iterate it).
    public let events: AsyncStream<DownloadEvent>

    private let continuation: AsyncStream<DownloadEvent>.Continuation
    private let downloader: Downloader
    private let journal: (any DownloadJournaling)?
    private let writer: JournalWriter?
    private let state = LockedValue(State())

    /// - Parameters:
    ///   - configuration: concurrency limits and progress pacing.
    ///   - connection: timeouts, TLS, retries and headers, as for every transfer.
    ///   - journal: where the state is kept; nil keeps it in memory only.
    ///   - transport: what sends the requests; the shared ``CurlTransport`` when nil.
    public init(
        configuration: Configuration = Configuration(), connection: ConnectionConfiguration = ConnectionConfiguration(),
        journal: (any DownloadJournaling)? = nil, transport: (any HTTPTransport)? = nil
    ) {
        self.configuration = configuration
        self.downloader = Downloader(configuration: connection, transport: transport)
        self.journal = journal
        self.writer = journal.map(JournalWriter.init)
        (events, continuation) = AsyncStream.makeStream(of: DownloadEvent.self, bufferingPolicy: .unbounded)
    }

    deinit { continuation.finish() }

    // MARK: Adding

    /// Adds a transfer and starts it when a slot is free.
    ///
    /// With a journal, an item whose destination the journal knows from the same URL is not started
    /// afresh: a finished file whose output exists is reported ``DownloadEvent/alreadyDone(_:)``;
    /// an unfinished one (queued, running when its process died, paused, failed) continues from its
    /// `.part` file. An item with another URL, or a cancelled one, starts over.
    ///
    /// The journal is read on the calling thread (one indexed SQLite read for `DownloadJournal`).
    ///
    /// - Returns: the transfer's id (its absolute destination).
    /// - Throws: `AttacheError` `.invalidArgument` when the destination is already held by an
    ///   unfinished transfer, `.journal` when the journal cannot be read.
    @discardableResult
    public func add(_ item: DownloadItem) throws -> DownloadID {
        var item = item
        let id = DownloadID(path: item.destination)
        item.destination = id.path
        let record = try journal?.record(for: id.path)
        var resume = false
        var validator: String?
        var done = false
        if let record, record.url == item.url {
            switch record.state {
            case .done: done = access(id.path, F_OK) == 0
            case .cancelled: break
            case .queued, .active, .paused, .failed:
                resume = true
                validator = record.validator
            }
        }
        let host = URL(string: item.url)?.host ?? ""
        try state.withLock { state in
            if let existing = state.transfers[id], [.queued, .running, .paused].contains(existing.phase) {
                throw AttacheError(
                    .invalidArgument, stage: .download, "another transfer already downloads to this file", file: id.path)
            }
            if let existing = state.transfers[id] {
                // A finished transfer given again: its place in the counts and sums goes to the new one.
                state.counts[existing.phase, default: 0] -= 1
                if existing.alreadyDone { state.alreadyDone -= 1 }
                state.receivedSum -= existing.received
                state.totalSum -= existing.total ?? 0
            }
            var transfer = Transfer(item: item, host: host, resume: resume, validator: validator)
            if done {
                transfer.phase = .completed
                transfer.alreadyDone = true
                transfer.total = record?.totalBytes
                transfer.received = record?.totalBytes ?? 0
                state.receivedSum += transfer.received
                state.totalSum += transfer.total ?? 0
                state.transfers[id] = transfer
                state.counts[.completed, default: 0] += 1
                state.alreadyDone += 1
                continuation.yield(.alreadyDone(id))
                return
            }
            transfer.received = resume ? Self.size(of: id.path + ".part") ?? 0 : 0
            state.receivedSum += transfer.received
            state.transfers[id] = transfer
            state.counts[.queued, default: 0] += 1
            state.order.append(id)
            writer?.enqueue(transfer.record(.queued))
            continuation.yield(.queued(id))
        }
        pump()
        return id
    }

    // MARK: Controlling

    /// Pauses a transfer: a queued one is held back, a running one is stopped; its bytes are kept.
    public func pause(_ id: DownloadID) { apply(.pause) { candidate, _ in candidate == id } }
    /// Continues a paused or failed transfer from its bytes.
    public func resume(_ id: DownloadID) { apply(.resume) { candidate, _ in candidate == id } }
    /// Stops a transfer for good and removes its partial bytes (a completed file is left alone).
    public func cancel(_ id: DownloadID) { apply(.cancel) { candidate, _ in candidate == id } }
    /// Starts a transfer again from byte 0, whatever its state.
    public func restart(_ id: DownloadID) { apply(.restart) { candidate, _ in candidate == id } }

    /// Pauses every transfer of `group`.
    public func pause(group: String) { apply(.pause) { [group] _, transfer in transfer.item.group == group } }
    /// Resumes every paused or failed transfer of `group`.
    public func resume(group: String) { apply(.resume) { [group] _, transfer in transfer.item.group == group } }
    /// Cancels every unfinished transfer of `group`.
    public func cancel(group: String) { apply(.cancel) { [group] _, transfer in transfer.item.group == group } }
    /// Restarts every transfer of `group` from byte 0.
    public func restart(group: String) { apply(.restart) { [group] _, transfer in transfer.item.group == group } }

    /// Pauses every transfer (what an interrupted command does before it exits).
    public func pauseAll() { apply(.pause) { _, _ in true } }

    // MARK: Observing

    /// The transfer's state now, or nil when the manager does not hold it.
    public func status(_ id: DownloadID) -> Status? {
        state.withLock { state in state.transfers[id].map { $0.status(id) } }
    }

    /// Every transfer's state now, in the order they were added (for the first time).
    public func statuses() -> [Status] {
        state.withLock { state in state.transfers.map { $0.value.status($0.key) } }
    }

    /// Bytes, rate and time left of all transfers together.
    public func aggregate() -> DownloadFigures {
        state.withLock { $0.aggregate }
    }

    /// Waits until no transfer is queued or running (all are completed, failed, paused or cancelled)
    /// and the journal has every change, then says how they ended.
    ///
    /// - Throws: `AttacheError` `.journal` when the journal could not be written (the transfers still
    ///   ran; a later run may fetch some again).
    public func waitUntilSettled() async throws -> DownloadSummary {
        let summary = await withCheckedContinuation { (waiter: CheckedContinuation<DownloadSummary, Never>) in
            state.withLock { state in
                if state.isSettled {
                    waiter.resume(returning: state.summary)
                } else {
                    state.waiters.append(waiter)
                }
            }
        }
        if let writer { try await writer.flush() }
        return summary
    }

    /// Ends ``events``; call when no more transfers will be added or changed.
    public func close() { continuation.finish() }

    // MARK: Running

    fileprivate enum Operation { case pause, resume, cancel, restart }

    private func apply(_ operation: Operation, where matches: (DownloadID, Transfer) -> Bool) {
        var toCancel: [Task<Void, Never>] = []
        state.withLock { state in
            for (id, transfer) in state.transfers where matches(id, transfer) {
                if let task = state.change(id, operation, writer: writer, events: continuation) { toCancel.append(task) }
            }
            state.settleIfIdle()
        }
        for task in toCancel { task.cancel() }
        if operation == .resume || operation == .restart { pump() }
    }

    /// Starts queued transfers while slots are free.
    private func pump() {
        let limits = configuration
        let starts = state.withLock { state in state.pickStarts(limits: limits) }
        for (id, generation) in starts {
            let task = Task { await self.execute(id, generation: generation) }
            let cancelNow = state.withLock { state -> Bool in
                guard state.transfers[id]?.generation == generation else { return false }
                state.transfers[id]?.task = task
                return state.transfers[id]?.intent != nil
            }
            if cancelNow { task.cancel() }
        }
    }

    private func execute(_ id: DownloadID, generation: Int) async {
        let request: DownloadRequest? = state.withLock { state in
            guard var transfer = state.transfers[id], transfer.generation == generation else { return nil }
            let item = transfer.item
            var request = DownloadRequest(
                url: item.url, destination: item.destination, resume: transfer.resume, headers: item.headers,
                unsealing: item.unsealing, validator: transfer.validator, expectedSHA256: item.expectedSHA256)
            request.partialPath = item.destination + ".part"
            request.digest = item.digest
            transfer.received = transfer.resume ? Self.size(of: request.partialPath) ?? 0 : 0
            state.receivedSum += transfer.received - (state.transfers[id]?.received ?? 0)
            state.transfers[id] = transfer
            writer?.enqueue(transfer.record(.active))
            continuation.yield(.started(id, offset: transfer.received))
            return request
        }
        guard let request else { return }
        let result: Result<DownloadReceipt, AttacheError>
        do {
            let receipt = try await downloader.download(request) { [weak self] progress in
                self?.progressed(id, generation: generation, progress)
            }
            result = .success(receipt)
        } catch let error as AttacheError {
            result = .failure(error)
        } catch {
            result = .failure(AttacheError(.cancelled, stage: .download, "the transfer was cancelled", file: id.path))
        }
        finished(id, generation: generation, result)
    }

    private func progressed(_ id: DownloadID, generation: Int, _ progress: DownloadProgress) {
        let interval = configuration.progressInterval
        state.withLock { state in
            guard var transfer = state.transfers[id], transfer.generation == generation, transfer.phase == .running
            else { return }
            let now = ContinuousClock.now
            state.receivedSum += progress.receivedBytes - transfer.received
            transfer.received = progress.receivedBytes
            if let total = progress.totalBytes, total != transfer.total {
                state.totalSum += total - (transfer.total ?? 0)
                transfer.total = total
            }
            if let mark = transfer.rateMark {
                let elapsed = now - mark.instant
                if elapsed >= .milliseconds(500) {
                    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                    let instant = max(0, Double(transfer.received - mark.bytes) / seconds)
                    let rate = transfer.rate == 0 ? instant : transfer.rate * 0.6 + instant * 0.4
                    state.rateSum += rate - transfer.rate
                    transfer.rate = rate
                    transfer.rateMark = (now, transfer.received)
                }
            } else {
                transfer.rateMark = (now, transfer.received)
            }
            if let validator = progress.validator, validator != transfer.validator {
                transfer.validator = validator
                writer?.enqueue(transfer.record(.active))
            }
            var emit = false
            if transfer.lastEvent.map({ now - $0 >= interval }) ?? true {
                transfer.lastEvent = now
                emit = true
            }
            state.transfers[id] = transfer
            if emit { continuation.yield(.progress(id, transfer.figures, aggregate: state.aggregate)) }
        }
    }

    private func finished(_ id: DownloadID, generation: Int, _ result: Result<DownloadReceipt, AttacheError>) {
        var remove: [String] = []
        state.withLock { state in
            guard var transfer = state.transfers[id], transfer.generation == generation, transfer.phase == .running
            else { return }
            state.running -= 1
            state.perHost[transfer.host, default: 1] -= 1
            state.rateSum -= transfer.rate
            transfer.rate = 0
            transfer.rateMark = nil
            transfer.task = nil
            let intent = transfer.intent
            transfer.intent = nil
            state.transfers[id] = transfer
            switch (result, intent) {
            case (.success, .cancel?):
                // Finished just as it was cancelled: a cancelled transfer leaves nothing.
                remove.append(id.path)
                state.move(id, to: .cancelled)
                writer?.enqueue(transfer.record(.cancelled))
                continuation.yield(.cancelled(id))
            case (.success(let receipt), _):
                state.transferred += receipt.transferredByteCount
                state.receivedSum += receipt.byteCount - transfer.received
                if transfer.total == nil { state.totalSum += receipt.byteCount }
                state.transfers[id]?.received = receipt.byteCount
                state.transfers[id]?.total = receipt.byteCount
                state.move(id, to: .completed)
                var record = transfer.record(.done)
                record.totalBytes = receipt.byteCount
                record.sha256 = receipt.sha256
                writer?.enqueue(record)
                continuation.yield(.completed(id, receipt))
            case (.failure, .restart?):
                remove.append(id.path + ".part")
                state.requeueFresh(id, writer: writer, events: continuation)
            case (.failure, .cancel?):
                remove.append(id.path + ".part")
                state.move(id, to: .cancelled)
                writer?.enqueue(transfer.record(.cancelled))
                continuation.yield(.cancelled(id))
            case (.failure(let error), let intent):
                if intent == .pause || error.code == .cancelled {
                    let bytes = Self.size(of: id.path + ".part") ?? 0
                    state.transfers[id]?.resume = true
                    state.move(id, to: .paused)
                    writer?.enqueue(transfer.record(.paused))
                    continuation.yield(.paused(id, bytes: bytes))
                } else {
                    // The .part file stays (the downloader removes it only when its bytes are wrong):
                    // resume(_:) or a later run continues it.
                    state.transfers[id]?.resume = true
                    state.move(id, to: .failed)
                    var record = transfer.record(.failed)
                    record.errorCode = error.code.rawValue
                    record.errorMessage = error.message
                    writer?.enqueue(record)
                    continuation.yield(.failed(id, error))
                }
            }
        }
        for path in remove { unlink(path) }
        state.withLock { $0.settleIfIdle() }
        pump()
    }

    static func size(of path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    // MARK: State

    fileprivate struct Transfer {
        var item: DownloadItem
        let host: String
        var phase: Phase = .queued
        var intent: Operation?
        var task: Task<Void, Never>?
        var generation = 0
        var resume: Bool
        var validator: String?
        var received: Int64 = 0
        var total: Int64?
        var rate: Double = 0
        var rateMark: (instant: ContinuousClock.Instant, bytes: Int64)?
        var lastEvent: ContinuousClock.Instant?
        var alreadyDone = false

        init(item: DownloadItem, host: String, resume: Bool, validator: String?) {
            self.item = item
            self.host = host
            self.resume = resume
            self.validator = validator
        }

        var figures: DownloadFigures { DownloadFigures(receivedBytes: received, totalBytes: total, bytesPerSecond: rate) }

        func status(_ id: DownloadID) -> Status {
            Status(id: id, group: item.group, phase: phase, figures: figures)
        }

        func record(_ state: DownloadRecord.State) -> DownloadRecord {
            DownloadRecord(
                destination: item.destination, url: item.url, group: item.group, state: state,
                validator: validator, expectedSHA256: item.expectedSHA256, totalBytes: total)
        }
    }

    fileprivate struct State {
        var transfers: [DownloadID: Transfer] = [:]
        /// Transfers waiting for a slot, oldest first; entries no longer queued are skipped.
        var order: [DownloadID] = []
        var head = 0
        var running = 0
        var perHost: [String: Int] = [:]
        var counts: [Phase: Int] = [:]
        var alreadyDone = 0
        var transferred: Int64 = 0
        var receivedSum: Int64 = 0
        var totalSum: Int64 = 0
        var rateSum: Double = 0
        var waiters: [CheckedContinuation<DownloadSummary, Never>] = []

        var aggregate: DownloadFigures {
            DownloadFigures(receivedBytes: receivedSum, totalBytes: totalSum > 0 ? totalSum : nil, bytesPerSecond: rateSum)
        }

        var isSettled: Bool { running == 0 && (counts[.queued] ?? 0) == 0 }

        var summary: DownloadSummary {
            var summary = DownloadSummary()
            summary.alreadyDone = alreadyDone
            summary.completed = (counts[.completed] ?? 0) - alreadyDone
            summary.failed = counts[.failed] ?? 0
            summary.paused = counts[.paused] ?? 0
            summary.cancelled = counts[.cancelled] ?? 0
            summary.transferredBytes = transferred
            return summary
        }

        mutating func move(_ id: DownloadID, to phase: Phase) {
            guard let old = transfers[id]?.phase, old != phase else { return }
            if old == .completed, transfers[id]?.alreadyDone == true {
                alreadyDone -= 1
                transfers[id]?.alreadyDone = false
            }
            counts[old, default: 0] -= 1
            counts[phase, default: 0] += 1
            transfers[id]?.phase = phase
        }

        mutating func settleIfIdle() {
            guard isSettled, !waiters.isEmpty else { return }
            let summary = self.summary
            for waiter in waiters { waiter.resume(returning: summary) }
            waiters = []
        }

        /// Back in the queue from byte 0, under no validator.
        mutating func requeueFresh(
            _ id: DownloadID, writer: JournalWriter?, events: AsyncStream<DownloadEvent>.Continuation
        ) {
            guard var transfer = transfers[id] else { return }
            receivedSum -= transfer.received
            if let total = transfer.total { totalSum -= total }
            transfer.received = 0
            transfer.total = nil
            transfer.resume = false
            transfer.validator = nil
            transfers[id] = transfer
            move(id, to: .queued)
            order.append(id)
            writer?.enqueue(transfer.record(.queued))
            events.yield(.queued(id))
        }

        /// Applies a caller's operation; returns the task to cancel when the transfer is running.
        mutating func change(
            _ id: DownloadID, _ operation: Operation, writer: JournalWriter?,
            events: AsyncStream<DownloadEvent>.Continuation
        ) -> Task<Void, Never>? {
            guard let transfer = transfers[id] else { return nil }
            switch (operation, transfer.phase) {
            case (.pause, .running), (.cancel, .running), (.restart, .running):
                // The task's end carries the operation out (finished(_:generation:_:)).
                transfers[id]?.intent = operation
                return transfer.task
            case (.pause, .queued):
                move(id, to: .paused)
                writer?.enqueue(transfer.record(.paused))
                events.yield(.paused(id, bytes: transfer.received))
            case (.resume, .paused), (.resume, .failed):
                transfers[id]?.resume = true
                move(id, to: .queued)
                order.append(id)
                writer?.enqueue(transfer.record(.queued))
                events.yield(.queued(id))
            case (.cancel, .queued), (.cancel, .paused), (.cancel, .failed):
                unlink(id.path + ".part")
                move(id, to: .cancelled)
                writer?.enqueue(transfer.record(.cancelled))
                events.yield(.cancelled(id))
            case (.restart, _):
                unlink(id.path + ".part")
                requeueFresh(id, writer: writer, events: events)
            default:
                break
            }
            return nil
        }

        /// Marks the queued transfers that fit the limits as running and returns them.
        mutating func pickStarts(limits: Configuration) -> [(DownloadID, Int)] {
            var picked: [(DownloadID, Int)] = []
            var index = head
            while running < limits.maximumConcurrentTransfers, index < order.count {
                let id = order[index]
                guard let transfer = transfers[id], transfer.phase == .queued else {
                    if index == head { head += 1 }
                    index += 1
                    continue
                }
                if perHost[transfer.host, default: 0] >= limits.maximumTransfersPerHost {
                    index += 1
                    continue
                }
                move(id, to: .running)
                transfers[id]?.generation += 1
                running += 1
                perHost[transfer.host, default: 0] += 1
                picked.append((id, transfers[id]?.generation ?? 0))
                if index == head { head += 1 }
                index += 1
            }
            if head > 4096, head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
            return picked
        }
    }
}

/// Writes journal records in order, off the caller's thread (progress arrives on the transport's),
/// several at a time in one commit.
final class JournalWriter: Sendable {
    private struct State {
        var pending: [DownloadRecord] = []
        var draining = false
        var idle: [CheckedContinuation<Void, Never>] = []
        var error: AttacheError?
    }

    private let journal: any DownloadJournaling
    private let state = LockedValue(State())

    init(_ journal: any DownloadJournaling) { self.journal = journal }

    func enqueue(_ record: DownloadRecord) {
        let start = state.withLock { state -> Bool in
            state.pending.append(record)
            if state.draining { return false }
            state.draining = true
            return true
        }
        if start { Task { await self.drain() } }
    }

    /// Waits until every record enqueued so far is committed; throws the first failure.
    func flush() async throws {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                if state.draining { state.idle.append(waiter) } else { waiter.resume() }
            }
        }
        if let error = state.withLock({ $0.error }) { throw error }
    }

    private func drain() async {
        let journal = self.journal
        while true {
            let batch = state.withLock { state -> [DownloadRecord] in
                defer { state.pending = [] }
                return state.pending
            }
            if batch.isEmpty {
                let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
                    guard state.pending.isEmpty else { return nil }
                    state.draining = false
                    defer { state.idle = [] }
                    return state.idle
                }
                guard let waiters else { continue }
                for waiter in waiters { waiter.resume() }
                return
            }
            do {
                try await BlockingPool.shared.run { try journal.save(batch) }
            } catch {
                let failure = error as? AttacheError
                    ?? AttacheError(.journal, stage: .download, "cannot write the download journal: \(error)")
                state.withLock { if $0.error == nil { $0.error = failure } }
            }
        }
    }
}
