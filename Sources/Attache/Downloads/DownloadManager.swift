internal import AttacheCore
import FoundationEssentials
import Glibc

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
package final class DownloadManager: Sendable {
    /// Limits and pacing.
    package struct Configuration: Sendable {
        /// Transfers running at the same time.
        package var maximumConcurrentTransfers: Int
        /// Transfers running at the same time against one host (``DownloadManager/limitKey(of:)``).
        package var maximumTransfersPerHost: Int
        /// The shortest time between two progress events of one transfer.
        package var progressInterval: Duration

        /// Creates a configuration.
        package init(
            maximumConcurrentTransfers: Int = 8, maximumTransfersPerHost: Int? = nil,
            progressInterval: Duration = .milliseconds(250)
        ) {
            self.maximumConcurrentTransfers = max(1, maximumConcurrentTransfers)
            self.maximumTransfersPerHost = max(1, maximumTransfersPerHost ?? self.maximumConcurrentTransfers)
            self.progressInterval = progressInterval
        }
    }

    /// Where a transfer stands.
    package enum Phase: String, Sendable, Hashable, Codable, CaseIterable {
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
    package struct Status: Sendable, Hashable {
        /// The transfer.
        package var id: DownloadID
        /// Its group.
        package var group: String
        /// Where it stands.
        package var phase: Phase
        /// Its bytes, rate and time left.
        package var figures: DownloadFigures
    }

    /// The limits it runs with.
    package let configuration: Configuration
    /// Everything that happens, in order. Buffered without limit: consume it (or never iterate it).
    package let events: AsyncStream<DownloadEvent>

    let continuation: AsyncStream<DownloadEvent>.Continuation
    let downloader: Downloader
    let journal: (any DownloadJournaling)?
    let writer: JournalWriter?
    let state = LockedValue(State())

    /// - Parameters:
    ///   - configuration: concurrency limits and progress pacing.
    ///   - connection: timeouts, TLS, retries and headers, as for every transfer.
    ///   - journal: where the state is kept; nil keeps it in memory only.
    ///   - transport: what sends the requests; the shared ``CurlTransport`` when nil.
    package convenience init(
        configuration: Configuration = Configuration(), connection: ConnectionConfiguration = ConnectionConfiguration(),
        journal: (any DownloadJournaling)? = nil, transport: (any HTTPTransport)? = nil
    ) {
        self.init(
            client: AttacheClient(connection: connection, transport: transport), configuration: configuration,
            journal: journal)
    }

    /// Creates the download manager of `client`: its downloads use the client's connection settings,
    /// transport, interceptors and hooks.
    ///
    /// - Parameters:
    ///   - configuration: concurrency limits and progress pacing.
    ///   - journal: where the state is kept; nil keeps it in memory only.
    package init(client: AttacheClient, configuration: Configuration = Configuration(), journal: (any DownloadJournaling)? = nil) {
        self.configuration = configuration
        self.downloader = Downloader(client: client)
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
    package func add(_ item: DownloadItem) throws -> DownloadID {
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
        let host = Self.limitKey(of: item)
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
    package func pause(_ id: DownloadID) { apply(.pause) { candidate, _ in candidate == id } }
    /// Continues a paused or failed transfer from its bytes.
    package func resume(_ id: DownloadID) { apply(.resume) { candidate, _ in candidate == id } }
    /// Stops a transfer for good and removes its partial bytes (a completed file is left alone).
    package func cancel(_ id: DownloadID) { apply(.cancel) { candidate, _ in candidate == id } }
    /// Starts a transfer again from byte 0, whatever its state.
    package func restart(_ id: DownloadID) { apply(.restart) { candidate, _ in candidate == id } }

    /// Pauses every transfer of `group`.
    package func pause(group: String) { apply(.pause) { [group] _, transfer in transfer.item.group == group } }
    /// Resumes every paused or failed transfer of `group`.
    package func resume(group: String) { apply(.resume) { [group] _, transfer in transfer.item.group == group } }
    /// Cancels every unfinished transfer of `group`.
    package func cancel(group: String) { apply(.cancel) { [group] _, transfer in transfer.item.group == group } }
    /// Restarts every transfer of `group` from byte 0.
    package func restart(group: String) { apply(.restart) { [group] _, transfer in transfer.item.group == group } }

    /// Pauses every transfer (what an interrupted command does before it exits).
    package func pauseAll() { apply(.pause) { _, _ in true } }

    // MARK: Observing

    /// The transfer's state now, or nil when the manager does not hold it.
    package func status(_ id: DownloadID) -> Status? {
        state.withLock { state in state.transfers[id].map { $0.status(id) } }
    }

    /// Every transfer's state now, in the order they were added (for the first time).
    package func statuses() -> [Status] {
        state.withLock { state in state.transfers.map { $0.value.status($0.key) } }
    }

    /// Bytes, rate and time left of all transfers together.
    package func aggregate() -> DownloadFigures {
        state.withLock { $0.aggregate }
    }

    /// Waits until no transfer is queued or running (all are completed, failed, paused or cancelled)
    /// and the journal has every change, then says how they ended.
    ///
    /// - Throws: `AttacheError` `.journal` when the journal could not be written (the transfers still
    ///   ran; a later run may fetch some again).
    package func waitUntilSettled() async throws -> DownloadSummary {
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
    package func close() { continuation.finish() }
}

extension DownloadManager {
    /// What the per-host limit counts a transfer against: the server its requests go to, with its port
    /// (two servers on one machine are two hosts). For an `s3://BUCKET/KEY` fetched from an object
    /// store, that is the store's endpoint (the bucket's own host with virtual-hosted addressing) and
    /// the bucket, never the bucket's name alone, which is no host at all.
    static func limitKey(of item: DownloadItem) -> String {
        if let store = item.objectStore, let location = S3Location(item.url),
            let address = try? S3ObjectAddress(
                endpoint: store.endpointURL, bucket: location.bucket, key: "", addressing: store.addressing)
        {
            return address.host + "/" + location.bucket
        }
        guard let parts = URLComponents(string: item.url), let host = parts.host?.lowercased() else { return item.url }
        let scheme = parts.scheme?.lowercased()
        let port = parts.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : 0)
        return host + ":" + String(port)
    }
}
