internal import AttacheCore
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// What to fetch and where to put it.
public struct DownloadRequest: Sendable {
    /// How to open a sealed download after it arrived.
    public struct Unsealing: Sendable {
        /// The scheme the file was sealed with.
        public var scheme: SealScheme
        /// The key to open it with (from the upload's receipt).
        public var key: AttachmentKey
        /// Whether the stored bytes are base64 text.
        public var transferEncoding: TransferEncoding
        /// `signal` only: the real plaintext length, to strip the bucket padding.
        public var plaintextByteCount: Int64?

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
    }

    /// The `http://` or `https://` URL to GET.
    public var url: String
    /// Where the download goes. A regular file (or a new name) appears only when the download is
    /// complete (and, when unsealing, verified); until then the bytes collect in ``partialPath``. `-`
    /// (standard output) or an existing file that is not a regular file (a FIFO, a device, a link to
    /// one) is written in place once the download is verified, never replaced.
    public var destination: String
    /// Continue from an existing `.part` file with a `Range` request. Without it an old `.part` is
    /// discarded. Within one call, retries always continue where the previous attempt stopped.
    public var resume: Bool
    /// Extra request headers (`Authorization`, ...).
    public var headers: [HeaderField]
    /// Decrypt and verify the downloaded bytes into `destination`.
    public var unsealing: Unsealing?
    /// The validator the `.part` file's bytes were fetched under: the strong `ETag` or the
    /// `Last-Modified` date the server sent with them (``DownloadProgress/validator`` reports it).
    /// A resumed request sends it as `If-Range`, so a server whose copy changed answers with the
    /// whole new file (200) instead of a range of it, and the old bytes are discarded.
    public var validator: String?
    /// When the SHA-256 of the bytes is computed (on this machine's CPU it costs more than receiving
    /// them over loopback).
    public enum DigestPolicy: Sendable, Hashable {
        /// Always: ``DownloadReceipt/sha256`` is always set.
        case always
        /// Only when there is something to check it against: an ``expectedSHA256``, or an `ETag` that
        /// is a SHA-256 (as the reference server sends). Otherwise the receipt has no digest.
        case whenVerifiable
    }

