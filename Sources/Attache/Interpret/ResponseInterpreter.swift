import FoundationEssentials
import Glibc

/// Turns a ``ServerResponse`` into a receipt (``ServerReceipt``), a retry or a ``Rejection``, as the
/// configured ``AnswerProfile`` reads answers.
///
/// In every profile the answers its `RetryClassifier` retries (the client's) are retried,
/// honouring `Retry-After` (and, for `telegram`, `parameters.retry_after`); a 2xx whose body was cut short by the
/// connection is retried; other 4xx and 3xx are rejections carrying the server's own code and message
/// when the profile knows where they are (S3's XML `Error`, the Bot API's `error_code` and `description`).
/// What a 2xx must look like depends on the profile (see ``AnswerProfile``); the default, `errorcode`,
/// follows the old backend's convention: a JSON object whose `errorCode` is `0` (number or string) is a
/// success with the payload under `data`, any other code a business error carrying `message`. An answer
/// the profile cannot read is a rejection with reason `.badResponse`.
///
/// ```swift
/// let interpreter = ResponseInterpreter(configuration: .telegram)
/// switch interpreter.interpret(response) {
/// case .success(let receipt): print(receipt.fileId ?? "-")
/// case .rejection(let rejection): print(rejection)
/// case .retry(let advice): print("retry:", advice)
/// }
/// ```
public struct ResponseInterpreter: Sendable {
    /// How to read the server's answers: a profile, where the file id is, and the limits.
    ///
    /// Start from a profile (`.init(profile: .s3Post)`, or the presets `errorCode`, `status`, `s3Post`,
    /// `telegram`) and adjust. The member-name settings (`errorCodeField`, `successCodes`, `dataField`,
    /// `messageFields`, `fileIdFields`, `urlFields`) describe the `errorcode` convention; `status` uses
    /// `fileIdFields`, `urlFields`, `dataField` and `messageFields` too; `s3-post` and `telegram` read the
    /// members their services define.
    public struct Configuration: Sendable {
        /// How answers are read. Default: `errorcode`.
        public var profile: AnswerProfile = .errorCode
        /// Where the file id is read, overriding the profile's places: an RFC 6901 pointer into the answer
        /// as the receipt would hold it before the profile picks its payload: the whole JSON body
        /// (`/result/document/file_id`, `/data/id`), the members of an XML answer's root element
        /// (`/Key`), or, for an empty `s3-post` answer, its `Location` and `ETag` headers. When the
        /// pointer selects nothing (or an object or array), the receipt has no file id; the answer is
        /// still kept whole.
        public var idPointer: JSONPointer?
        /// Bodies longer than this are not read further and count as a bad response.
        package var maximumBodySize = 1 << 20
        /// The member holding the business error code (`errorcode`). `nil`: any 2xx JSON object is a success.
        public var errorCodeField: String? = "errorCode"
        /// Codes (compared as strings) that mean success (`errorcode`).
        public var successCodes: Set<String> = ["0"]
        /// The server's own error codes that mean "try again later": the business codes of `errorcode`, S3's
        /// `Code` (`s3-post` starts with `RequestTimeout`, `SlowDown`, `InternalError`,
        /// `ServiceUnavailable`), the Bot API's `error_code` (`telegram` retries 429 and 5xx in any case).
        package var retryableBusinessCodes: Set<String> = []
        /// Members searched, in order, for the server's message.
        public var messageFields = ["message", "msg", "errorMsg", "error", "detail"]
        /// The member holding the payload; the whole body is used when it is missing.
        public var dataField = "data"
        /// Members of the payload searched, in order, for the file id.
        public var fileIdFields = ["fileId", "file_id", "id"]
        /// Members of the payload searched, in order, for the file's URL.
        public var urlFields = ["url", "fileUrl", "file_url"]

        /// The old backend's convention (`errorcode`).
        public init() {}

        /// The defaults for `profile`.
        public init(profile: AnswerProfile) {
            self.profile = profile
            if profile == .s3Post || profile == .s3Put {
                // S3 documents these as safe to retry; RequestTimeout comes with a 400.
                retryableBusinessCodes = ["RequestTimeout", "SlowDown", "InternalError", "ServiceUnavailable"]
            }
            if profile == .matrix { retryableBusinessCodes = ["M_LIMIT_EXCEEDED"] }
        }

