internal import AttacheCore
import FoundationEssentials
import Glibc
import Logging

/// What to fetch and where to put it.
public struct DownloadRequest: Sendable {
    /// How to open a sealed download after it arrived.
    public struct Unsealing: Sendable {
        /// The scheme the file was sealed with.
        package var scheme: SealScheme
        /// The key to open it with (from the upload's receipt).
        package var key: AttachmentKey
        /// Whether the stored bytes are base64 text.
        package var transferEncoding: TransferEncoding
        /// `signal` only: the real plaintext length, to strip the bucket padding.
        package var plaintextByteCount: Int64?
        /// `matrix` only: the message's `EncryptedFile` (key, IV and the ciphertext's SHA-256, checked).
        package var matrixFile: MatrixEncryptedFile?

        /// How to open a download sealed with `scheme` and `key`.
        public init(
            scheme: SealScheme = .streamGCM, key: AttachmentKey, transferEncoding: TransferEncoding = .binary,
            plaintextByteCount: Int64? = nil
        ) {
            self.scheme = scheme
            self.key = key
            self.transferEncoding = transferEncoding
            self.plaintextByteCount = plaintextByteCount
        }

        /// How to open a download sealed with the `matrix` scheme, as a Matrix client does: with the key and
        /// IV of the message's `EncryptedFile`, after its SHA-256 of the ciphertext is checked.
        /// - Throws: ``AttacheCore/AttacheError`` `.invalidKey` when the `EncryptedFile` holds no usable key.
        public init(matrixFile: MatrixEncryptedFile, transferEncoding: TransferEncoding = .binary) throws {
            // Read now, so that a file without a usable key fails before the download.
            let key = try matrixFile.openingValues().key
            self.init(scheme: .matrix, key: key, transferEncoding: transferEncoding)
            self.matrixFile = matrixFile
        }
    }

    /// The `http://` or `https://` URL to GET, or with `objectStore` an object's `s3://BUCKET/KEY`.
    public var url: String
    /// The object store an `s3://BUCKET/KEY` ``url`` is fetched from: its endpoint, addressing, region and
    /// credentials (its ``ObjectStoreEndpoint/location`` is not used; the URL names the bucket). Every GET,
    /// each resumed or retried one too, is signed anew with SigV4 (`x-amz-content-sha256` of an empty body).
    /// Ignored for `http(s)` URLs.
    ///
    /// ```swift
    /// var request = DownloadRequest(url: "s3://media/inbox/clip.mp4", destination: "clip.mp4", resume: true)
    /// request.objectStore = try ObjectStoreEndpoint.resolve(url: request.url)
    /// ```
    package var objectStore: ObjectStoreEndpoint?
    /// Where the download goes. A regular file (or a new name) appears only when the download is
    /// complete (and, when unsealing, verified); until then the bytes collect in a partial file
    /// (`destination` + `.part` for a regular file, a temporary file otherwise). `-` (standard output)
    /// or an existing file that is not a regular file (a FIFO, a device, a link to one) is written in
    /// place once the download is verified, never replaced.
    public var destination: String
    /// Continue from an existing `.part` file with a `Range` request. Without it an old `.part` is
    /// discarded. Within one call, retries always continue where the previous attempt stopped.
    package var resume: Bool
    /// Extra request headers (`Authorization`, ...).
    public var headers: [HeaderField]
    /// Decrypt and verify the downloaded bytes into `destination`.
    public var unsealing: Unsealing?
    /// The validator the `.part` file's bytes were fetched under: the strong `ETag` or the
    /// `Last-Modified` date the server sent with them (``DownloadProgress/validator`` reports it).
    /// A resumed request sends it as `If-Range`, so a server whose copy changed answers with the
    /// whole new file (200) instead of a range of it, and the old bytes are discarded.
    package var validator: String?
    /// When the SHA-256 of the bytes is computed (on this machine's CPU it costs more than receiving
    /// them over loopback).
    package enum DigestPolicy: Sendable, Hashable {
        /// Always: ``DownloadReceipt/sha256`` is always set.
        case always
        /// Only when there is something to check it against: an ``expectedSHA256``, or an `ETag` that
        /// is a SHA-256 (as the reference server sends). Otherwise the receipt has no digest.
        case whenVerifiable
    }

    /// When the SHA-256 is computed; `DigestPolicy/always` by default.
    package var digest: DigestPolicy = .always
    /// The SHA-256 (hex) the downloaded bytes must have. Checked before the output appears: a
    /// mismatch removes the `.part` file and throws `corruptInput`; nothing is written to `destination`.
    public var expectedSHA256: String?

    /// A request to fetch `url` into `destination`.
    public init(
        url: String, destination: String, resume: Bool = false, headers: [HeaderField] = [],
        unsealing: Unsealing? = nil, validator: String? = nil, expectedSHA256: String? = nil
    ) {
        self.url = url
        self.destination = destination
        self.resume = resume
        self.headers = headers
        self.unsealing = unsealing
        self.validator = validator
        self.expectedSHA256 = expectedSHA256
    }

    /// Where the bytes collect until the download is complete: `destination + ".part"` for a regular
    /// file; for a stream destination, a file in the temporary directory that is removed afterwards
    /// (such a download cannot be resumed by a later call).
    package var partialPath: String {
        get { partialPathOverride ?? (streamsToDestination ? streamPartialPath : destination + ".part") }
        set { partialPathOverride = newValue }
    }

    private var partialPathOverride: String?
    private let streamPartialPath =
        PathText.temporaryDirectory + "/attache-download-\(UInt64.random(in: 0...UInt64.max)).part"

