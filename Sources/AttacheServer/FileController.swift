import Attache
import Foundation
import HTTPTypes
import Hummingbird
internal import NIOCore
import Glibc

/// `GET|HEAD /files/{id}`: the stored bytes, streamed from disk, with single byte ranges, `ETag` (the
/// SHA-256), `Last-Modified` and `If-Range`; the faults of a ``FileFaultPlan``; and, when configured,
/// one JSON line per request in a log (`id`, `range`, `ifRange`, `status`, `bytes` sent) that tests read.
struct FileController: Sendable {
    let store: UploadStore
    let faults: FileFaultPlan
    let log: FileRequestLog?
    private let fileIO = FileIO()
    /// Requests counted for the fault plan, and the SHA-256 of files a `change` fault rewrote.
    private let state = FileFaultState()

    init(store: UploadStore, faults: FileFaultPlan = .none, logPath: String? = nil) {
        self.store = store
        self.faults = faults
        self.log = logPath.map(FileRequestLog.init(path:))
    }

    func serve(_ request: Request, context: ServerRequestContext, includeBody: Bool) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        let store = self.store
        let path = store.filesDirectory + "/" + id
        let count = state.withLock { state -> Int in
            state.requests += 1
            return state.requests
        }
        let active = faults.faults(forRequest: count)
        if active.contains(.change) {
            let changed = try? await BlockingPool.shared.run { try Self.complement(path) }
            if let changed { state.withLock { $0.changed[id] = changed } }
        }
        let found: (part: UploadReceipt.Part, size: Int64, modified: Date)? = try await BlockingPool.shared.run {
            guard let data = store.receiptData(fileId: id),
                let receipt = try? JSONDecoder().decode(UploadReceipt.self, from: data),
                let part = receipt.data.parts.first(where: { $0.fileId == id }),
                let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let size = (attributes[.size] as? NSNumber)?.int64Value
            else { return nil }
            return (part, size, (attributes[.modificationDate] as? Date) ?? Date())
        }
        let rangeHeader = request.headers[.range]
        let ifRange = request.headers[.ifRange]
        guard let (part, size, modified) = found else {
            log?.record(id: id, range: rangeHeader, ifRange: ifRange, status: 404, bytes: 0)
            return errorResponse(.notFound, "no such file")
        }
        let sha256 = state.withLock { $0.changed[id] } ?? part.sha256
        let etag = "\"\(sha256)\""
        let lastModified = Self.httpDate(modified)
        var headers: HTTPFields = [
            .contentType: part.contentType, .acceptRanges: "bytes", .eTag: etag, .lastModified: lastModified,
        ]
        // If-Range (RFC 9110 §13.1.5): the range applies only when the validator still matches;
        // otherwise the client gets the whole current file.
        var range = rangeHeader
        if let ifRange, ifRange != etag, ifRange != lastModified { range = nil }
        if active.contains(.unsatisfiable) || (size == 0 && range != nil) {
            headers[.contentRange] = "bytes */\(size)"
            log?.record(id: id, range: rangeHeader, ifRange: ifRange, status: 416, bytes: 0)
            return errorResponse(.rangeNotSatisfiable, "range not satisfiable", headers: headers)
        }
        guard size > 0 else {
            headers[.contentLength] = "0"
            log?.record(id: id, range: rangeHeader, ifRange: ifRange, status: 200, bytes: 0)
            return Response(status: .ok, headers: headers, body: .init())
        }
        var status = HTTPResponse.Status.ok
        var bytes: ClosedRange<Int64> = 0...(size - 1)
        switch ByteRange.parse(range, size: size) {
        case .whole:
            break
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(size)"
            log?.record(id: id, range: rangeHeader, ifRange: ifRange, status: 416, bytes: 0)
            return errorResponse(.rangeNotSatisfiable, "range not satisfiable", headers: headers)
        case .partial(let requested):
            status = .partialContent
            bytes = requested
            headers[.contentRange] = "bytes \(requested.lowerBound)-\(requested.upperBound)/\(size)"
        }
        let length = bytes.upperBound - bytes.lowerBound + 1
        headers[.contentLength] = "\(length)"
        guard includeBody, length > 0 else {
            log?.record(id: id, range: rangeHeader, ifRange: ifRange, status: status.code, bytes: 0)
            return Response(status: status, headers: headers, body: .init())
        }
        var cutAfter: Int64?
        var rate: Int?
        for fault in active {
            if case .cut(let after) = fault { cutAfter = Int64(after) }
            if case .throttle(let bytesPerSecond) = fault { rate = bytesPerSecond }
        }
        guard log != nil || cutAfter != nil || rate != nil else {
            let body = try await fileIO.loadFile(
                path: path, range: Int(bytes.lowerBound)...Int(bytes.upperBound), context: context)
            return Response(status: status, headers: headers, body: body)
        }
        let log = self.log
        let channel = context.channel
        log?.record(id: id, range: rangeHeader, ifRange: ifRange, status: status.code, bytes: nil)
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: Int(length)) { [bytes, rate, cutAfter] writer in
                var sent: Int64 = 0
                defer { log?.recordSent(id: id, bytes: sent) }
                let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
                defer { try? handle.close() }
                try handle.seek(toOffset: UInt64(bytes.lowerBound))
                let chunk = rate.map { max(1024, min(65536, $0 / 20)) } ?? 262_144
                while sent < length {
                    var want = Int(min(Int64(chunk), length - sent))
                    if let cutAfter { want = Int(min(Int64(want), max(0, cutAfter - sent))) }
                    if want == 0 {
                        // A reset, not an orderly close: the client sees the connection fail mid-body.
                        if let provider = channel as? any SocketOptionProvider {
                            try? await provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
                        }
                        try? await channel.close().get()
                        throw FaultInjector.ConnectionAbandoned()
                    }
                    guard let data = try handle.read(upToCount: want), !data.isEmpty else { break }
                    try await writer.write(ByteBuffer(bytes: data))
                    sent += Int64(data.count)
                    if let rate { try await Task.sleep(for: .milliseconds(data.count * 1000 / rate)) }
                }
                try await writer.finish(nil)
            })
    }

    /// Replaces the file's bytes with their complement (atomically) and returns the new SHA-256.
    private static func complement(_ path: String) throws -> String {
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        data.withUnsafeMutableBytes { buffer in
            for index in buffer.indices { buffer[index] ^= 0xFF }
        }
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        return try SHA256Hasher.hex(of: data)
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

/// Requests counted for a ``FileFaultPlan``, and the SHA-256 of files a `change` fault rewrote.
final class FileFaultState: Sendable {
    private let value = LockedValue<(requests: Int, changed: [String: String])>((0, [:]))

    func withLock<T>(_ body: (inout (requests: Int, changed: [String: String])) -> T) -> T {
        value.withLock { body(&$0) }
    }
}

/// A file of JSON lines, appended to under a lock: the request logs tests read.
final class JSONLinesLog: Sendable {
    private let handle: LockedValue<FileHandle?>

    init(path: String) {
        // Appended to, never truncated: a restarted server adds to what an earlier run logged.
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let file = FileHandle(forWritingAtPath: path)
        _ = try? file?.seekToEnd()
        handle = LockedValue(file)
    }

    func append(_ object: [String: Any]) {
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        line.append(0x0A)
        handle.withLock { try? $0?.write(contentsOf: line) }
    }
}

/// The JSON-lines log of `GET|HEAD /files` requests.
final class FileRequestLog: Sendable {
    private let log: JSONLinesLog

    init(path: String) {
        log = JSONLinesLog(path: path)
    }

    /// A request, when it is answered; `bytes` for answers without a body (0).
    func record(id: String, range: String?, ifRange: String?, status: Int, bytes: Int64?) {
        var object: [String: Any] = ["id": id, "status": status]
        if let bytes { object["sent"] = bytes }
        if let range { object["range"] = range }
        if let ifRange { object["ifRange"] = ifRange }
        append(object)
    }

    /// The body bytes one answer sent, when its body ended (completely, cut, or the client went away).
    func recordSent(id: String, bytes: Int64) {
        append(["id": id, "sent": bytes])
    }

    /// Appends one JSON line (also the resumable upload log's writer).
    func append(_ object: [String: Any]) {
        log.append(object)
    }
}

/// The JSON-lines log of `POST /upload` requests that carry an `Idempotency-Key`: one line per decision,
/// `{"key":…,"outcome":"stored"|"replayed"|"in-progress","fileId":…}` (`stored` when the upload was
/// committed as new). Tests count the `stored` lines per key to prove that every key was stored once.
final class UploadRequestLog: Sendable {
    private let log: JSONLinesLog

    init(path: String) {
        log = JSONLinesLog(path: path)
    }

    func record(key: String, outcome: String, fileId: String? = nil) {
        var object: [String: Any] = ["key": key, "outcome": outcome]
        if let fileId { object["fileId"] = fileId }
        log.append(object)
    }
}

/// A `Range` request header, reduced to what the server honours: one byte range.
enum ByteRange: Equatable {
    /// No range, an unparseable one, or several: answer the whole file.
    case whole
    /// One satisfiable range, clamped to the file.
    case partial(ClosedRange<Int64>)
    /// A well-formed range that lies outside the file.
    case unsatisfiable

    /// Interprets `header` for a file of `size` bytes (RFC 9110 §14.1.2).
    static func parse(_ header: String?, size: Int64) -> ByteRange {
        guard let header else { return .whole }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
        let specs = trimmed.dropFirst(6).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard specs.count == 1, let spec = specs.first, let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash]
        let last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            // Suffix range: the last n bytes.
            guard let count = Int64(last) else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .partial(max(0, size - count)...(size - 1))
        }
        guard let start = Int64(first) else { return .whole }
        let end: Int64
        if last.isEmpty {
            end = size - 1
        } else {
            guard let value = Int64(last) else { return .whole }
            guard value >= start else { return .whole }
            end = min(value, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start...end)
    }
}
