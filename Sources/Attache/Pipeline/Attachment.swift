public import FoundationEssentials

/// One attachment to send: a file, bytes in memory, or a stream of byte chunks.
///
/// ```swift
/// let fromDisk = Attachment(path: "Samples/photo.jpg")
/// let fromMemory = Attachment(bytes: jpegBytes, filename: "photo.jpg")
/// let fromRequest = Attachment(stream: request.body.map { Array(buffer: $0) }, filename: "clip.mp4",
///                              byteCount: request.headers.contentLength)
/// ```
///
/// Bytes in memory are sent from memory; they touch the disk only when Transform needs a file (images to
/// recompress). A stream is read to its end before the upload starts: into memory up to
/// `streamMemoryLimit`, into a private spool file (mode 0600, removed after the send) beyond it,
/// because every attempt of an upload must send the same bytes and a stream can be read only once.
public struct Attachment: Sendable {
    /// Where the bytes come from.
    package enum Content: Sendable {
        /// A file on disk (the path of ``Attachment/path``).
        case file
        /// Bytes in memory.
        case bytes([UInt8])
        /// Chunks from an asynchronous sequence, and how many bytes it will yield when known.
        case stream(AttachmentStream, byteCount: Int64?)
    }

    /// Streams up to this size are kept in memory; larger ones are spooled to a private file.
    package static let streamMemoryLimit = 8 * 1024 * 1024

    /// The file to send, or for bytes and streams the name they go by in receipts and errors (their
    /// filename).
    public var path: String
    /// Where the bytes come from.
    package var content: Content
    /// The kind the caller says it is; checked against the content, never trusted blindly.
    public var declaredKind: MessageKind?
    /// The filename to send; defaults to the last component of `path`.
    public var filename: String?
    /// Form fields for this attachment only, sent after the configuration's fields.
    public var fields: [UploadField]
    /// The idempotency key; a random one is made when nil. Give a stable key to make a re-run of the
    /// same attachment deduplicate on the server (the batch journal does).
    public var idempotencyKey: String?
    /// The key and nonce seed to seal with; fresh random ones are drawn when nil.
    ///
    /// Give material that was made durable before the first attempt (`SealMaterialStore`, a journal,
    /// a queue row) whenever the upload may be replayed: every attempt under one idempotency key, in any
    /// process, must send identical bytes, or the server keeps the first attempt's bytes and answers a
    /// later one with their receipt while the key in hand belongs to the later one.
    public var sealMaterial: SealMaterial?
    /// An attachment read from the file at `path`.
    public init(
        path: String, declaredKind: MessageKind? = nil, filename: String? = nil,
        fields: [UploadField] = [], idempotencyKey: String? = nil,
        sealMaterial: SealMaterial? = nil
    ) {
        self.path = path
        self.content = .file
        self.declaredKind = declaredKind
        self.filename = filename
        self.fields = fields
        self.idempotencyKey = idempotencyKey
        self.sealMaterial = sealMaterial
    }

    /// An attachment read from a `file:` URL.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` for a URL that is not a file URL.
    public init(
        fileURL: URL, declaredKind: MessageKind? = nil, filename: String? = nil, fields: [UploadField] = [],
        idempotencyKey: String? = nil, sealMaterial: SealMaterial? = nil
    ) throws {
        guard fileURL.isFileURL else {
            throw AttacheError(.invalidArgument, stage: .read, "not a file URL: \(fileURL.scheme ?? "no scheme")")
        }
        self.init(
            path: fileURL.path, declaredKind: declaredKind, filename: filename, fields: fields,
            idempotencyKey: idempotencyKey, sealMaterial: sealMaterial)
    }

    /// An attachment of bytes in memory, sent as `filename` (also the name in receipts and errors).
    public init(
        bytes: [UInt8], filename: String, declaredKind: MessageKind? = nil, fields: [UploadField] = [],
        idempotencyKey: String? = nil, sealMaterial: SealMaterial? = nil
    ) {
        self.init(
            path: filename, declaredKind: declaredKind, filename: filename, fields: fields,
            idempotencyKey: idempotencyKey, sealMaterial: sealMaterial)
        self.content = .bytes(bytes)
    }

    /// An attachment whose bytes arrive as chunks (a request body being received, a download), sent as
    /// `filename`. `byteCount`, when given, is checked: a stream that yields more or fewer bytes fails
    /// the send with `.corruptInput` before anything is uploaded.
    public init<Chunks: AsyncSequence & Sendable>(
        stream: Chunks, filename: String, byteCount: Int64? = nil, declaredKind: MessageKind? = nil,
        fields: [UploadField] = [], idempotencyKey: String? = nil, sealMaterial: SealMaterial? = nil
    ) where Chunks.Element == [UInt8] {
        self.init(
            path: filename, declaredKind: declaredKind, filename: filename, fields: fields,
            idempotencyKey: idempotencyKey, sealMaterial: sealMaterial)
        self.content = .stream(AttachmentStream(stream), byteCount: byteCount)
    }
}
