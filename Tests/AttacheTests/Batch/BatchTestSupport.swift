import Foundation
@testable import Attache
@testable import AttacheBatch
@testable import AttacheCore

/// A batch over `url` with one attempt per file and short timeouts.
func makeBatch(url: String, journal: String, concurrency: Int = 2, configure: (inout BatchConfiguration) -> Void = { _ in })
    throws -> BatchUploader
{
    var pipeline = PipelineConfiguration(url: url)
    pipeline.connection.retry = .never
    pipeline.connection.connectTimeout = .seconds(2)
    var configuration = try BatchConfiguration(pipeline: pipeline, journalPath: journal)
    configuration.concurrency = concurrency
    configure(&configuration)
    return BatchUploader(configuration: configuration)
}

/// Collects every event of a run.
func collect(_ run: BatchRun) async throws -> [BatchEvent] {
    var events: [BatchEvent] = []
    for try await event in run { events.append(event) }
    return events
}

extension BatchEvent {
    /// The file's path for per-file events.
    var path: String? {
        switch self {
        case .discovered(let f), .skipped(let f, _), .wouldSend(let f, _), .started(let f, _, _),
            .progress(let f, _), .retried(let f, _), .succeeded(let f, _), .failed(let f, _), .reuseRefused(let f, _):
            return f.path
        case .discoveryFinished, .finished:
            return nil
        }
    }

    var summary: BatchSummary? {
        if case .finished(let summary) = self { return summary }
        return nil
    }

    /// True for the events that end a file: skipped, wouldSend, succeeded, failed.
    var isTerminal: Bool {
        switch self {
        case .skipped, .wouldSend, .succeeded, .failed: return true
        default: return false
        }
    }
}
