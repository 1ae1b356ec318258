import Attache
import AttacheCore
import Foundation

/// Sends many files through an ``Attache/AttachmentPipeline`` with bounded concurrency, recording every step in
/// an `UploadJournal` so that a run killed at any point resumes where it stopped and every file reaches
/// the server exactly once.
///
/// For each file the batch reads its identity (size, modification time, SHA-256), asks the journal what
/// to do, commits the idempotency key as `inFlight` *before* the first byte is sent, sends the file with
/// that key, and commits `done` with the receipt or `failed` with the error. The server deduplicates by
/// the key, so a file whose upload reached the server just before a crash is answered with its first
/// receipt on the next run instead of being stored twice.
///
/// The walk is lazy: files are discovered a page at a time, at most 10 000 ahead of the uploads. Cancel
/// the task that iterates the run (or call ``BatchRun/cancel()``) to stop: no new file starts, the ones
/// in flight are cancelled and go back to `pending` in the journal with their keys, and a `finished`
/// event closes the run.
///
/// ```swift
/// let pipeline = try AttachmentPipeline(configuration: PipelineConfiguration(url: "http://127.0.0.1:8080/upload"))
/// let batch = BatchUploader(configuration: BatchConfiguration(pipeline: pipeline, journalPath: "photos.journal"))
/// for try await event in batch.run(["Photos/"]) {
///     switch event {
///     case .succeeded(let file, let receipt): print(file.path, receipt.fileId ?? "-")
///     case .failed(let file, let error): print(file.path, error.message)
///     case .finished(let summary): print("\(summary.succeeded) sent, \(summary.failed) failed")
///     default: break
///     }
/// }
/// ```
public struct BatchUploader: Sendable {
    /// The configuration in use.
    public let configuration: BatchConfiguration

    /// Creates a batch uploader.
    public init(configuration: BatchConfiguration) {
        self.configuration = configuration
    }

    /// Starts sending the files under `paths` (files and folders) and returns the run's events.
    ///
    /// The work starts at once and runs until every file is handled, the run is cancelled, or the
    /// consumer stops iterating (which cancels it). At most 512 events wait for the consumer: a consumer
    /// that reads slowly slows the batch down rather than letting events pile up (progress events are
    /// dropped instead of waiting, and limited to about ten per second per file).
    ///
    /// The sequence throws ``AttacheCore/AttacheError`` `.journal` when the journal cannot be opened or written: a
    /// batch that cannot record what it sends stops rather than risk sending twice. Failures of single
    /// files are `failed` events, never thrown.
    public func run(_ paths: [String]) -> BatchRun {
        let control = BatchControl()
        let (stream, continuation) = AsyncThrowingStream<BatchEvent, any Error>.makeStream()
        let buffer = BatchEventBuffer(limit: configuration.eventBufferLimit, continuation: continuation)
        let driver = BatchDriver(configuration: configuration, control: control, events: buffer)
        let task = Task { await driver.tracedRun(paths) }
        control.setDriver(task)
        continuation.onTermination = { _ in task.cancel() }
        return BatchRun(stream: stream, buffer: buffer, control: control)
    }
}

/// One run: the walk, the slots, the journal steps of every file.
struct BatchDriver: Sendable {
    let configuration: BatchConfiguration
    let control: BatchControl
    let events: BatchEventBuffer
    /// The turns of the copies of one content, with ``BatchConfiguration/contentReuse``.
    let contentGate: ContentGate?
    /// What the content index keys hold besides the SHA-256: the pipeline's settings and the declared kind.
    let settingsFingerprint: String

    init(configuration: BatchConfiguration, control: BatchControl, events: BatchEventBuffer) {
        self.configuration = configuration
        self.control = control
        self.events = events
        contentGate = configuration.contentReuse.reusesStoredUploads ? ContentGate() : nil
        // Every run indexes what it sends, so that a later run with reuse on finds it.
        settingsFingerprint =
            configuration.pipeline.configuration.settingsFingerprint
            + (configuration.declaredKind.map { "+" + $0.rawValue } ?? "")
    }