        /// `errorcode`: the old backend's convention.
        package static var errorCode: Configuration { Configuration(profile: .errorCode) }
        /// `status`: any 2xx is success; the file id from a JSON body or `Location`.
        package static var status: Configuration { Configuration(profile: .status) }
        /// `s3-post`: S3, MinIO and GCS presigned POST forms.
        package static var s3Post: Configuration { Configuration(profile: .s3Post) }
        /// `telegram`: Bot API answers.
        package static var telegram: Configuration { Configuration(profile: .telegram) }
    }

    /// The configuration in use.
    package var configuration: Configuration
    /// Which statuses are retried and how `Retry-After` is read: the rule of the client whose
    /// operation reads the answer.
    package var classifier: RetryClassifier

    /// Creates an interpreter.
    package init(configuration: Configuration = .init(), classifier: RetryClassifier = .standard) {
        self.configuration = configuration
        self.classifier = classifier
    }

    /// Decides what `response` means.
    package func interpret(_ response: ServerResponse) -> ResponseOutcome {
        let status = response.status
        let details = errorDetails(of: response)
        if classifier.isRetryable(response) {
            let summary = summary(of: response, details: details)
            return .retry(
                RetryAdvice(
                    reason: "HTTP \(status)\(summary.map { ": \($0)" } ?? "")",
                    status: status, retryAfter: retryDelay(in: response),
                    refusal: Rejection(
                        reason: .status, status: status, businessCode: details?.code,
                        message: details?.message ?? summary ?? ServerResponse.reasonPhrase(status))))
        }
        guard (200..<300).contains(status) else {
            if let code = details?.code, configuration.retryableBusinessCodes.contains(code) {
                return .retry(
                    RetryAdvice(
                        reason: "HTTP \(status) \(code): \(details?.message ?? "no message")", status: status,
                        retryAfter: retryDelay(in: response),
                        refusal: Rejection(reason: .status, status: status, businessCode: code, message: details?.message ?? "no message")))
            }
            let message: String
            let found = details?.message ?? summary(of: response, details: nil)
            if status == 413 {
                message = "the server refused the upload as too large" + (found.map { " (\($0))" } ?? "")
            } else {
                message = found ?? ServerResponse.reasonPhrase(status)
            }
            return .rejection(Rejection(reason: .status, status: status, businessCode: details?.code, message: message))
        }
        if response.bodyIncomplete {
            return .retry(
                RetryAdvice(reason: "the answer was cut short (HTTP \(status))", status: status))
        }
        if response.bodyExceededCap {
            return .rejection(
                Rejection(
                    reason: .badResponse, status: status,
                    message: "the answer is larger than \(configuration.maximumBodySize) bytes"))
        }
        switch configuration.profile {
        case .errorCode: return interpretErrorCode(response)
        case .status: return interpretStatus(response)
        case .s3Post: return interpretS3Post(response)
        case .s3Put: return interpretS3Put(response)
        case .telegram: return interpretTelegram(response)
        case .matrix: return interpretMatrix(response)
        }
    }

    /// Parses `Retry-After` as delta-seconds or an HTTP-date, capped (`RetryClassifier`).
    package func retryAfter(in response: ServerResponse) -> Duration? {
        classifier.retryAfter(in: response)
    }

    // MARK: Profiles

    private func interpretErrorCode(_ response: ServerResponse) -> ResponseOutcome {
        let status = response.status
        if isBlank(response.body) {
            return .rejection(Rejection(reason: .badResponse, status: status, message: "the answer is empty"))
        }
        guard let json = try? JSONValue.parse(response.body), case .object = json else {
            let what = describeNonJSON(response)
            return .rejection(Rejection(reason: .badResponse, status: status, message: what))
        }
        if let field = configuration.errorCodeField {
            guard let codeValue = json[field], let code = codeValue.stringValue else {
                return .rejection(
                    Rejection(
                        reason: .badResponse, status: status,
                        message: "the answer has no \"\(field)\" member"))
            }
            if !configuration.successCodes.contains(code) {
                let message = message(in: json) ?? "no message"
                if configuration.retryableBusinessCodes.contains(code) {
                    return .retry(
                        RetryAdvice(
                            reason: "error code \(code): \(message)", status: status,
                            retryAfter: retryAfter(in: response),
                            refusal: Rejection(reason: .business, status: status, businessCode: code, message: message)))
                }
                return .rejection(
                    Rejection(reason: .business, status: status, businessCode: code, message: message))
            }
        }
        let data = json[configuration.dataField] ?? json
        return .success(
            receipt(
                response, document: json, data: data,
                fileId: configuration.fileIdFields.lazy.compactMap { data[$0]?.stringValue }.first,
                url: configuration.urlFields.lazy.compactMap { data[$0]?.stringValue }.first))
    }

