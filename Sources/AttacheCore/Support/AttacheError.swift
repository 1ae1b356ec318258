import Glibc

/// The one error type the library throws.
///
/// An `AttacheError` says which stage failed (``Stage``), what went wrong (``Code``), which file it
/// concerns, and whether trying again could help. New codes can be added without breaking callers:
/// `Code` is a struct with static members, not an enum, so switch over the codes you care about and
/// keep a `default`.
///
/// ```swift
/// do {
///     let receipt = try await pipeline.send(Attachment(path: "photo.jpg"))
/// } catch let error as AttacheError where error.code == .fileNotFound {
///     print(error.message)
/// }
/// ```
///
/// Messages never contain key material or file contents.
public struct AttacheError: Error, Sendable, CustomStringConvertible, Codable {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible, Codable {
        /// A stable identifier, used in JSON output and journals.
        public let rawValue: String
        /// Creates a code from its stable identifier.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The stable identifier (`file-not-found`).
        public var description: String { rawValue }

        /// Reads the stable identifier (`"file-not-found"`).
        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        /// Writes the stable identifier.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        /// The caller passed something unusable (bad URL, bad field, bad option).
        public static let invalidArgument = Code("invalid-argument")
        /// The file does not exist.
        public static let fileNotFound = Code("file-not-found")
        /// The file exists but cannot be read.
        public static let fileUnreadable = Code("file-unreadable")
        /// The file changed size or contents while it was being sent.
        public static let fileChanged = Code("file-changed")
        /// A file could not be written.
        public static let fileUnwritable = Code("file-unwritable")
        /// The content is not what it claims to be or cannot be parsed.
        public static let corruptInput = Code("corrupt-input")
        /// The input is supported in principle but this variant is not.
        public static let unsupportedInput = Code("unsupported-input")
        /// The input exceeds a configured limit (pixels, size, scans).
        public static let limitExceeded = Code("limit-exceeded")
        /// A key is missing, malformed, or the wrong one.
        public static let invalidKey = Code("invalid-key")
        /// Authenticated decryption failed: the data was modified, truncated or reordered.
        public static let authenticationFailed = Code("authentication-failed")
        /// A native library reported an error.
        public static let nativeLibrary = Code("native-library")
        /// The server could not be reached (DNS, refused, TLS handshake).
        public static let connectionFailed = Code("connection-failed")
        /// The connection broke while sending or receiving.
        public static let connectionLost = Code("connection-lost")
        /// No progress within the connect or stall timeout, or the time budget ran out.
        public static let timedOut = Code("timed-out")
        /// TLS verification or public-key pinning failed.
        public static let tlsFailure = Code("tls-failure")
        /// The server answered something that cannot be interpreted.
        public static let badResponse = Code("bad-response")
        /// The server refused the upload (4xx or a business error); retrying will not help.
        public static let rejected = Code("rejected")
        /// The server answered with the receipt of an earlier upload under the same idempotency key whose
        /// bytes are not the ones sent now (its digest differs), or whose key is not known here: the key
        /// in a receipt would not open what the server holds.
        public static let replayMismatch = Code("replay-mismatch")
        /// The server refused the credentials (HTTP 401: a wrong, expired or missing token; Matrix's
        /// `M_UNKNOWN_TOKEN`, `M_MISSING_TOKEN`); retrying with them will not help.
        public static let unauthorized = Code("unauthorized")
        /// The server kept asking to retry until attempts or the time budget ran out.
        public static let retriesExhausted = Code("retries-exhausted")
        /// The operation was cancelled.
        public static let cancelled = Code("cancelled")
        /// The journal database failed.
        public static let journal = Code("journal")
        /// Another batch is running on the same journal.
        public static let journalBusy = Code("journal-busy")
        /// The shared work queue's database cannot be reached, refused the credentials, or failed a
        /// statement (`attache enqueue`, `worker`, `queue`).
        public static let queue = Code("queue")
        /// The Scan stage found malware in the file (the signature is in the message): nothing of it was
        /// sent, and trying again will not help.
        public static let infected = Code("infected")
        /// The malware scanner answered that it could not scan the file (its own error).
        public static let scanFailed = Code("scan-failed")
        /// An internal invariant failed; a bug.
        public static let internalError = Code("internal")
    }

