import Foundation
import MultipartKit
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// A part as a parser other than ours saw it.
struct ParsedPart: Equatable, Decodable, Sendable {
    var name: String
    var filename: String?
    var contentType: String?
    var size: Int
    var sha256: String
}

/// Reads a whole source into memory (test bodies are small).
func readAll(_ source: any ByteSource, chunk: Int = 7) throws -> [UInt8] {
    let reader = try source.makeReader()
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: chunk)
    while true {
        let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
        if n == 0 { break }
        out.append(contentsOf: buffer[..<n])
    }
    return out
}

/// Parses `body` with MultipartKit's streaming parser, feeding it in small pieces.
func parseWithMultipartKit(_ body: [UInt8], boundary: String) throws -> [(headers: [String: String], bytes: [UInt8])] {
    let parser = MultipartParser(boundary: boundary)
    var parts: [(headers: [String: String], bytes: [UInt8])] = []
    var headers: [String: String] = [:]
    var bytes: [UInt8] = []
    parser.onHeader = { name, value in headers[name.lowercased()] = value }
    parser.onBody = { buffer in bytes.append(contentsOf: buffer.readableBytesView) }
    parser.onPartComplete = {
        parts.append((headers, bytes))
        headers = [:]
        bytes = []
    }
    var offset = 0
    while offset < body.count {
        let end = min(body.count, offset + 1000)
        try parser.execute(Array(body[offset..<end]))
        offset = end
    }
    return parts
}

/// Parses `body` with Werkzeug's form parser in the system Python, a parser that is neither ours nor
/// MultipartKit's. Returns text fields (repeated names kept in order) and file parts.
func parseWithWerkzeug(_ body: [UInt8], contentType: String) async throws -> (fields: [String: [String]], files: [ParsedPart]) {
    try await onOwnThread { () throws -> (fields: [String: [String]], files: [ParsedPart]) in
        try parseWithWerkzeug(body, contentType: contentType)
    }
}

/// `parseWithWerkzeug`'s work, blocking its thread while python3 runs.
func parseWithWerkzeug(_ body: [UInt8], contentType: String) throws -> (fields: [String: [String]], files: [ParsedPart]) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-wz-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let bodyFile = directory.appendingPathComponent("body")
    try Data(body).write(to: bodyFile)
    let script = """
        import hashlib, io, json, sys
        from werkzeug.formparser import parse_form_data
        body = open(sys.argv[1], 'rb').read()
        environ = {'REQUEST_METHOD': 'POST', 'CONTENT_TYPE': sys.argv[2],
                   'CONTENT_LENGTH': str(len(body)), 'wsgi.input': io.BytesIO(body)}
        stream, form, files = parse_form_data(environ)
        out = {'fields': {k: form.getlist(k) for k in form.keys()}, 'files': []}
        for name, f in files.items(multi=True):
            data = f.read()
            out['files'].append({'name': name, 'filename': f.filename, 'contentType': f.content_type,
                                 'size': len(data), 'sha256': hashlib.sha256(data).hexdigest()})
        print(json.dumps(out))
        """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = ["-c", script, bodyFile.path, contentType]
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitForExit()
    guard process.terminationStatus == 0 else { throw TestFailure("python3/werkzeug failed: \(errorText)") }
    struct Output: Decodable {
        var fields: [String: [String]]
        var files: [ParsedPart]
    }
    let decoded = try JSONDecoder().decode(Output.self, from: data)
    return (decoded.fields, decoded.files)
}