    private func interpretStatus(_ response: ServerResponse) -> ResponseOutcome {
        let location = response.header("Location")?.trimmingBlanks
        let locationId = location.flatMap(Self.lastPathSegment)
        let document: JSONValue
        var fileId: String?
        var url: String?
        if isBlank(response.body) {
            document = .null
        } else if let json = try? JSONValue.parse(response.body) {
            document = json
            let payload = json[configuration.dataField]
            for candidate in [json, payload].compactMap({ $0 }) {
                fileId = fileId ?? configuration.fileIdFields.lazy.compactMap { candidate[$0]?.stringValue }.first
                url = url ?? configuration.urlFields.lazy.compactMap { candidate[$0]?.stringValue }.first
            }
        } else if XMLAnswerReader.looksLikeXML(response.body), let xml = XMLAnswerReader.read(response.body) {
            document = xml.value
        } else {
            document = .string(String(decoding: response.body, as: UTF8.self))
        }
        return .success(
            receipt(response, document: document, data: document, fileId: fileId ?? locationId, url: url ?? location))
    }

    private func interpretS3Post(_ response: ServerResponse) -> ResponseOutcome {
        let status = response.status
        let document: JSONValue
        if isBlank(response.body) {
            // 204 (S3's default answer) and an empty 200: what S3 says is in the headers.
            var members: [String: JSONValue] = [:]
            for (header, name) in [("Location", "Location"), ("ETag", "ETag"), ("x-amz-version-id", "VersionId")] {
                if let value = response.header(header) { members[name] = .string(value) }
            }
            document = .object(members)
        } else if let xml = XMLAnswerReader.read(response.body) {
            if xml.root == "Error" {
                return s3ErrorOutcome(xml, status: status, response: response)
            }
            document = xml.value
        } else {
            return .rejection(
                Rejection(
                    reason: .badResponse, status: status,
                    message: "expected an empty answer or S3's XML PostResponse, got "
                        + "\(response.body.count) bytes of \(response.mediaType ?? "no content type")"))
        }
        let location = document["Location"]?.stringValue ?? response.header("Location")
        return .success(receipt(response, document: document, data: document, fileId: document["Key"]?.stringValue, url: location))
    }

    private func interpretS3Put(_ response: ServerResponse) -> ResponseOutcome {
        let status = response.status
        var members: [String: JSONValue] = [:]
        if !isBlank(response.body) {
            guard let xml = XMLAnswerReader.read(response.body) else {
                return .rejection(
                    Rejection(
                        reason: .badResponse, status: status,
                        message: "expected an empty answer or S3's XML, got "
                            + "\(response.body.count) bytes of \(response.mediaType ?? "no content type")"))
            }
            if xml.root == "Error" {
                // S3 may answer a long request (CompleteMultipartUpload, CopyObject) with 200 and an error body.
                return s3ErrorOutcome(xml, status: status, response: response)
            }
            if case .object(let elements) = xml.value { members = elements }
        }
        for (header, name) in [
            ("ETag", "ETag"), ("x-amz-version-id", "VersionId"), ("x-amz-checksum-crc32c", "ChecksumCRC32C"),
            ("x-amz-checksum-sha256", "ChecksumSHA256"), ("x-amz-checksum-algorithm", "ChecksumAlgorithm"),
            ("Location", "Location"),
        ] where members[name] == nil {
            if let value = response.header(header) { members[name] = .string(value) }
        }
        let document = JSONValue.object(members)
        return .success(
            receipt(
                response, document: document, data: document, fileId: document["Key"]?.stringValue,
                url: document["Location"]?.stringValue))
    }