    var pool: BlockingPool { configuration.pool }

    /// What became of one file, for the summary.
    enum Outcome: Sendable {
        case succeeded(UploadReceipt, resumed: Bool)
        case skipped(BatchSkipReason)
        case failed(BatchFile, AttacheError)
        case wouldSend
        /// Cancelled before anything was recorded or sent.
        case notStarted
        /// The journal failed: the run must stop.
        case fatal(AttacheError)
    }

    /// `run` inside the batch run's span, when tracing is on. The consumer hears the end only after the
    /// span has ended, so that a process that exits (and flushes its exporters) when the events end
    /// never loses the run's span.
    func tracedRun(_ paths: [String]) async {
        let telemetry = configuration.pipeline.telemetry
        let ending = telemetry.tracer == nil
            ? await run(paths) : await telemetry.withSpan("attache.batch") { _ in await run(paths) }
        switch ending {
        case .finished(let summary):
            await events.send(.finished(summary))
            events.finish()
        case .failed(let error):
            events.finish(throwing: error)
        }
    }

    /// How a run ended: its summary, or the journal error that stopped it.
    enum Ending: Sendable {
        case finished(BatchSummary)
        case failed(any Error)
    }

    func run(_ paths: [String]) async -> Ending {
        let clock = ContinuousClock()
        let start = clock.now
        let opened: (UploadJournal?, Int64, JournalLock?)
        do {
            opened = try await openJournal()
        } catch {
            return .failed(error)
        }
        let (journal, runID, lock) = opened

        let journalPath = UploadJournal.absolute(configuration.journalPath)
        let walker = FileWalker(
            roots: paths, followSymlinks: configuration.followSymlinks,
            excluding: [
                journalPath, journalPath + "-wal", journalPath + "-shm", journalPath + "-journal", journalPath + ".lock",
            ], filter: configuration.filter)
        var summary = BatchSummary()
        if let journal, !configuration.dryRun {
            let filter = configuration.filter.description
            if let previous = try? await pool.run({ try journal.previousFilter(before: runID) }), previous != filter {
                summary.previousFilter = previous
            }
        }
        var fatal: AttacheError?

        await withTaskGroup(of: Outcome.self) { group in
            var queue: [BatchFile] = []
            var head = 0
            var nextID = 1
            var walkDone = false
            var discoveredBytes: Int64 = 0
            var running = 0
            let concurrency = max(1, configuration.concurrency)
            let lookahead = max(concurrency, configuration.discoveryLookahead)

            while true {
                let stopping = Task.isCancelled || fatal != nil
                if !stopping, !walkDone, queue.count - head < lookahead {
                    let items = (try? await pool.run { walker.next(limit: 256) }) ?? []
                    if items.isEmpty {
                        walkDone = true
                        await events.send(.discoveryFinished(files: summary.discovered, bytes: discoveredBytes))
                    }
                    for item in items {
                        switch item {
                        case .file(let path, let byteCount):
                            let file = BatchFile(id: BatchFileID(nextID), path: path, byteCount: byteCount)
                            nextID += 1
                            summary.discovered += 1
                            discoveredBytes += byteCount
                            await events.send(.discovered(file))
                            queue.append(file)
                        case .skipped(let path, let reason):
                            let file = BatchFile(id: BatchFileID(nextID), path: path, byteCount: 0)
                            nextID += 1
                            if let journal, !configuration.dryRun {
                                do {
                                    try await pool.run { try journal.markSkipped(path: path, reason: reason, runID: runID) }
                                } catch {
                                    fatal = error as? AttacheError
                                }
                            }
                            summary.skipped += 1
                            await events.send(.skipped(file, .notSent(reason)))
                        case .filtered(_, let reason):
                            summary.filtered[reason.rawValue, default: 0] += 1
                        case .failed(let path, let code, let message):
                            let file = BatchFile(id: BatchFileID(nextID), path: path, byteCount: 0)
                            nextID += 1
                            let error = AttacheError(code, stage: .read, message, file: path)
                            if let journal, !configuration.dryRun {
                                do {
                                    try await pool.run { try journal.markFailed(path: path, error: error, runID: runID) }
                                } catch {
                                    fatal = error as? AttacheError
                                }
                            }
                            record(.failed(file, error), in: &summary)
                            await events.send(.failed(file, error))
                        }
                    }
                    if head > 1024, head * 2 > queue.count {
                        queue.removeFirst(head)
                        head = 0
                    }
                }
                while !stopping, running < concurrency, head < queue.count {
                    let file = queue[head]
                    head += 1
                    running += 1
                    group.addTask { await process(file, journal: journal, runID: runID) }
                }
                if running == 0, stopping || (walkDone && head == queue.count) {
                    break
                }
                let mustWait = stopping || running == concurrency || walkDone || queue.count - head >= lookahead
                if mustWait, let outcome = await group.next() {
                    running -= 1
                    if case .fatal(let error) = outcome {
                        if fatal == nil { fatal = error }
                        group.cancelAll()
                    } else {
                        record(outcome, in: &summary)
                    }
                }
            }
        }

        summary.seconds = (clock.now - start).seconds
        summary.cancelled = Task.isCancelled
        if let journal, !configuration.dryRun {
            let outcome = fatal != nil ? "journal-error" : summary.cancelled ? "cancelled" : "finished"
            do {
                try await pool.run { try journal.finishRun(runID, outcome: outcome) }
            } catch {
                if fatal == nil { fatal = error as? AttacheError }
            }
        }
        // Released before the consumer hears the end, so that it can start the next run at once.
        lock?.unlock()
        if let fatal { return .failed(fatal) }
        return .finished(summary)
    }

