import Attache
import Foundation
import HTTPTypes
import Hummingbird

/// `GET|HEAD /files/{id}`: the stored bytes, streamed from disk, with single byte ranges.
struct FileController: Sendable {
    let store: UploadStore
    private let fileIO = FileIO()

    init(store: UploadStore) { self.store = store }

    func serve(_ request: Request, context: ServerRequestContext, includeBody: Bool) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        let store = self.store
        let path = store.filesDirectory + "/" + id
        let found: (part: UploadReceipt.Part, size: Int64)? = try await BlockingPool.shared.run {
            guard let data = store.receiptData(fileId: id),
                let receipt = try? JSONDecoder().decode(UploadReceipt.self, from: data),
                let part = receipt.data.parts.first(where: { $0.fileId == id }),
                let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let size = (attributes[.size] as? NSNumber)?.int64Value
            else { return nil }
            return (part, size)
        }
        guard let (part, size) = found else { return errorResponse(.notFound, "no such file") }

        var headers: HTTPFields = [
            .contentType: part.contentType, .acceptRanges: "bytes", .eTag: "\"\(part.sha256)\"",
        ]
        guard size > 0 else {
            // An empty file has no byte to range over: any Range is unsatisfiable, no Range gets 200.
            if request.headers[.range] != nil {
                headers[.contentRange] = "bytes */0"
                return errorResponse(.rangeNotSatisfiable, "range not satisfiable", headers: headers)
            }
            headers[.contentLength] = "0"
            return Response(status: .ok, headers: headers, body: .init())
        }
        var status = HTTPResponse.Status.ok
        var range: ClosedRange<Int64> = 0...(size - 1)
        switch ByteRange.parse(request.headers[.range], size: size) {
        case .whole:
            break
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(size)"
            return errorResponse(.rangeNotSatisfiable, "range not satisfiable", headers: headers)
        case .partial(let requested):
            status = .partialContent
            range = requested
            headers[.contentRange] = "bytes \(requested.lowerBound)-\(requested.upperBound)/\(size)"
        }
        let length = range.upperBound - range.lowerBound + 1
        headers[.contentLength] = "\(length)"
        guard includeBody, length > 0 else { return Response(status: status, headers: headers, body: .init()) }
        let body = try await fileIO.loadFile(
            path: path, range: Int(range.lowerBound)...Int(range.upperBound), context: context)
        return Response(status: status, headers: headers, body: body)
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
