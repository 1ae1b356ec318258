import FoundationEssentials

/// Which resumable protocol an upload uses.
public enum ResumableMode: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The protocol the server announces: tus when `OPTIONS` answers `Tus-Resumable`, else the IETF
    /// draft when an empty creation request gets an upload resource (`104` or `201` with `Location`),
    /// else a plain multipart upload.
    case auto
    /// tus 1.0.
    case tus
    /// The IETF draft (draft-ietf-httpbis-resumable-upload-11); a plain multipart upload when the
    /// server never sends `104 Upload Resumption Supported`.
    case ietf
    /// Multipart uploads only.
    case off

    /// The name used on the command line.
    public var description: String { rawValue }
}

/// The protocol of an upload in flight.
public enum ResumableProtocol: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// tus 1.0.
    case tus
    /// The IETF draft.
    case ietf
    /// A Matrix homeserver's media ids reserved before the bytes go (MSC2246, ``MatrixEndpoint``):
    /// ``ResumableState/uploadURL`` holds the `mxc://` URIs of the attachment and then of its thumbnails,
    /// separated by spaces, and ``ResumableState/offset`` is 0.
    case matrix

    /// The protocol's name.
    public var description: String { rawValue }
}

/// When and how attachments are sent as resumable uploads.
///
/// ```swift
/// var configuration = PipelineConfiguration(url: "https://files.example/upload")
/// configuration.resumable = ResumableConfiguration(mode: .auto)   // files of 16 MiB and more
/// ```
public struct ResumableConfiguration: Sendable, Hashable {
    /// The protocol; `.off` (the default) sends every attachment as one multipart POST.
    public var mode: ResumableMode
    /// Sealed bodies of at least this many bytes go resumable; smaller ones as one multipart POST.
    public var threshold: Int64
    /// The first append's size; later ones adapt to the link (see ``targetAppendDuration``).
    package var initialAppendSize: Int64
    /// The largest append, before the server's own limits (`Tus-Max-Size`, `Upload-Limit`).
    package var maximumAppendSize: Int64
    /// The smallest append the size adapts down to (also after a `413`).
    package var minimumAppendSize: Int64
    /// Appends are sized to take about this long at the rate the previous one reached: long enough
    /// that per-request costs vanish, short enough that a cut loses little and progress is confirmed
    /// often.
    package var targetAppendDuration: Duration
    /// tus: send `Upload-Checksum` with each `PATCH` when the server lists the `checksum` extension
    /// (`sha256` when it lists it, else `sha1`). It costs one hashing pass over each chunk before it is
    /// sent.
    package var checksums: Bool

    /// Creates a configuration.
    public init(
        mode: ResumableMode = .off, threshold: Int64 = 16 << 20, initialAppendSize: Int64 = 16 << 20,
        maximumAppendSize: Int64 = 1 << 30, minimumAppendSize: Int64 = 256 << 10,
        targetAppendDuration: Duration = .seconds(2), checksums: Bool = true
    ) {
        self.mode = mode
        self.threshold = threshold
        self.initialAppendSize = initialAppendSize
        self.maximumAppendSize = maximumAppendSize
        self.minimumAppendSize = minimumAppendSize
        self.targetAppendDuration = targetAppendDuration
        self.checksums = checksums
    }

    /// Whether a sealed body of `byteCount` bytes is sent resumable.
    package func applies(toByteCount byteCount: Int64) -> Bool {
        mode != .off && byteCount >= threshold
    }
}

/// Where a resumable upload stands: enough to continue it from another process (the batch journal
/// keeps it per file).
public struct ResumableState: Sendable, Hashable, Codable {
    /// The protocol the upload was created with.
    public var protocolName: ResumableProtocol
    /// The upload resource, absolute.
    public var uploadURL: String
    /// The last offset the server confirmed.
    public var offset: Int64

    /// Creates a state.
    public init(protocolName: ResumableProtocol, uploadURL: String, offset: Int64) {
        self.protocolName = protocolName
        self.uploadURL = uploadURL
        self.offset = offset
    }
}