    func openJournal() async throws -> (UploadJournal?, Int64, JournalLock?) {
        let path = configuration.journalPath
        if configuration.dryRun {
            guard FileManager.default.fileExists(atPath: path) else { return (nil, 0, nil) }
            return (try await pool.run { try UploadJournal(path: path, readOnly: true) }, 0, nil)
        }
        let durable = configuration.durableJournal
        let (journal, lock) = try await pool.run {
            // The lock comes first: a second run must not even migrate or write the database.
            let lock = try JournalLock(journalPath: path)
            return (try UploadJournal(path: path, durable: durable), lock)
        }
        let filter = configuration.filter.description
        let looksUpContent = configuration.contentReuse.reusesStoredUploads
        let runID = try await pool.run { try journal.beginRun(filter: filter, looksUpContent: looksUpContent) }
        return (journal, runID, lock)
    }

    func record(_ outcome: Outcome, in summary: inout BatchSummary) {
        switch outcome {
        case .succeeded(let receipt, let resumed):
            summary.succeeded += 1
            if resumed { summary.resumed += 1 }
            if receipt.replayed { summary.replayed += 1 }
            if receipt.dedup != nil {
                summary.reused += 1
            } else {
                summary.originalBytes += receipt.originalByteCount
                summary.sentBytes += receipt.sentByteCount
            }
        case .skipped(.alreadyDone):
            summary.alreadyDone += 1
        case .skipped(let reason):
            summary.skipped += 1
            if case .previouslyFailed = reason { summary.previouslyFailed += 1 }
        case .failed(let file, let error):
            summary.failed += 1
            if error.code == .cancelled { summary.interrupted += 1 }
            if summary.failures.count < 100 {
                summary.failures.append(
                    .init(path: file.path, code: error.code.rawValue, stage: error.stage.rawValue, message: error.message))
            }
        case .wouldSend:
            summary.wouldSend += 1
        case .notStarted, .fatal:
            break
        }
    }

    /// What the pool job of one file found: its identity and the journal's decision, or why it could
    /// not be read.
    enum Step: Sendable {
        case unreadable(any Error)
        case decided(FileIdentity, UploadJournal.Decision, Detection?, ScannedAhead?)
    }

