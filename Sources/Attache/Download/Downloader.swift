internal import AttacheCore
import Foundation

/// What to fetch and where to put it.
public struct DownloadRequest: Sendable {
    /// How to open a sealed download after it arrived.
    public struct Unsealing: Sendable {
        public var scheme: SealScheme
        public var key: AttachmentKey
        public var transferEncoding: TransferEncoding
        /// `signal` only: the real plaintext length, to strip the bucket padding.
        public var plaintextByteCount: Int64?

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
    /// The file to create. It appears only when the download is complete (and, when unsealing,
    /// verified); until then the bytes collect in `destination + ".part"`.
    public var destination: String
    /// Continue from an existing `.part` file with a `Range` request. Without it an old `.part` is
    /// discarded. Within one call, retries always continue where the previous attempt stopped.
    public var resume: Bool
    /// Extra request headers (`Authorization`, ...).
    public var headers: [(name: String, value: String)]
    /// Decrypt and verify the downloaded bytes into `destination`.
    public var unsealing: Unsealing?

    public init(
        url: String, destination: String, resume: Bool = false, headers: [(name: String, value: String)] = [],
        unsealing: Unsealing? = nil
    ) {
        self.url = url
        self.destination = destination
        self.resume = resume
        self.headers = headers
        self.unsealing = unsealing
    }

    /// Where the bytes collect until the download is complete.
    public var partialPath: String { destination + ".part" }
}

/// What a finished download did.
public struct DownloadReceipt: Sendable, Hashable, Codable {
    public var url: String
    public var path: String
    /// Bytes as the server sent them (sealed bytes when unsealing).
    public var byteCount: Int64
    /// Bytes written to `path` (the plaintext when unsealing; otherwise `byteCount`).
    public var storedByteCount: Int64
    /// Bytes that came over the network in this call, all attempts together.
    public var transferredByteCount: Int64
    /// Where the first attempt started (the size of the `.part` file it continued), 0 for a fresh start.
    public var resumedFrom: Int64
    public var attempts: Int
    /// SHA-256 of the downloaded bytes, hex.
    public var sha256: String
    /// True when the server's `ETag` was a SHA-256 and matched the bytes.
    public var verifiedByETag: Bool
    public var unsealed: Bool
}

/// Progress of one download.
public struct DownloadProgress: Sendable, Hashable {
    /// Bytes in the `.part` file so far.
    public var receivedBytes: Int64
    /// The whole size, once the server said it.
    public var totalBytes: Int64?
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
    public let configuration: ConnectionConfiguration

    /// - Parameter configuration: timeouts, TLS trust and pinning, retries and default headers; the
    ///   same settings uploads use.
    public init(configuration: ConnectionConfiguration = ConnectionConfiguration()) {
        self.configuration = configuration
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
        let cancellation = CancellationFlag()
        let configuration = configuration
        return try await withTaskCancellationHandler {
            try await BlockingPool.shared.run {
                try DownloadRun(
                    request: request, configuration: configuration, cancellation: cancellation,
                    progress: progress ?? { _ in }
                ).run()
            }
        } onCancel: {
            cancellation.set()
        }
    }
}

/// One `download` call: its attempts, the `.part` file, verification and the final rename.
final class DownloadRun {
    let request: DownloadRequest
    let configuration: ConnectionConfiguration
    let cancellation: CancellationFlag
    let progress: @Sendable (DownloadProgress) -> Void

    init(
        request: DownloadRequest, configuration: ConnectionConfiguration, cancellation: CancellationFlag,
        progress: @escaping @Sendable (DownloadProgress) -> Void
    ) {
        self.request = request
        self.configuration = configuration
        self.cancellation = cancellation
        self.progress = progress
    }