    /// The pipeline stage in which the failure happened.
    public enum Stage: String, Hashable, Sendable, Codable, CustomStringConvertible {
        /// Settings that do not fit together, before any work.
        case configuration
        /// Reading the input (a file, bytes, a stream).
        case read
        /// Detecting the type and kind.
        case detect
        /// Recompressing, making thumbnails.
        case transform
        /// Scanning for malware, before anything is sealed.
        case scan
        /// Encrypting and encoding (and opening, for downloads).
        case seal
        /// Sending the upload.
        case upload
        /// Reading the server's answer.
        case interpret
        /// Fetching a file.
        case download
        /// The batch engine and its journal.
        case batch
        /// A request of ``Attache/RequestClient`` (not an upload).
        case request
        /// The shared work queue (PostgreSQL) of `attache worker` and `attache enqueue`.
        case queue
        /// The stage's name (`upload`), as in JSON and journals.
        public var description: String { rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// Where it happened.
    public var stage: Stage
    /// One human sentence, no secrets.
    public var message: String
    /// The file the failure concerns, when there is one.
    public var file: String?
    /// Whether trying the same operation again may succeed.
    public var isRetryable: Bool
    /// The lower-level error, when there is one (a POSIX errno, a curl code, ...).
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(
        _ code: Code, stage: Stage, _ message: String, file: String? = nil,
        isRetryable: Bool = false, cause: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.stage = stage
        self.message = message
        self.file = file
        self.isRetryable = isRetryable
        self.cause = cause
    }

    /// A one-line rendering: `file: stage: message`.
    public var description: String {
        var text = ""
        if let file { text += "\(file): " }
        text += "\(stage): \(message)"
        return text
    }

    /// The innermost ``AttacheError`` in the chain of ``cause``s (this error when its cause is not one):
    /// the failure that started it, with its own code and stage. A batch entry that failed because
    /// every attempt found the port closed is `connection-failed` here whatever wrapped it.
    public var root: AttacheError {
        var current = self
        while let inner = current.cause as? AttacheError { current = inner }
        return current
    }

    /// The code of ``root``.
    public var rootCode: Code { root.code }

    private enum CodingKeys: String, CodingKey {
        case code, stage, message, file, isRetryable, cause
    }

    /// Reads an error written by ``encode(to:)``. A cause that was an ``AttacheError`` comes back as
    /// one; any other cause was written as its description only and comes back as `NativeError`
    /// (library `"text"`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try container.decode(Code.self, forKey: .code)
        stage = try container.decode(Stage.self, forKey: .stage)
        message = try container.decode(String.self, forKey: .message)
        file = try container.decodeIfPresent(String.self, forKey: .file)
        isRetryable = try container.decodeIfPresent(Bool.self, forKey: .isRetryable) ?? false
        if let inner = try? container.decodeIfPresent(AttacheError.self, forKey: .cause) {
            cause = inner
        } else if let text = try? container.decodeIfPresent(String.self, forKey: .cause) {
            cause = NativeError(library: "text", code: 0, text: text)
        } else {
            cause = nil
        }
    }

    /// Writes the code, stage, message, file, whether it is retryable, and the cause: an
    /// ``AttacheError`` cause as an object, any other as its description (no secrets: see above).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(stage, forKey: .stage)
        try container.encode(message, forKey: .message)
        try container.encodeIfPresent(file, forKey: .file)
        try container.encode(isRetryable, forKey: .isRetryable)
        if let inner = cause as? AttacheError {
            try container.encode(inner, forKey: .cause)
        } else if let cause {
            try container.encode(String(describing: cause), forKey: .cause)
        }
    }

    /// Returns a copy that names `file`, unless a file is already named.
    package func concerning(_ file: String) -> AttacheError {
        var copy = self
        if copy.file == nil { copy.file = file }
        return copy
    }
}

/// A native library's numeric error, kept as the `cause` of an ``AttacheError``.
package struct NativeError: Error, Sendable, CustomStringConvertible {
    /// The library that reported it (`curl`, `openssl`, `turbojpeg`, `webp`, `png`, `posix`).
    package let library: String
    /// The library's own code.
    package let code: Int
    /// The library's own text for it.
    package let text: String

    /// Creates a native error.
    package init(library: String, code: Int, text: String) {
        self.library = library
        self.code = code
        self.text = text
    }

    package var description: String { "\(library) error \(code): \(text)" }
}