    private func interpretTelegram(_ response: ServerResponse) -> ResponseOutcome {
        let status = response.status
        guard let json = try? JSONValue.parse(response.body), case .object = json else {
            let what = isBlank(response.body) ? "the answer is empty" : describeNonJSON(response)
            return .rejection(Rejection(reason: .badResponse, status: status, message: what))
        }
        guard case .bool(let ok) = json["ok"] else {
            return .rejection(
                Rejection(reason: .badResponse, status: status, message: "the answer has no boolean \"ok\" member"))
        }
        guard ok else {
            let code = json["error_code"]?.stringValue ?? "?"
            let message = json["description"]?.stringValue.map { String($0.prefix(500)) } ?? "no description"
            let number = json["error_code"]?.intValue ?? 0
            if classifier.isRetryable(status: number) || configuration.retryableBusinessCodes.contains(code) {
                return .retry(
                    RetryAdvice(
                        reason: "error code \(code): \(message)", status: status, retryAfter: retryDelay(in: response),
                        refusal: Rejection(reason: .business, status: status, businessCode: code, message: message)))
            }
            return .rejection(Rejection(reason: .business, status: status, businessCode: code, message: message))
        }
        let result = json["result"] ?? .null
        return .success(receipt(response, document: json, data: result, fileId: Self.botAPIFileId(in: result), url: nil))
    }

    private func interpretMatrix(_ response: ServerResponse) -> ResponseOutcome {
        let status = response.status
        guard let json = try? JSONValue.parse(response.body), case .object = json else {
            let what = isBlank(response.body) ? "the answer is empty" : describeNonJSON(response)
            return .rejection(Rejection(reason: .badResponse, status: status, message: what))
        }
        let uri = json["content_uri"]?.stringValue
        return .success(receipt(response, document: json, data: json, fileId: uri, url: uri))
    }

    /// The receipt, with the file id from `Configuration/idPointer` when one is set.
    private func receipt(
        _ response: ServerResponse, document: JSONValue, data: JSONValue, fileId: String?, url: String?
    ) -> ServerReceipt {
        let chosenId = configuration.idPointer.map { $0.resolve(in: document)?.stringValue } ?? fileId
        let replayed = response.header("Idempotent-Replayed")?.lowercased() == "true"
        return ServerReceipt(status: response.status, fileId: chosenId, url: url, data: data, replayed: replayed)
    }

    /// Where the Bot API puts a sent file's id: the largest `photo` size, or the one media object of the
    /// message (or a `File` object itself).
    static func botAPIFileId(in result: JSONValue) -> String? {
        if case .array(let sizes) = result["photo"] {
            let largest = sizes.enumerated().max { a, b in
                let areaA = (a.element["width"]?.intValue ?? 0) * (a.element["height"]?.intValue ?? 0)
                let areaB = (b.element["width"]?.intValue ?? 0) * (b.element["height"]?.intValue ?? 0)
                if areaA != areaB { return areaA < areaB }
                let sizeA = a.element["file_size"]?.intValue ?? 0
                let sizeB = b.element["file_size"]?.intValue ?? 0
                // The Bot API lists sizes smallest first: on a tie the later one wins.
                return sizeA != sizeB ? sizeA < sizeB : a.offset < b.offset
            }
            if let id = largest?.element["file_id"]?.stringValue { return id }
        }
        for member in ["document", "video", "voice", "audio", "sticker", "animation", "video_note"] {
            if let id = result[member]?["file_id"]?.stringValue { return id }
        }
        return result["file_id"]?.stringValue
    }

    // MARK: Error answers

    /// The server's own error code and message in a refusal, where the profile defines them.
    private func errorDetails(of response: ServerResponse) -> (code: String?, message: String?)? {
        switch configuration.profile {
        case .s3Post, .s3Put:
            guard XMLAnswerReader.looksLikeXML(response.body), let xml = XMLAnswerReader.read(response.body),
                xml.root == "Error"
            else { return nil }
            return Self.s3Error(xml)
        case .telegram:
            guard let json = try? JSONValue.parse(response.body), json["ok"] == .bool(false) else { return nil }
            return (json["error_code"]?.stringValue, json["description"]?.stringValue.map { String($0.prefix(500)) })
        case .matrix:
            guard let json = try? JSONValue.parse(response.body), let code = json["errcode"]?.stringValue else { return nil }
            return (String(code.prefix(100)), json["error"]?.stringValue.map { String($0.prefix(500)) })
        case .errorCode, .status:
            return nil
        }
    }

