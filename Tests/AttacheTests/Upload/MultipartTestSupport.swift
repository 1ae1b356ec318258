import Foundation
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

/// Parses `body` with the multipart parser of Python's `email` package (a parser that is not ours),
/// and returns each part's header fields exactly as written (names lowercased) and its bytes.
func parseWithEmail(_ body: [UInt8], boundary: String) async throws -> [(headers: [String: String], bytes: [UInt8])] {
    try await onOwnThread { () throws -> [(headers: [String: String], bytes: [UInt8])] in
        let script = """
            import email.parser, email.policy, json, sys
            body = open(sys.argv[1], 'rb').read()
            head = b'Content-Type: multipart/form-data; boundary="' + sys.argv[2].encode() + b'"\\r\\n\\r\\n'
            message = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(head + body)
            if message.defects:
                sys.exit('defects: %r' % message.defects)
            parts = []
            for part in message.get_payload():
                raw = lambda text: text.encode('ascii', 'surrogateescape').hex()
                parts.append({'headers': {k.lower(): raw(v) for k, v in part.raw_items()},
                              'bytes': (part.get_payload(decode=True) or b'').hex()})
            print(json.dumps(parts))
            """
        struct Part: Decodable {
            var headers: [String: String]
            var bytes: String
        }
        let output = try runPython(script, input: body, arguments: [boundary])
        return try JSONDecoder().decode([Part].self, from: output).map { part in
            (part.headers.mapValues { String(decoding: bytes(fromHex: $0), as: UTF8.self) }, bytes(fromHex: part.bytes))
        }
    }
}

/// The bytes that a string of hex digits spells.
private func bytes(fromHex hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    return stride(from: 0, to: digits.count - 1, by: 2).map {
        UInt8(String(decoding: digits[$0...($0 + 1)], as: UTF8.self), radix: 16)!
    }
}

/// Runs `script` with `python3 -c`, the body in a temporary file as its first argument and `arguments`
/// after it; returns what it printed (a failure, with its standard error, fails the test).
private func runPython(_ script: String, input: [UInt8], arguments: [String]) throws -> Data {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-py-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let bodyFile = directory.appendingPathComponent("body")
    try Data(input).write(to: bodyFile)
    // Debian's interpreter, with Debian's Werkzeug (2.2), whatever python3 comes first on PATH.
    return try run("/usr/bin/python3", ["-c", script, bodyFile.path] + arguments)
}

/// Parses `body` with Werkzeug's form parser in the system Python, a parser that is not ours.
/// Returns text fields (repeated names kept in order) and file parts.
func parseWithWerkzeug(_ body: [UInt8], contentType: String) async throws -> (fields: [String: [String]], files: [ParsedPart]) {
    try await onOwnThread { () throws -> (fields: [String: [String]], files: [ParsedPart]) in
        try parseWithWerkzeug(body, contentType: contentType)
    }
}

/// `parseWithWerkzeug`'s work, blocking its thread while python3 runs.
func parseWithWerkzeug(_ body: [UInt8], contentType: String) throws -> (fields: [String: [String]], files: [ParsedPart]) {
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
    let data = try runPython(script, input: body, arguments: [contentType])
    struct Output: Decodable {
        var fields: [String: [String]]
        var files: [ParsedPart]
    }
    let decoded = try JSONDecoder().decode(Output.self, from: data)
    return (decoded.fields, decoded.files)
}
