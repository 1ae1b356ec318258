import FoundationEssentials
import Logging

/// The log lines of one attempt, every one passed through the client's ``LogRedaction``.
///
/// `.debug`: one line when the answer (or the failure) comes: method, URL, status, sizes and curl's
/// timings. `.trace`: the request's headers, a bounded preview of a text body, an equivalent `curl`
/// command line, then the answer's headers and a preview of its text body.
struct RequestLog {
    let configuration: RequestClient.Configuration
    let request: ClientRequest
    let exchange: TransportRequest
    let attempt: Int
    /// The client's redaction plus the secret values this request carries.
    private let redaction: LogRedaction

    private var logger: Logger { configuration.logger }
    /// A body never shown: marked so by the request, or by the body itself (a sealed form).
    private var isSecretBody: Bool { request.bodyIsSecret || request.body?.isSensitive == true }

    init(configuration: RequestClient.Configuration, request: ClientRequest, exchange: TransportRequest, attempt: Int) {
        self.configuration = configuration
        self.request = request
        self.exchange = exchange
        self.attempt = attempt
        var redaction = configuration.redaction
        if configuration.logger.logLevel <= .debug {
            redaction.secretValues += Self.secrets(of: exchange, redaction: redaction)
        }
        self.redaction = redaction
    }