    /// What an S3 `<Error>` document means: a retry for the codes configured as retryable, a rejection
    /// naming the code otherwise.
    private func s3ErrorOutcome(_ xml: XMLAnswerReader.Document, status: Int, response: ServerResponse) -> ResponseOutcome {
        let details = Self.s3Error(xml)
        let code = details.code ?? "Error"
        if configuration.retryableBusinessCodes.contains(code) {
            return .retry(
                RetryAdvice(
                    reason: "\(code): \(details.message ?? "no message")", status: status,
                    retryAfter: retryDelay(in: response),
                    refusal: Rejection(reason: .business, status: status, businessCode: code, message: details.message ?? "no message")))
        }
        return .rejection(
            Rejection(reason: .business, status: status, businessCode: code, message: details.message ?? "no message"))
    }

    private static func s3Error(_ xml: XMLAnswerReader.Document) -> (code: String?, message: String?) {
        let code = xml.value["Code"]?.stringValue.flatMap { $0.isEmpty ? nil : String($0.prefix(100)) }
        let message = xml.value["Message"]?.stringValue.flatMap { $0.isEmpty ? nil : String($0.prefix(500)) }
        return (code, message)
    }

    /// `Retry-After`, else the body's `retry_after_ms` (matrix) or `parameters.retry_after` in seconds (telegram),
    /// capped.
    private func retryDelay(in response: ServerResponse) -> Duration? {
        if let header = retryAfter(in: response) { return header }
        if configuration.profile == .matrix, let json = try? JSONValue.parse(response.body),
            let milliseconds = json["retry_after_ms"]?.intValue, milliseconds >= 0
        {
            return min(.milliseconds(milliseconds), classifier.maximumRetryAfter)
        }
        guard configuration.profile == .telegram, let json = try? JSONValue.parse(response.body),
            let seconds = json["parameters"]?["retry_after"]?.intValue, seconds >= 0
        else { return nil }
        return min(.seconds(seconds), classifier.maximumRetryAfter)
    }

    private func message(in json: JSONValue) -> String? {
        for field in configuration.messageFields {
            if let text = json[field]?.stringValue, !text.isEmpty { return String(text.prefix(500)) }
        }
        return nil
    }

    /// A short human summary of an error answer: the profile's code and message, its JSON message, its
    /// HTML title, or its text.
    private func summary(of response: ServerResponse, details: (code: String?, message: String?)?) -> String? {
        if let details, details.code != nil || details.message != nil {
            return [details.code, details.message].compactMap { $0 }.joined(separator: ": ")
        }
        guard !response.body.isEmpty else { return nil }
        if let json = try? JSONValue.parse(response.body), let text = message(in: json) {
            return text
        }
        if let title = htmlTitle(response.body) { return title }
        let text = String(decoding: response.body.prefix(200), as: UTF8.self)
            .trimmingWhiteSpace
        guard !text.isEmpty, !text.contains("<") else { return nil }
        return text.split(whereSeparator: \.isNewline).first.map(String.init)
    }

    private func isBlank(_ body: [UInt8]) -> Bool {
        body.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
    }

    /// The last non-empty path segment of a URL or path, percent-decoded (`/files/a%20b?x=1` → `a b`).
    static func lastPathSegment(_ location: String) -> String? {
        let path: String
        if let components = URLComponents(string: location) {
            path = components.percentEncodedPath
        } else {
            path = String(location.prefix { $0 != "?" && $0 != "#" })
        }
        guard let segment = path.split(separator: "/").last else { return nil }
        return segment.percentDecoded() ?? String(segment)
    }

    private func describeNonJSON(_ response: ServerResponse) -> String {
        let type = response.mediaType ?? "no content type"
        if let title = htmlTitle(response.body) {
            return "expected JSON, got an HTML page (\(type)) titled \"\(title)\""
        }
        if type.contains("html") { return "expected JSON, got an HTML page (\(type))" }
        return "expected a JSON object, got \(response.body.count) bytes of \(type)"
    }

    private func htmlTitle(_ body: [UInt8]) -> String? {
        let text = String(decoding: body.prefix(8192), as: UTF8.self)
        guard let open = text.rangeIgnoringASCIICase(of: "<title>"),
            let close = text.rangeIgnoringASCIICase(of: "</title>", from: open.upperBound)
        else { return nil }
        let title = text[open.upperBound..<close.lowerBound].trimmingWhiteSpace
        return title.isEmpty ? nil : String(title.prefix(200))
    }
}