    /// When the SHA-256 is computed; ``DigestPolicy/always`` by default.
    public var digest: DigestPolicy = .always
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
    public var partialPath: String {
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
    /// Bytes written to `path` (the plaintext when unsealing; otherwise `byteCount`).
    public var storedByteCount: Int64
    /// Bytes that came over the network in this call, all attempts together.
    public var transferredByteCount: Int64
    /// Where the first attempt started (the size of the `.part` file it continued), 0 for a fresh start.
    public var resumedFrom: Int64
    /// Attempts made, the successful one included.
    public var attempts: Int
    /// SHA-256 of the downloaded bytes, hex; nil only with ``DownloadRequest/DigestPolicy/whenVerifiable``
    /// when there was nothing to check the bytes against.
    public var sha256: String?
    /// True when the server's `ETag` was a SHA-256 and matched the bytes.
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
    public var validator: String?

    /// Creates a progress value.
    public init(receivedBytes: Int64, totalBytes: Int64? = nil, validator: String? = nil) {
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
    private let transport: any HTTPTransport
    private let sleep: @Sendable (Duration) async throws -> Void

    /// - Parameters:
    ///   - configuration: timeouts, TLS trust and pinning, retries, headers and credentials; the same
    ///     settings uploads use.
    ///   - transport: what sends the requests; the shared ``CurlTransport`` when nil.
    public init(configuration: ConnectionConfiguration = ConnectionConfiguration(), transport: (any HTTPTransport)? = nil) {
        self.configuration = configuration
        self.transport = transport ?? CurlTransport.shared(for: configuration)
        self.sleep = { try await Task.sleep(for: $0) }
    }

    /// Creates a downloader whose waits between attempts go through `sleep` (tests).
    init(
        configuration: ConnectionConfiguration, transport: any HTTPTransport,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.configuration = configuration
        self.transport = transport
        self.sleep = sleep
    }

    /// Downloads `request.url` to `request.destination`.
    ///
    /// - Throws: `AttacheError` with stage `.download`: `rejected` for a 4xx answer (404 and the like,
    ///   not retried), `connectionFailed` when no attempt could connect, `retriesExhausted` when
    ///   5xx/429 answers or broken connections outlast the retry policy, `corruptInput` when the bytes
    ///   do not match the server's SHA-256 `ETag` or the size it announced, `fileUnwritable` for the local file; unsealing errors (`authenticationFailed`, ...)
    ///   come from the seal stage. The `.part` file is kept on every error but a hash mismatch, so a
    ///   later call with `resume` continues it.
    public func download(
        _ request: DownloadRequest, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> DownloadReceipt {
        try await DownloadRun(
            request: request, configuration: configuration, transport: transport, sleep: sleep,
            progress: progress ?? { _ in }
        ).run()
    }
}

/// One `download` call: its attempts, the `.part` file, verification and the final rename.
struct DownloadRun: Sendable {
    let request: DownloadRequest
    let configuration: ConnectionConfiguration
    let transport: any HTTPTransport
    let sleep: @Sendable (Duration) async throws -> Void
    let progress: @Sendable (DownloadProgress) -> Void

    /// What the attempts share: the running hash and where the first one started.
    private final class Shared: @unchecked Sendable {
        let hash: RunningHash
        var transferred: Int64 = 0
        var restartedAfterMismatch = false
        /// The `If-Range` validator for the next attempt: the request's, then the last one the
        /// server sent with the bytes now in the `.part` file.
        var validator: String?
        init(validator: String?) throws {
            hash = try RunningHash()
            self.validator = validator
        }
    }

    func run() async throws -> DownloadReceipt {
        let part = request.partialPath
        if !request.resume { unlink(part) }
        let resumedFrom = Self.size(of: part) ?? 0
        let shared = try Shared(validator: request.resume ? request.validator : nil)
        let driver = RetryDriver(
            policy: configuration.retry, answerStage: .download, transportStage: .download,
            logger: Logger(label: "attache.download"), sleep: sleep)
        let outcome: RetryDriver.Outcome<DownloadReceipt>
        do {
            outcome = try await driver.run { attempt in
                try await self.attempt(shared: shared, resumedFrom: resumedFrom)
            }
        } catch var error as AttacheError where error.code == .connectionFailed || error.code == .retriesExhausted {
            if request.streamsToDestination { unlink(part) }
            error.file = request.url
            throw error
        } catch {
            // A stream's partial file has a name no later call can find: nothing to resume.
            if request.streamsToDestination { unlink(part) }
            throw error
        }
        var receipt = outcome.value
        receipt.attempts = outcome.attempts
        return receipt
    }

    /// One GET from the end of the `.part` file; its verdict for the retry driver.
    private func attempt(shared: Shared, resumedFrom: Int64) async throws -> RetryDriver.Verdict<DownloadReceipt> {
        let part = request.partialPath
        let offset = Self.size(of: part) ?? 0
        // The hash must cover exactly what the attempt appends to; only a resumed prefix is read back.
        let hash = shared.hash
        // Read back only when the digest is certainly wanted; otherwise the end reads what it needs.
        let hashAlways = request.digest == .always || request.expectedSHA256 != nil
        if hashAlways { try await BlockingPool.shared.run { try hash.catchUp(toLength: offset, ofFile: part) } }
        var headers: [HeaderField] = [HeaderField(name: "Accept-Encoding", value: "identity")] + request.headers
        if offset > 0 {
            headers.append(HeaderField(name: "Range", value: "bytes=\(offset)-"))
            if let validator = shared.validator { headers.append(HeaderField(name: "If-Range", value: validator)) }
        }
        let sink = DownloadSink(
            url: request.url, partialPath: part, offset: offset, hash: hash, hashAlways: hashAlways, progress: progress)
        let exchange = TransportRequest(
            method: "GET", url: request.url, headers: headers, connection: configuration,
            receiveBufferSize: TransportRequest.streamingReceiveBufferSize)
        progress(DownloadProgress(receivedBytes: offset, totalBytes: nil))
        let response: ServerResponse
        do {
            response = try await transport.send(exchange, sink: sink)
            try sink.closeFile()
        } catch var error as AttacheError {
            try? sink.closeFile()
            shared.transferred += sink.written
            error.stage = error.stage == .upload ? .download : error.stage
            if error.code == .connectionLost {
                error.message = "connection lost after \(sink.base + sink.written) bytes: \((error.cause as? NativeError)?.text ?? error.message)"
            }
            if error.file == nil, error.code != .fileUnwritable { error.file = request.url }
            guard error.isRetryable else { throw error }
            return .retry(RetryAdvice(reason: error.message), failure: error)
        }
        shared.transferred += sink.written
        if let seen = sink.validator { shared.validator = seen }
        switch sink.verdict(for: response) {
        case .complete(let total, let etag):
            return try await finish(total: total, etag: etag, offset: offset, resumedFrom: resumedFrom, shared: shared)
        case .failed(let error, let retryAfter):
            guard error.isRetryable else { throw error }
            return .retry(RetryAdvice(reason: error.message, retryAfter: retryAfter), failure: retryAfter == nil ? error : nil)
        }
    }

    /// Verifies the complete `.part` file and moves (or unseals) it into place.
    private func finish(
        total: Int64, etag: String?, offset: Int64, resumedFrom: Int64, shared: Shared
    ) async throws -> RetryDriver.Verdict<DownloadReceipt> {
        let request = request
        let part = request.partialPath
        return try await BlockingPool.shared.run { () -> RetryDriver.Verdict<DownloadReceipt> in
            guard let size = Self.size(of: part), size == total else {
                throw AttacheError(
                    .corruptInput, stage: .download,
                    "the server announced \(total) bytes but \(Self.size(of: part) ?? 0) arrived", file: request.url)
            }
            let checksETag = etag.flatMap(Self.sha256ETag) != nil
            var digest: String?
            if request.digest == .always || request.expectedSHA256 != nil || checksETag {
                try shared.hash.catchUp(toLength: total, ofFile: part)
                digest = try shared.hash.finishHex()
            }
            // A mismatch removes the bytes. A resumed prefix from another version of the file (or a
            // damaged one) gets one fresh start; a whole download that still differs fails this file.
            func mismatch(_ against: String, _ message: String) throws -> RetryDriver.Verdict<DownloadReceipt> {
                unlink(part)
                if offset > 0 || resumedFrom > 0, !shared.restartedAfterMismatch {
                    shared.restartedAfterMismatch = true
                    return .retry(RetryAdvice(reason: "the resumed file did not match \(against); starting over"), failure: nil)
                }
                throw AttacheError(.corruptInput, stage: .download, message, file: request.url)
            }
            if let expected = request.expectedSHA256?.lowercased(), expected != digest {
                return try mismatch(
                    "the expected SHA-256",
                    "the downloaded bytes have SHA-256 \(digest ?? "-"), not the expected \(expected)")
            }
            var verified = false
            if let etag, let expected = Self.sha256ETag(etag) {
                guard expected == digest else {
                    return try mismatch("its ETag", "the downloaded bytes do not match the server's SHA-256 ETag")
                }
                verified = true
            }
            let stored: Int64
            let output = OutputDestination(path: request.destination, stage: .download)
            if let unsealing = request.unsealing {
                let unsealer = Unsealer(
                    scheme: unsealing.scheme, key: unsealing.key, transferEncoding: unsealing.transferEncoding,
                    plaintextByteCount: unsealing.plaintextByteCount)
                if output.kind == .replaced {
                    try unsealer.unseal(fileAt: part, to: request.destination)
                    stored = Self.size(of: request.destination) ?? 0
                } else {
                    // A stream: each segment is verified before it is written.
                    let reader = CountingReader(try unsealer.unseal(try FileSource(path: part)))
                    try output.write(reader)
                    stored = reader.count
                }
                unlink(part)
            } else if output.kind != .replaced {
                // A stream is written in place, after the bytes were verified, and never renamed over.
                try output.write(try FileSource(path: part).makeReader())
                unlink(part)
                stored = total
            } else {
                guard rename(part, request.destination) == 0 else {
                    throw AttacheError.system(
                        "cannot move the download into place", .fileUnwritable, stage: .download, file: request.destination)
                }
                stored = total
            }
            return .done(
                DownloadReceipt(
                    url: request.url, path: request.destination, byteCount: total, storedByteCount: stored,
                    transferredByteCount: shared.transferred, resumedFrom: resumedFrom, attempts: 0,
                    sha256: digest, verifiedByETag: verified, unsealed: request.unsealing != nil))
        }
    }

    static func size(of path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// The hex digest an `ETag` carries when it is a quoted (or bare) SHA-256, lowercased.
    static func sha256ETag(_ etag: String) -> String? {
        var text = Substring(etag)
        if text.hasPrefix("W/") { return nil }  // a weak validator says nothing about the bytes
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = text.dropFirst().dropLast() }
        guard text.utf8.count == 64, text.utf8.allSatisfy({ $0 < 128 && isxdigit(Int32($0)) != 0 }) else { return nil }
        return text.lowercased()
    }
}

/// Counts what passes through a reader.
private final class CountingReader: ByteReader {
    private let inner: any ByteReader
    private(set) var count: Int64 = 0

    init(_ inner: any ByteReader) { self.inner = inner }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = try inner.read(into: buffer)
        count += Int64(n)
        return n
    }
}

/// The SHA-256 of a `.part` file's first ``count`` bytes, kept up to date as a download appends to it, so
/// a finished download is not read a second time to be checked.
final class RunningHash: @unchecked Sendable {
    private let digest: SHA256Digest
    private var covered: Int64 = 0
    /// One attempt uses the hash from several threads in turn (a pool job catches it up, the transport's
    /// thread appends the body); the lock makes each hand-over an ordering a race detector can see too.
    private let lock = Lock()

    init() throws { digest = try SHA256Digest() }

    /// How many bytes from the start of the file the hash covers.
    var count: Int64 { lock.withLock { covered } }

    /// Starts over at byte 0 (a 200 answer replaces the file).
    func reset() throws {
        try lock.withLock { try resetLocked() }
    }

    /// Adds bytes just written at offset ``count``.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        try lock.withLock { try appendLocked(bytes) }
    }

    /// Makes the hash cover exactly the first `length` bytes of the file at `path`, reading only the
    /// bytes it has not seen (all of them after ``reset()`` or when the file became shorter).
    func catchUp(toLength length: Int64, ofFile path: String) throws {
        try lock.withLock {
            if covered > length { try resetLocked() }
            guard covered < length else { return }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw AttacheError(.fileUnreadable, stage: .download, "cannot read the partial file back",
                                   file: path, cause: NativeError.posix())
            }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 1 << 18)
            while covered < length {
                let want = Int(min(Int64(buffer.count), length - covered))
                let offset = covered
                let n = buffer.withUnsafeMutableBytes {
                    FileDescriptor.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[..<want]), at: offset)
                }
                guard n > 0 else {
                    throw AttacheError(.fileUnreadable, stage: .download, "the partial file is shorter than expected",
                                       file: path, cause: n < 0 ? NativeError.posix() : nil)
                }
                try buffer.withUnsafeBytes { try appendLocked(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            }
        }
    }

    /// The hex digest of what the hash covers; the hash then starts over at byte 0.
    func finishHex() throws -> String {
        try lock.withLock {
            let text = hex(try digest.finish())
            try resetLocked()
            return text
        }
    }

    private func resetLocked() throws {
        try digest.restart()
        covered = 0
    }

    private func appendLocked(_ bytes: UnsafeRawBufferPointer) throws {
        try digest.update(bytes)
        covered += Int64(bytes.count)
    }
}

extension Duration {
    var microseconds: Int64 {
        let parts = components
        return parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000
    }
}