    /// The file's size, modification time and SHA-256.
    static func identify(_ file: BatchFile) throws -> FileIdentity {
        let source = try FileSource(path: file.path)
        let sha256 = try ContentDigest.sha256Hex(of: source)
        return FileIdentity(byteCount: source.byteCount, modificationTime: source.modificationTime, sha256: sha256)
    }

    /// The journal's decision for a file (on the pool): claimed for sending (and then detected, and
    /// scanned when Transform passes it through), or what else to do with it.
    func decide(
        _ file: BatchFile, identity: FileIdentity, journal: UploadJournal?, runID: Int64, contentKey: String?
    ) throws -> Step {
        if configuration.dryRun {
            return .decided(
                identity,
                try journal?.decide(path: file.path, identity: identity, retryFailed: configuration.retryFailed)
                    ?? .send(idempotencyKey: "", material: nil, resumed: false), nil, nil)
        }
        guard let journal else { throw AttacheError(.internalError, stage: .batch, "no journal") }
        let decision = try journal.claim(
            path: file.path, identity: identity, retryFailed: configuration.retryFailed, runID: runID,
            scheme: configuration.pipeline.configuration.seal.scheme, contentKey: contentKey,
            reuseStored: contentGate != nil)
        // Detect in this job too, for a file that will be sent: one hand-off fewer. A detection that
        // fails is left to the pipeline, which runs it again and reports it as it always has.
        guard case .send = decision else { return .decided(identity, decision, nil, nil) }
        let detection = try? configuration.pipeline.detect(fileAt: file.path, declaredKind: configuration.declaredKind)
        // And scan here a file that Transform will pass through: the scan needs no other hand-off,
        // and content seen before in this run is known by its SHA-256.
        let scanned = detection.flatMap {
            configuration.pipeline.scanAhead(fileAt: file.path, detection: $0, sha256: identity.sha256)
        }
        return .decided(identity, decision, detection, scanned)
    }

    /// One file: identity, journal decision, send, journal result. With content reuse, the copies of one
    /// content take turns from the decision to the journal's result, so that the first is sent and the
    /// others find its receipt.
    func process(_ file: BatchFile, journal: UploadJournal?, runID: Int64) async -> Outcome {
        if Task.isCancelled { return .notStarted }
        guard let gate = contentGate, !configuration.dryRun else {
            // The file's identity and the journal's decision in one job on the pool: one hand-off per file
            // instead of two, which a batch of small files feels.
            let step: Step
            do {
                step = try await pool.run { () throws -> Step in
                    let identity: FileIdentity
                    do { identity = try Self.identify(file) } catch { return .unreadable(error) }
                    return try decide(
                        file, identity: identity, journal: journal, runID: runID, contentKey: contentKey(identity))
                }
            } catch {
                return .fatal(Self.attacheError(error, file: file.path))
            }
            return await process(file, step: step, journal: journal, runID: runID, contentKey: nil)
        }
        let identified: Result<FileIdentity, any Error>
        do {
            identified = try await pool.run { Result { try Self.identify(file) } }
        } catch {
            return .fatal(Self.attacheError(error, file: file.path))
        }
        guard case .success(let identity) = identified else {
            if case .failure(let error) = identified {
                return await process(file, step: .unreadable(error), journal: journal, runID: runID, contentKey: nil)
            }
            return .notStarted
        }
        let key = contentKey(identity)
        return await gate.turns.withTurn(key) {
            if Task.isCancelled { return .notStarted }
            do {
                let step = try await pool.run {
                    try decide(file, identity: identity, journal: journal, runID: runID, contentKey: key)
                }
                return await process(file, step: step, journal: journal, runID: runID, contentKey: key)
            } catch {
                return .fatal(Self.attacheError(error, file: file.path))
            }
        }
    }

