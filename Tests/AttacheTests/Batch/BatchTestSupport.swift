import Foundation
@testable import Attache
@testable import AttacheBatch
@testable import AttacheCore

/// A fresh temporary folder, removed by `remove()`.
struct ScratchFolder {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("attache-batch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `contents` to `name` (intermediate folders created) and returns the full path.
    @discardableResult
    func write(_ name: String, _ contents: String) throws -> String {
        let full = path + "/" + name
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    func link(_ name: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path + "/" + name, withDestinationPath: target)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A TCP port on 127.0.0.1 that accepts connections into its backlog and never answers, so that an
/// upload to it stays in flight until it is cancelled.
final class SilentListener {
    let port: Int
    private let descriptor: Int32

    init() throws {
        (descriptor, port) = try bindLoopback(listening: 64)
    }

    deinit { close(descriptor) }
}

/// A port on 127.0.0.1 with nothing listening (connections are refused).
func refusedPort() throws -> Int {
    // A port bound and never listened on refuses every connection, and stays ours: a port bound and
    // closed again could be handed to another test's server running in parallel. The descriptor is
    // kept open for the life of the test process on purpose.
    try bindLoopback(listening: nil).port
}

/// A TCP socket bound to a free port of 127.0.0.1, listening when a backlog is given.
func bindLoopback(listening backlog: Int32?) throws -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw POSIXError(.EIO) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
    }
    guard bound, backlog.map({ listen(descriptor, $0) == 0 }) ?? true else {
        close(descriptor)
        throw POSIXError(.EADDRINUSE)
    }
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}

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
            .progress(let f, _), .retried(let f, _), .succeeded(let f, _), .failed(let f, _):
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
