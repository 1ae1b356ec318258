public import FoundationEssentials

/// The body of a request: its bytes as a re-openable ``AttacheCore/ByteSource``, its content type and length.
///
/// Every attempt of a request (a retry, a replay after a token refresh) opens `source` again with
/// `makeReader()` and gets the same bytes from the first one: in-memory bodies are kept, a file is
/// re-read from disk (and a file that changed in between fails with `.fileChanged` rather than send
/// a body that contradicts its `Content-Length`).
///
/// ```swift
/// let form = RequestBody.form(["name": "bang", "phone": ["mobile": "xx"]])
/// let json = try RequestBody.json(.object(["text": .string("hi")]))
/// let file = try RequestBody.file(path: "export.csv", contentType: "text/csv")
/// ```
public struct RequestBody: Sendable {
    /// The `Content-Type` header value, or nil to send none.
    public var contentType: String?
    /// The exact number of bytes, known before the first is sent (every body here knows it).
    package var length: Int64? { source.byteCount }
    /// The bytes; open a reader per attempt.
    package let source: any ByteSource
    /// The whole body when it is held in memory (forms, JSON, property lists, raw bytes, sealed forms),
    /// nil for files and multipart bodies: for logging a bounded preview.
    package let inMemoryBytes: [UInt8]?
    /// Whether the content is secret (a sealed body): logs show its length, never its bytes.
    package var isSensitive: Bool

    /// A body over any byte source.
    package init(source: any ByteSource, contentType: String?, isSensitive: Bool = false) {
        self.source = source
        self.contentType = contentType
        self.inMemoryBytes = (source as? DataSource)?.bytes
        self.isSensitive = isSensitive
    }

    /// A body of bytes held in memory.
    package init(bytes: [UInt8], contentType: String?, isSensitive: Bool = false) {
        self.source = DataSource(bytes)
        self.contentType = contentType
        self.inMemoryBytes = bytes
        self.isSensitive = isSensitive
    }

    /// The content type of form bodies, with the charset the old clients sent.
    package static let formContentType = "application/x-www-form-urlencoded; charset=utf-8"
    /// The content type of JSON bodies.
    package static let jsonContentType = "application/json"
    /// The content type of property-list bodies, as AFNetworking's serializer set it.
    package static let propertyListContentType = "application/x-plist"

    /// An `application/x-www-form-urlencoded; charset=utf-8` body of the encoded parameters.
    ///
    /// ```swift
    /// let body = RequestBody.form(["families": ["father"], "nums": .set([1, 2])])
    /// // families[]=father&nums=1&nums=2
    /// ```
    public static func form(_ parameters: Parameters) -> RequestBody {
        form(parameters, encoder: URLFormEncoder())
    }

    /// A form body of the parameters as `encoder` writes them.
    package static func form(_ parameters: Parameters, encoder: URLFormEncoder) -> RequestBody {
        RequestBody(bytes: encoder.encodedBytes(parameters), contentType: formContentType)
    }

    /// A form body of an `Encodable` (a struct or a dictionary at the top).
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` when the value does not encode as a keyed container.
    public static func form(encoding value: some Encodable) throws -> RequestBody {
        try form(encoding: value, encoder: URLFormEncoder())
    }

    /// A form body of an `Encodable`, as `encoder` writes it.
    package static func form(encoding value: some Encodable, encoder: URLFormEncoder) throws -> RequestBody {
        .form(try ParameterValue.parameters(encoding: value), encoder: encoder)
    }

    /// An `application/json` body: compact, keys sorted (`JSONValue.jsonBytes()`).
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` for a NaN or infinite number.
    public static func json(_ value: JSONValue) throws -> RequestBody {
        RequestBody(bytes: try value.jsonBytes(), contentType: jsonContentType)
    }

    /// An `application/json` body of an `Encodable`, written by `encoder` (by default a `JSONEncoder`
    /// with sorted keys and unescaped slashes).
    ///
    /// ```swift
    /// struct Message: Encodable { let chatId: Int; let text: String }
    /// let body = try RequestBody.json(encoding: Message(chatId: 42, text: "hi"))
    /// ```
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` when encoding fails.
    public static func json(encoding value: some Encodable, encoder: JSONEncoder? = nil) throws -> RequestBody {
        let encoder = encoder ?? defaultJSONEncoder()
        do {
            return RequestBody(bytes: Array(try encoder.encode(value)), contentType: jsonContentType)
        } catch {
            throw AttacheError(
                .invalidArgument, stage: .upload, "the JSON body could not be encoded: \(error)",
                cause: ParameterValueEncoder.ErrorDescription(text: "\(error)"))
        }
    }

    /// An `application/x-plist` body: the XML property list (``PropertyListValue/xmlBytes()``).
    package static func propertyList(_ value: PropertyListValue) -> RequestBody {
        RequestBody(bytes: value.xmlBytes(), contentType: propertyListContentType)
    }

    /// Raw bytes with the given content type.
    public static func bytes(_ bytes: [UInt8], contentType: String? = "application/octet-stream") -> RequestBody {
        RequestBody(bytes: bytes, contentType: contentType)
    }

    /// UTF-8 text with the given content type.
    public static func text(_ text: String, contentType: String = "text/plain; charset=utf-8") -> RequestBody {
        RequestBody(bytes: Array(text.utf8), contentType: contentType)
    }

    /// A file streamed from disk in bounded chunks, never read whole; its size and modification time
    /// are taken now and checked by every attempt.
    /// - Throws: ``AttacheCore/AttacheError`` `.fileNotFound` or `.fileUnreadable` (stage `.read`) naming the path.
    public static func file(path: String, contentType: String? = "application/octet-stream") throws -> RequestBody {
        RequestBody(source: try FileSource(path: path), contentType: contentType)
    }

    /// A `multipart/form-data` body; the content type carries its boundary.
    package static func multipart(_ body: MultipartBody) -> RequestBody {
        RequestBody(source: body, contentType: body.contentType)
    }

    static func defaultJSONEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