    /// The rest of one file, from the journal's decision.
    func process(
        _ file: BatchFile, step: Step, journal: UploadJournal?, runID: Int64, contentKey: String?
    ) async -> Outcome {
        let identity: FileIdentity
        let decision: UploadJournal.Decision
        let detection: Detection?
        let scanned: ScannedAhead?
        switch step {
        case .unreadable(let error):
            let failure = Self.attacheError(error, file: file.path)
            if let journal, !configuration.dryRun {
                do {
                    try await pool.run { try journal.markFailed(path: file.path, error: failure, runID: runID) }
                } catch {
                    return .fatal(Self.attacheError(error, file: file.path))
                }
            }
            await events.send(.failed(file, failure))
            return .failed(file, failure)
        case .decided(let decidedIdentity, let decided, let detected, let scannedAhead):
            identity = decidedIdentity
            decision = decided
            detection = detected
            scanned = scannedAhead
        }

        let key: String
        let material: SealMaterial?
        let resumed: Bool
        switch decision {
        case .reuse(let sourcePath, let stored):
            guard let journal, let contentKey else {
                return .fatal(AttacheError(.internalError, stage: .batch, "no journal"))
            }
            return await reuse(
                file, identity: identity, stored: stored, from: sourcePath, contentKey: contentKey,
                journal: journal, runID: runID)
        case .alreadyDone:
            await events.send(.skipped(file, .alreadyDone))
            return .skipped(.alreadyDone)
        case .previouslyFailed(let code, let message):
            let reason = BatchSkipReason.previouslyFailed(code: code, message: message)
            await events.send(.skipped(file, reason))
            return .skipped(reason)
        case .duplicate:
            await events.send(.skipped(file, .duplicate))
            return .skipped(.duplicate)
        case .send(let idempotencyKey, let sealMaterial, let wasResumed):
            if configuration.dryRun {
                await events.send(.wouldSend(file, resumed: wasResumed))
                return .wouldSend
            }
            key = idempotencyKey
            material = sealMaterial
            resumed = wasResumed
        }
        guard let journal else { return .fatal(AttacheError(.internalError, stage: .batch, "no journal")) }

        await events.send(.started(file, idempotencyKey: key, resumed: resumed))
        // The journal committed the key and seal material before this point: every attempt, in this
        // process or the next, seals to the same bytes, so a replayed receipt's key opens what the
        // server holds.
        let attachment = Attachment(
            path: file.path, declaredKind: configuration.declaredKind, idempotencyKey: key, sealMaterial: material)
        var options = SendOptions()
        options.journal = EntryJournal(journal: journal, pool: pool, path: file.path, continuesEarlierSend: resumed)
        options.detection = detection
        options.scannedAhead = scanned
        let pipeline = configuration.pipeline
        let throttle = ProgressThrottle()
        let events = self.events
        let send = Task {
            // Each file is a trace of its own, linked to the batch run's span.
            try await pipeline.telemetry.startingTraces {
                try await pipeline.send(attachment, options: options) { update in
                    guard case .upload(let progress) = update else { return }
                    let (emit, retry) = throttle.filter(progress)
                    if let retry { events.force(.retried(file, attempt: retry)) }
                    if emit { events.offer(.progress(file, progress)) }
                }
            }
        }
        control.register(file.id, send)
        let result = await withTaskCancellationHandler {
            await send.result
        } onCancel: {
            send.cancel()
        }
        control.unregister(file.id)

        do {
            switch result {
            case .success(let receipt):
                try await pool.run { try journal.markDone(path: file.path, receipt: receipt) }
                await events.send(.succeeded(file, receipt))
                return .succeeded(receipt, resumed: resumed)
            case .failure(let error):
                let failure = Self.attacheError(error, file: file.path)
                if failure.code == .cancelled {
                    // Unknown whether the server got it: keep the key so the next run resumes it.
                    try await pool.run { try journal.markPending(path: file.path) }
                } else {
                    try await pool.run {
                        try journal.markFailed(path: file.path, error: failure, runID: runID, identity: identity)
                    }
                }
                await events.send(.failed(file, failure))
                return .failed(file, failure)
            }
        } catch {
            return .fatal(Self.attacheError(error, file: file.path))
        }
    }
}