    /// True when the destination is standard output or an existing non-regular file.
    var streamsToDestination: Bool { OutputDestination(path: destination, stage: .download).kind != .replaced }
}

/// What a finished download did.
public struct DownloadReceipt: Sendable, Hashable, Codable {
    /// The URL fetched.
    public var url: String
    /// Where the bytes were written (``DownloadRequest/destination``).
    public var path: String
    /// Bytes as the server sent them (sealed bytes when unsealing).
    public var byteCount: Int64
    /// Bytes written to ``path``: the plaintext when the download was unsealed (without a `signal`
    /// file's padding), otherwise the same as ``byteCount``.
    public var storedByteCount: Int64
    /// Bytes that came over the network in this call, all attempts together: less than ``byteCount``
    /// when a `.part` file was continued (``resumedFrom``), more when an attempt failed midway and its
    /// bytes were fetched again.
    public var transferredByteCount: Int64
    /// Where the first attempt started (the size of the `.part` file it continued), 0 for a fresh start.
    public var resumedFrom: Int64
    /// Attempts made, the successful one included.
    public var attempts: Int
    /// SHA-256 of the downloaded bytes, hex; nil only with `DigestPolicy.whenVerifiable`
    /// when there was nothing to check the bytes against.
    public var sha256: String?
    /// True when the server's `ETag` was a SHA-256 of the content and matched the bytes received; false
    /// when the `ETag` was something else (or absent) and so checked nothing.
    public var verifiedByETag: Bool
    /// True when the bytes were opened with a key (``DownloadRequest/unsealing``) and verified.
    public var unsealed: Bool
}

/// Progress of one download.
public struct DownloadProgress: Sendable, Hashable {
    /// Bytes in the `.part` file so far.
    public var receivedBytes: Int64
    /// The whole size, once the server said it.
    public var totalBytes: Int64?
    /// What identifies the version of the file being received, once the server answered: its strong
    /// `ETag`, else its `Last-Modified` date. Keep it with the `.part` file and pass it back as
    /// ``DownloadRequest/validator`` to resume safely.
    package var validator: String?

    /// Creates a progress value.
    package init(receivedBytes: Int64, totalBytes: Int64? = nil, validator: String? = nil) {
        self.receivedBytes = receivedBytes
        self.totalBytes = totalBytes
        self.validator = validator
    }
}

/// Downloads files over HTTP(S) with libcurl: streamed to disk, resumed with `Range` after a broken
/// connection or from an earlier run's `.part` file, retried with the upload's retry policy, checked
/// against the server's `ETag` when it is a SHA-256 (as the reference server sends), and optionally
/// decrypted.
///
/// ```swift
/// let downloader = Downloader()
/// let receipt = try await downloader.download(
///     DownloadRequest(url: "https://files.example.com/files/42", destination: "photo.jpg", resume: true))
/// print(receipt.byteCount, receipt.resumedFrom)
/// ```
public final class Downloader: Sendable {
    /// Timeouts, retries, TLS, headers and credentials of every download.
    public let configuration: ConnectionConfiguration
    /// The client whose transport, interceptors and hooks every attempt goes through.
    let client: AttacheClient

    /// Creates a downloader over the shared libcurl transport.
    /// - Parameter configuration: timeouts, TLS trust and pinning, retries, headers and credentials; the
    ///   same settings uploads use.
    public convenience init(configuration: ConnectionConfiguration = ConnectionConfiguration()) {
        self.init(client: AttacheClient(connection: configuration, transport: nil))
    }

    /// - Parameters:
    ///   - configuration: timeouts, TLS trust and pinning, retries, headers and credentials; the same
    ///     settings uploads use.
    ///   - transport: what sends the requests; the shared `CurlTransport` when nil.
    package convenience init(
        configuration: ConnectionConfiguration = ConnectionConfiguration(), transport: (any HTTPTransport)?
    ) {
        self.init(client: AttacheClient(connection: configuration, transport: transport))
    }

    /// Creates the download operation of `client`, with the client's connection settings.
    public init(client: AttacheClient) {
        self.configuration = client.connection
        self.client = client
    }

    /// Creates a downloader whose waits between attempts go through `sleep` (tests).
    convenience init(
        configuration: ConnectionConfiguration, transport: any HTTPTransport,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.init(client: AttacheClient(connection: configuration, transport: transport, sleep: sleep))
    }

    /// Downloads `request.url` to `request.destination`.
    ///
    /// - Throws: `AttacheError` with stage `.download`: `rejected` for a 4xx answer (404 and the like,
    ///   not retried), `connectionFailed` when no attempt could connect, `retriesExhausted` when
    ///   5xx/429 answers or broken connections outlast the retry policy, `corruptInput` when the bytes
    ///   do not match the server's SHA-256 `ETag` or the size it announced, `fileUnwritable` for the local file,
    ///   `invalidArgument` (stage `configuration`) for an `s3://` URL without `DownloadRequest.objectStore`;
    ///   an object store's refusal (`NoSuchKey`, `SignatureDoesNotMatch`, ...) is `rejected` with the store's
    ///   code as ``AttacheCore/AttacheError/rejection``'s business code; unsealing errors (`authenticationFailed`, ...)
    ///   come from the seal stage. The `.part` file is kept on every error but a hash mismatch, so a
    ///   later call with `resume` continues it.
    public func download(
        _ request: DownloadRequest, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> DownloadReceipt {
        try await DownloadRun(
            request: request, configuration: configuration, client: client, progress: progress ?? { _ in }
        ).run()
    }
}
