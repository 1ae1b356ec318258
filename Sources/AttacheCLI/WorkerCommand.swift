import AttacheMetricsExport
import Synchronization
import AttacheCore
import ArgumentParser
import Attache
import AttacheQueue
import Foundation
import Logging

/// `attache worker --queue URL --url URL`
struct WorkerCommand: AsyncParsableCommand, PipelineCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Take files from the shared PostgreSQL queue and send them, alongside any number of other workers.",
        discussion: """
            Claims --claim-batch files at a time (FOR UPDATE SKIP LOCKED), holds each under a lease of \
            --lease seconds renewed every third of it, sends it through the pipeline with the idempotency \
            key and seal material stored at enqueue time, and commits the receipt under the lease's \
            fencing token. A worker that dies or stalls past its lease loses its files to the others; the \
            server's idempotency keys make the second send a replay, never a second copy. A file that \
            fails retryably goes back to the queue (after --retry-delay, doubled per attempt) until \
            --max-attempts, then is parked as failed (attache queue retry-failed).

            SIGTERM or Ctrl-C: no new files; the ones not started are handed back, the ones in flight \
            finish and are committed, then the worker exits 0. A second signal cancels the files in \
            flight and hands them back too (exit 130).

            Output: one line per file (--json: one JSON object per event) on stdout, a summary on stderr.
            Exit status: 0 stopped or drained, 64 usage, 69 the queue cannot be reached (or was lost \
            for longer than a lease), 130 stopped by a second signal.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var queue: QueueOptions
    @OptionGroup var endpointSelection: EndpointOptions
    @OptionGroup var pipeline: PipelineOptions
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var scanning: ScanOptions
    @OptionGroup(title: "Object storage") var objectStore: ObjectStoreOptions
    @OptionGroup(title: "Observability") var metrics: MetricsOptions

    @Option(help: ArgumentHelp("Files sent at the same time.", valueName: "n"))
    var concurrency = 4

    @Option(help: ArgumentHelp("Files claimed per round trip (default: --concurrency).", valueName: "n"))
    var claimBatch: Int?

    @Option(help: ArgumentHelp("Seconds a claim holds a file without a heartbeat.", valueName: "seconds"))
    var lease: Double = 60

    @Option(help: ArgumentHelp("Claims of one file before it is parked as failed.", valueName: "n"))
    var maxAttempts = 3

    @Option(help: ArgumentHelp("Seconds before a retryably failed file is claimed again (doubled per attempt).", valueName: "seconds"))
    var retryDelay: Double = 5

    @Flag(help: "Exit when no file is pending or claimed, instead of waiting for more.")
    var drain = false

    @Flag(help: "Print one JSON object per event, one per line.")
    var json = false

    @Option(help: ArgumentHelp("This worker's name in the queue (default: host-pid-random).", valueName: "id"))
    var workerId: String?

    @Flag(help: .hidden)
    var stubUploads = false

    func validate() throws {
        try flags.validate()
        guard (1...256).contains(concurrency) else { throw ValidationError("--concurrency must be 1 to 256") }
        if let claimBatch, !(1...1000).contains(claimBatch) { throw ValidationError("--claim-batch must be 1 to 1000") }
        guard lease >= 1, lease <= 86_400 else { throw ValidationError("--lease must be 1 to 86400 seconds") }
        guard maxAttempts >= 1 else { throw ValidationError("--max-attempts must be at least 1") }
        guard retryDelay >= 0 else { throw ValidationError("--retry-delay must be 0 or more") }
    }

    func run() async throws {
        try await metrics.serving { try await runWorker() }
    }

    private func runWorker() async throws {
        let logger = global.bootstrapLogging()
        let sender: any QueueFileSender
        if stubUploads {
            sender = StubQueueSender()
        } else {
            var pipelineConfiguration = try flags.resolvedConfiguration(retry: .batch, scanWait: 600)
            pipelineConfiguration.transformConcurrency = min(pipelineConfiguration.transformConcurrency, concurrency)
            sender = PipelineQueueSender(
                pipeline: try AttachmentPipeline(configuration: pipelineConfiguration, logger: logger),
                declaredKind: pipeline.kind)
        }
        var configuration = QueueWorkerConfiguration()
        if let workerId { configuration.workerID = workerId }
        configuration.concurrency = concurrency
        configuration.claimBatch = claimBatch ?? concurrency
        configuration.lease = .milliseconds(Int64(lease * 1000))
        configuration.maximumAttempts = maxAttempts
        configuration.retryDelay = .milliseconds(Int64(retryDelay * 1000))
        configuration.exitWhenDrained = drain
        configuration.contentReuse = pipeline.dedup.contentReuse
        let json = json
        let workerConfiguration = configuration
        let stoppedHard = Atomic<Bool>(false)

        let summary = try await withQueue(
            queue, logger: logger,
            // With content reuse every send holds a connection (its content's lock) while it waits or sends.
            maximumConnections: 3 + (pipeline.dedup.contentReuse.reusesStoredUploads ? concurrency : 0)) { database in
            let worker = QueueWorker(database: database, sender: sender, configuration: workerConfiguration)
            let task = Task { try await worker.run { event in WorkerOutput.print(event, json: json) } }
            let signals = SignalWatch([SIGTERM, SIGINT]) { _ in
                Console.err("attache: stopping: no new files; finishing the ones in flight (again to cancel them)")
                worker.stop()
            } again: { _ in
                stoppedHard.store(true, ordering: .sequentiallyConsistent)
                Console.err("attache: cancelling the files in flight and handing them back")
                task.cancel()
            }
            defer { signals.stop() }
            return try await task.value
        }
        var line = "\(summary.succeeded) sent (\(formatBytes(summary.bytes))), \(summary.failed) failed"
        if summary.retried > 0 { line += ", \(summary.retried) to retry" }
        if summary.leaseLost > 0 { line += ", \(summary.leaseLost) taken over by other workers" }
        if summary.released > 0 { line += ", \(summary.released) handed back" }
        line += " in \(formatDuration(summary.seconds))"
        if json {
            Console.outJSON(WorkerOutput.SummaryLine(summary: summary))
        } else {
            Console.err(line)
        }
        if stoppedHard.load(ordering: .sequentiallyConsistent) { throw ExitCode(ExitStatus.cancelled) }
    }
}

/// A worker's events as lines.
enum WorkerOutput {
    struct EventLine: Encodable {
        var event: String
        var id: Int64?
        var path: String?
        var attempt: Int?
        var count: Int?
        var code: String?
        var stage: String?
        var message: String?
        var willRetry: Bool?
        var receipt: UploadReceipt?
    }

    struct SummaryLine: Encodable {
        var event = "finished"
        var summary: QueueWorkerSummary
    }

    static func print(_ event: QueueWorkerEvent, json: Bool) {
        switch event {
        case .claimed(let count):
            if json { Console.outJSON(EventLine(event: "claimed", count: count)) }
        case .succeeded(let job, let receipt):
            if json {
                Console.outJSON(EventLine(event: "succeeded", id: job.id, path: job.path, attempt: job.attempt, receipt: receipt))
            } else {
                var text = receipt.dedup == nil ? "sent \(job.path)" : "reused for \(job.path)"
                if let fileId = receipt.fileId { text += " as \(fileId)" }
                if receipt.replayed { text += " (already on the server)" }
                if let dedup = receipt.dedup { text += " (the same bytes as \(dedup.reusedFrom))" }
                Console.out(text)
            }
        case .failed(let job, let error, let willRetry):
            if json {
                Console.outJSON(
                    EventLine(
                        event: "failed", id: job.id, path: job.path, attempt: job.attempt, code: error.code.rawValue,
                        stage: error.stage.rawValue, message: error.message, willRetry: willRetry))
            } else {
                Console.out(
                    "failed \(job.path): \(error.stage): \(error.message) [\(error.code)]"
                        + (willRetry ? " (will retry)" : ""))
            }
        case .leaseLost(let job):
            if json {
                Console.outJSON(EventLine(event: "leaseLost", id: job.id, path: job.path, attempt: job.attempt))
            } else {
                Console.out("taken over \(job.path): another worker holds it now")
            }
        case .released(let count):
            if json { Console.outJSON(EventLine(event: "released", count: count)) }
        }
    }
}