    func run() throws -> DownloadReceipt {
        let part = request.partialPath
        if !request.resume { unlink(part) }
        let resumedFrom = Self.size(of: part) ?? 0
        let clock = ContinuousClock()
        let started = clock.now
        var attempts = 0
        var transferred: Int64 = 0
        var restartedAfterMismatch = false
        // Every attempt so far failed to connect: giving up is then `connectionFailed` (exit 69).
        var neverConnected = true
        let hash = try RunningHash()
        while true {
            attempts += 1
            let offset = Self.size(of: part) ?? 0
            // The hash must cover exactly what the attempt appends to; only a resumed prefix is read back.
            try hash.catchUp(toLength: offset, ofFile: part)
            let attempt = DownloadAttempt(
                url: request.url, partialPath: part, offset: offset, headerLines: headerLines(),
                configuration: configuration, cancellation: cancellation, hash: hash, progress: progress)
            let outcome = attempt.run()
            transferred += attempt.written
            switch outcome {
            case .complete(let total, let etag):
                guard let size = Self.size(of: part), size == total else {
                    throw AttacheError(
                        .corruptInput, stage: .download,
                        "the server announced \(total) bytes but \(Self.size(of: part) ?? 0) arrived", file: request.url)
                }
                try hash.catchUp(toLength: total, ofFile: part)
                let digest = try hash.finishHex()
                var verified = false
                if let etag, let expected = Self.sha256ETag(etag) {
                    guard expected == digest else {
                        // A .part from another version of the file, or damaged: start over once.
                        unlink(part)
                        if offset > 0 || resumedFrom > 0, !restartedAfterMismatch {
                            restartedAfterMismatch = true
                            continue
                        }
                        throw AttacheError(
                            .corruptInput, stage: .download,
                            "the downloaded bytes do not match the server's SHA-256 ETag", file: request.url)
                    }
                    verified = true
                }
                let stored: Int64
                if let unsealing = request.unsealing {
                    let unsealer = Unsealer(
                        scheme: unsealing.scheme, key: unsealing.key, transferEncoding: unsealing.transferEncoding,
                        plaintextByteCount: unsealing.plaintextByteCount)
                    try unsealer.unseal(fileAt: part, to: request.destination)
                    unlink(part)
                    stored = Self.size(of: request.destination) ?? 0
                } else {
                    guard rename(part, request.destination) == 0 else {
                        throw AttacheError(
                            .fileUnwritable, stage: .download,
                            "cannot move the download into place: \(String(cString: strerror(errno)))",
                            file: request.destination, cause: NativeError.posix())
                    }
                    stored = total
                }
                return DownloadReceipt(
                    url: request.url, path: request.destination, byteCount: total, storedByteCount: stored,
                    transferredByteCount: transferred, resumedFrom: resumedFrom, attempts: attempts,
                    sha256: digest, verifiedByETag: verified, unsealed: request.unsealing != nil)

            case .failed(let error, let retryAfter):
                if error.code != .connectionFailed { neverConnected = false }
                guard error.isRetryable, attempts < configuration.retry.maximumAttempts else {
                    if error.isRetryable, attempts > 1 {
                        throw AttacheError(
                            neverConnected ? .connectionFailed : .retriesExhausted, stage: .download,
                            "gave up after \(attempts) attempts: \(error.message)", file: request.url,
                            isRetryable: true, cause: error.cause)
                    }
                    throw error
                }
                let delay = configuration.retry.delay(afterAttempt: attempts, retryAfter: retryAfter)
                guard clock.now - started + delay < configuration.retry.budget else {
                    throw AttacheError(
                        neverConnected ? .connectionFailed : .retriesExhausted, stage: .download,
                        "gave up after \(attempts) attempts (retry budget spent): \(error.message)",
                        file: request.url, isRetryable: true, cause: error.cause)
                }
                try sleepUnlessCancelled(delay)
            }
        }
    }

    private func headerLines() -> [String] {
        var lines = ["User-Agent: \(configuration.userAgent)", "Accept-Encoding: identity"]
        if let authorization = configuration.authorization {
            lines.append("Authorization: \(authorization.headerValue)")
        }
        for (name, value) in configuration.headers + request.headers { lines.append("\(name): \(value)") }
        return lines
    }

    private func sleepUnlessCancelled(_ delay: Duration) throws {
        let deadline = ContinuousClock.now + delay
        while ContinuousClock.now < deadline {
            if cancellation.isSet { throw AttacheError(.cancelled, stage: .download, "the download was cancelled") }
            usleep(useconds_t(min(50_000, max(1, (deadline - ContinuousClock.now).microseconds))))
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

/// The SHA-256 of a `.part` file's first ``count`` bytes, kept up to date as a download appends to it, so
/// a finished download is not read a second time to be checked.
final class RunningHash {
    private let digest: SHA256Digest
    /// How many bytes from the start of the file the hash covers.
    private(set) var count: Int64 = 0

    init() throws { digest = try SHA256Digest() }

    /// Starts over at byte 0 (a 200 answer replaces the file).
    func reset() throws {
        try digest.restart()
        count = 0
    }

    /// Adds bytes just written at offset ``count``.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        try digest.update(bytes)
        count += Int64(bytes.count)
    }

    /// Makes the hash cover exactly the first `length` bytes of the file at `path`, reading only the
    /// bytes it has not seen (all of them after ``reset()`` or when the file became shorter).
    func catchUp(toLength length: Int64, ofFile path: String) throws {
        if count > length { try reset() }
        guard count < length else { return }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw AttacheError(.fileUnreadable, stage: .download, "cannot read the partial file back",
                               file: path, cause: NativeError.posix())
        }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        while count < length {
            let want = Int(min(Int64(buffer.count), length - count))
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, want, off_t(count)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                throw AttacheError(.fileUnreadable, stage: .download, "the partial file is shorter than expected",
                                   file: path, cause: n < 0 ? NativeError.posix() : nil)
            }
            try buffer.withUnsafeBytes { try append(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
        }
    }

    /// The hex digest of what the hash covers; the hash then starts over at byte 0.
    func finishHex() throws -> String {
        let text = hex(try digest.finish())
        try reset()
        return text
    }
}

extension Duration {
    var microseconds: Int64 {
        let parts = components
        return parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000
    }
}