    /// The values `exchange` sends in secret headers, query fields and form or JSON body fields.
    private static func secrets(of exchange: TransportRequest, redaction: LogRedaction) -> [String] {
        var values: [String] = []
        for line in exchange.headerLines(withCredentials: true) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].drop { $0 == " " }
            values += redaction.secretValues(inHeader: String(line[..<colon]), value: String(value))
        }
        if let mark = exchange.url.firstIndex(of: "?") {
            values += redaction.secretValues(inForm: String(exchange.url[exchange.url.index(after: mark)...]))
        }
        let type = (exchange.headers.last { $0.name.lowercased() == "content-type" }?.value ?? "").lowercased()
        let readable = type.hasPrefix("application/x-www-form-urlencoded") || type.contains("json")
        if readable, let source = exchange.body, source.byteCount <= 1 << 20,
            let bytes = try? source.makeReader().readToEnd()
        {
            if type.hasPrefix("application/x-www-form-urlencoded") {
                values += redaction.secretValues(inForm: String(decoding: bytes, as: UTF8.self))
            } else if let value = try? JSONValue.parse(bytes) {
                values += redaction.secretValues(inJSON: value)
            }
        }
        return values
    }

    private var target: String { "\(exchange.method) \(redaction.url(exchange.url))" }

    func sending() {
        guard logger.logLevel <= .trace else { return }
        let headers = requestHeaderLines()
        var lines = ["→ \(target) (attempt \(attempt))"]
        lines += headers.map { "  " + $0 }
        if let preview = requestBodyPreview() { lines.append("  body: " + preview) }
        // One log line each: a handler that escapes line breaks keeps them readable.
        for line in lines { logger.trace("\(line)") }
        logger.trace("\(curlCommand(headers: headers))")
    }

    func received(_ response: ServerResponse, sink: RequestSink) {
        guard logger.logLevel <= .debug else { return }
        var line = "\(target) → \(response.status)"
        line += " sent \(exchange.body?.byteCount ?? 0) B, received \(sink.deliveredBytes) B"
        if let timings = response.timings {
            if timings.bytesReceived != sink.deliveredBytes { line += " (\(timings.bytesReceived) B on the wire)" }
            line += "; " + timings.summary
        }
        if attempt > 1 { line += " (attempt \(attempt))" }
        logger.debug("\(redaction.scrub(line))")
        guard logger.logLevel <= .trace else { return }
        var lines = ["← \(response.status)"]
        lines += response.headers.map { "  " + redaction.headerLine(name: $0.name, value: $0.value) }
        if let preview = preview(response.body, contentType: response.header("Content-Type"), secret: isSecretBody) {
            lines.append("  body: " + preview + (response.bodyExceededCap ? " (cut at the size cap)" : ""))
        }
        for line in lines { logger.trace("\(line)") }
    }

    func failed(_ error: AttacheError) {
        guard logger.logLevel <= .debug else { return }
        logger.debug("\(redaction.scrub("\(target) failed: \(error.message) [\(error.code)] (attempt \(attempt))"))")
    }

    /// The header lines the transport sends (its defaults, the connection's, the request's), redacted.
    func requestHeaderLines() -> [String] {
        var lines = exchange.headerLines(withCredentials: true).map { line -> String in
            guard let colon = line.firstIndex(of: ":") else { return line }
            let value = line[line.index(after: colon)...].drop { $0 == " " }
            return redaction.headerLine(name: String(line[..<colon]), value: String(value))
        }
        if exchange.acceptEncoding != nil { lines.append("Accept-Encoding: (every encoding libcurl decodes)") }
        return lines
    }

    private func requestBodyPreview() -> String? {
        guard let source = exchange.body else { return nil }
        if isSecretBody { return "<\(source.byteCount) bytes, secret>" }
        guard let body = request.body else { return builtBodyPreview() }
        guard let bytes = body.inMemoryBytes else { return "<\(source.byteCount) bytes, streamed>" }
        return preview(bytes, contentType: body.contentType, secret: false)
    }

    /// The preview of a body built from parameters (form or JSON): its bytes are in the exchange's source.
    private func builtBodyPreview() -> String? {
        guard let source = exchange.body, source.byteCount <= Int64(configuration.bodyPreviewLimit) * 4,
            let bytes = try? source.makeReader().readToEnd()
        else { return "<\(exchange.body?.byteCount ?? 0) bytes>" }
        let type = exchange.headers.last { $0.name.lowercased() == "content-type" }?.value
        return preview(bytes, contentType: type, secret: false)
    }

    /// A bounded, redacted preview of a text body; a size for anything else.
    func preview(_ bytes: [UInt8], contentType: String?, secret: Bool) -> String? {
        if bytes.isEmpty { return nil }
        if secret { return "<\(bytes.count) bytes, secret>" }
        let type = (contentType ?? "").lowercased()
        let limit = configuration.bodyPreviewLimit
        func bounded(_ text: String) -> String {
            let utf8 = Array(text.utf8)
            guard utf8.count > limit else { return text }
            return String(decoding: utf8.prefix(limit), as: UTF8.self) + "… (\(utf8.count) bytes)"
        }
        if type.contains("json"), let value = try? JSONValue.parse(bytes) {
            return bounded(redaction.scrub(redaction.json(value).description))
        }
        if type.hasPrefix("application/x-www-form-urlencoded") {
            return bounded(redaction.form(String(decoding: bytes, as: UTF8.self)))
        }
        let textual = type.hasPrefix("text/") || type.contains("xml") || type.contains("json") || type.contains("javascript")
        guard textual, let text = String(validating: bytes, as: UTF8.self) else {
            return "<\(bytes.count) bytes\(type.isEmpty ? "" : ", \(type)")>"
        }
        return bounded(redaction.scrub(text))
    }

    /// A `curl` command that sends the same request, secrets masked (so it reads, but does not
    /// replay, a request that carried them).
    func curlCommand(headers: [String]) -> String {
        var words = ["curl"]
        if exchange.method == "HEAD" {
            words.append("--head")
        } else if exchange.method != "GET" || exchange.body != nil {
            words += ["-X", exchange.method]
        }
        if exchange.acceptEncoding != nil { words.append("--compressed") }
        for line in headers where !line.hasPrefix("Accept-Encoding:") {
            words += ["-H", Self.shellQuoted(line.hasSuffix(": ") ? String(line.dropLast()) : line)]
        }
        if let source = exchange.body {
            if isSecretBody {
                words += ["--data-binary", Self.shellQuoted("<\(source.byteCount) bytes, secret>")]
            } else if let text = inlineBody(source) {
                words += ["--data-binary", Self.shellQuoted(text)]
            } else {
                words += ["--data-binary", Self.shellQuoted("@<\(source.byteCount) bytes>")]
            }
        }
        words.append(Self.shellQuoted(redaction.url(exchange.url)))
        return redaction.scrub(words.joined(separator: " "))
    }

    private func inlineBody(_ source: any ByteSource) -> String? {
        guard source.byteCount <= Int64(configuration.bodyPreviewLimit), let bytes = try? source.makeReader().readToEnd(),
            let text = String(validating: bytes, as: UTF8.self)
        else { return nil }
        let type = (exchange.headers.last { $0.name.lowercased() == "content-type" }?.value ?? "").lowercased()
        if type.contains("json"), let value = try? JSONValue.parse(bytes) { return redaction.json(value).description }
        if type.hasPrefix("application/x-www-form-urlencoded") { return redaction.form(text) }
        if type.hasPrefix("text/") || type.contains("xml") { return text }
        return nil
    }

    /// `text` in single quotes for a POSIX shell.
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacing("'", with: "'\\''") + "'"
    }
}
