internal import AttacheCore
internal import CCurl
import Foundation

/// One GET through a curl easy handle, appending to the `.part` file; run on a blocking thread.
///
/// The answer decides what happens to the file at its first body byte: 206 whose `Content-Range`
/// starts at the file's end is appended; 200 (the server ignored the range, or there was none)
/// replaces it; anything else is collected as an error body and never touches it.
final class DownloadAttempt {
    enum Outcome {
        case complete(total: Int64, etag: String?)
        case failed(AttacheError, retryAfter: Duration?)
    }

    let url: String
    let partialPath: String
    /// The size of the `.part` file when the attempt started: what the `Range` asks to continue from.
    let offset: Int64
    let headerLines: [String]
    let configuration: ConnectionConfiguration
    let cancellation: CancellationFlag
    /// The SHA-256 of the file's bytes before the body starts; every byte written is added to it.
    let hash: RunningHash
    let progress: @Sendable (DownloadProgress) -> Void

    /// Body bytes written to the file by this attempt.
    private(set) var written: Int64 = 0
    private var status = 0
    private var headers: [(name: String, value: String)] = []
    private var descriptor: Int32 = -1
    /// Where the body starts in the file: `offset` for a 206, 0 for a 200.
    private var base: Int64 = 0
    private var total: Int64?
    private var decided = false
    private var errorBody: [UInt8] = []
    private var localError: AttacheError?

    init(
        url: String, partialPath: String, offset: Int64, headerLines: [String], configuration: ConnectionConfiguration,
        cancellation: CancellationFlag, hash: RunningHash, progress: @escaping @Sendable (DownloadProgress) -> Void
    ) {
        self.hash = hash
        self.url = url
        self.partialPath = partialPath
        self.offset = offset
        self.headerLines = headerLines
        self.configuration = configuration
        self.cancellation = cancellation
        self.progress = progress
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    func run() -> Outcome {
        let easy: CurlEasy
        do {
            easy = try CurlHandleCache.shared.take()
        } catch let error as AttacheError {
            return .failed(error.at(.download), retryAfter: nil)
        } catch {
            return .failed(AttacheError(.internalError, stage: .download, "\(error)"), retryAfter: nil)
        }
        defer { CurlHandleCache.shared.give(easy) }
        let context = Unmanaged.passUnretained(self).toOpaque()
        do {
            try easy.captureErrorText()
            try easy.set(CURLOPT_URL, url)
            try easy.set(CURLOPT_NOSIGNAL, true)
            try easy.set(CURLOPT_HTTPGET, true)
            try easy.setWriteFunction(downloadWriteCallback)
            try easy.set(CURLOPT_WRITEDATA, pointer: context)
            try easy.setHeaderFunction(downloadHeaderCallback)
            try easy.set(CURLOPT_HEADERDATA, pointer: context)
            try easy.set(CURLOPT_NOPROGRESS, false)
            try easy.setProgressFunction(downloadProgressCallback)
            try easy.set(CURLOPT_XFERINFODATA, pointer: context)
            try easy.set(CURLOPT_BUFFERSIZE, 256 * 1024)
            var lines = headerLines
            if offset > 0 { lines.append("Range: bytes=\(offset)-") }
            try easy.setHeaders(lines)
            try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout.milliseconds))
            try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
            try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(configuration.stallTimeout.seconds.rounded(.up))))
            try easy.set(CURLOPT_TCP_KEEPALIVE, true)
            // Downloads often sit behind a redirect (a CDN, a signed URL); uploads never follow one.
            try easy.set(CURLOPT_FOLLOWLOCATION, true)
            try easy.set(CURLOPT_MAXREDIRS, 5)
            try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
            try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            try easy.set(CURLOPT_SSL_VERIFYPEER, true)
            try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
            if let caFile = configuration.caFile { try easy.set(CURLOPT_CAINFO, caFile) }
            if let pin = configuration.pinnedPublicKey { try easy.set(CURLOPT_PINNEDPUBLICKEY, pin) }
            if configuration.preferHTTP2 { try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)) }
        } catch let error as AttacheError {
            return .failed(error.at(.download), retryAfter: nil)
        } catch {
            return .failed(AttacheError(.internalError, stage: .download, "\(error)"), retryAfter: nil)
        }

        progress(DownloadProgress(receivedBytes: offset, totalBytes: nil))
        let (code, text) = easy.perform()
        if descriptor >= 0 {
            let closed = close(descriptor)
            descriptor = -1
            if closed != 0, localError == nil {
                localError = AttacheError(
                    .fileUnwritable, stage: .download, "cannot write the download: \(String(cString: strerror(errno)))",
                    file: partialPath, cause: NativeError.posix())
            }
        }
        if cancellation.isSet {
            return .failed(AttacheError(.cancelled, stage: .download, "the download was cancelled"), retryAfter: nil)
        }
        if let localError { return .failed(localError, retryAfter: nil) }

        if status == 416 {
            // Nothing left after `offset`: complete when the file is exactly that long, else the
            // .part is longer than the file (another version): start over.
            if let size = contentRangeTotal(), size == offset, offset > 0 {
                return .complete(total: size, etag: header("ETag"))
            }
            unlink(partialPath)
            return .failed(
                AttacheError(
                    .corruptInput, stage: .download, "the partial file does not fit the server's file; starting over",
                    file: url, isRetryable: true),
                retryAfter: nil)
        }
        if code != CURLE_OK {
            var error = CurlTransfer.classify(code: code, text: text, bodySent: 0, total: 0).at(.download)
            if error.code == .connectionLost {
                error.message = "connection lost after \(base + written) bytes: \(text)"
            }
            return .failed(error, retryAfter: nil)
        }
        switch status {
        case 200, 206:
            let end = base + written
            if let expected = total, expected != end {
                return .failed(
                    AttacheError(
                        .connectionLost, stage: .download, "the answer ended after \(end) of \(expected) bytes",
                        file: url, isRetryable: true),
                    retryAfter: nil)
            }
            if !decided {
                // An empty 200: make (or empty) the file so the rename finds it.
                let fd = open(partialPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                if fd >= 0 { close(fd) }
            }
            return .complete(total: end, etag: header("ETag"))
        case 408, 425, 429, 500...599:
            return .failed(
                AttacheError(
                    .rejected, stage: .download, "the server answered \(status)\(bodyExcerpt())", file: url,
                    isRetryable: true),
                retryAfter: header("Retry-After").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                    .map { .seconds($0) })
        default:
            return .failed(
                AttacheError(.rejected, stage: .download, "the server answered \(status)\(bodyExcerpt())", file: url),
                retryAfter: nil)
        }
    }

    // MARK: Callback bodies (called on the transfer's thread)

    fileprivate func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        switch HeaderLine(bytes) {
        case .status(let code):
            // A new response (after a redirect or 100 Continue): only the last one counts.
            headers.removeAll()
            status = code
        case .field(let name, let value):
            headers.append((name, value))
        case .other:
            break
        }
    }

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        if cancellation.isSet { return 0 }
        if !decided {
            decided = true
            // Returning less than was given makes curl stop the transfer; `localError` says why.
            guard decide() else { return 0 }
        }
        guard descriptor >= 0 else { return collect(bytes) }
        var done = 0
        while done < bytes.count {
            let n = write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                localError = AttacheError(
                    .fileUnwritable, stage: .download, "cannot write the download: \(String(cString: strerror(errno)))",
                    file: partialPath, cause: NativeError.posix())
                return 0
            }
            done += n
        }
        do {
            try hash.append(bytes)
        } catch {
            localError = AttacheError(.nativeLibrary, stage: .download, "SHA-256 of the download failed: \(error)")
            return 0
        }
        written += Int64(bytes.count)
        return bytes.count
    }

    /// Opens the file for the answer now known; false (with `localError` set) when it cannot be used.
    private func decide() -> Bool {
        switch status {
        case 206:
            guard let range = contentRange(), range.start == offset else {
                localError = AttacheError(
                    .badResponse, stage: .download,
                    "the server answered a range other than the one asked for (\(header("Content-Range") ?? "none"))",
                    file: url, isRetryable: true)
                unlink(partialPath)
                return false
            }
            base = offset
            total = range.total
            descriptor = open(partialPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            if descriptor >= 0, lseek(descriptor, off_t(offset), SEEK_SET) < 0 {
                close(descriptor)
                descriptor = -1
            }
        case 200:
            base = 0
            total = header("Content-Length").flatMap { Int64($0) }
            descriptor = open(partialPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            do {
                try hash.reset()
            } catch {
                localError = AttacheError(.nativeLibrary, stage: .download, "SHA-256 of the download failed: \(error)")
                return false
            }
        default:
            return true  // an error answer: its body is collected, the file is left alone
        }
        guard descriptor >= 0 else {
            localError = AttacheError(
                .fileUnwritable, stage: .download, "cannot open \(partialPath): \(String(cString: strerror(errno)))",
                file: partialPath, cause: NativeError.posix())
            return false
        }
        return true
    }

    private func collect(_ bytes: UnsafeRawBufferPointer) -> Int {
        if errorBody.count < 4096 { errorBody.append(contentsOf: bytes.prefix(4096 - errorBody.count)) }
        return bytes.count
    }

    fileprivate func progress(downloaded: Int64, expected: Int64) -> Int32 {
        if cancellation.isSet { return 1 }
        guard decided, descriptor >= 0 else { return 0 }
        progress(DownloadProgress(receivedBytes: base + written, totalBytes: total ?? (expected > 0 ? base + expected : nil)))
        return 0
    }

    private func header(_ name: String) -> String? {
        headers.last { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// `Content-Range: bytes START-END/TOTAL`.
    private func contentRange() -> (start: Int64, total: Int64?)? {
        guard let value = header("Content-Range"), value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6)
        guard let dash = spec.firstIndex(of: "-"), let start = Int64(spec[..<dash]) else { return nil }
        let total = spec.firstIndex(of: "/").flatMap { Int64(spec[spec.index(after: $0)...]) }
        return (start, total)
    }

    /// The TOTAL of `Content-Range: bytes */TOTAL` (a 416's answer).
    private func contentRangeTotal() -> Int64? {
        guard let value = header("Content-Range"), let slash = value.firstIndex(of: "/") else { return nil }
        return Int64(value[value.index(after: slash)...])
    }

    private func bodyExcerpt() -> String {
        let text = String(decoding: errorBody.prefix(200), as: UTF8.self)
            .split(whereSeparator: \.isNewline).joined(separator: " ").trimmingCharacters(in: .whitespaces)
        return text.isEmpty ? "" : ": \(text)"
    }
}

extension AttacheError {
    /// The same error, attributed to `stage`.
    func at(_ stage: Stage) -> AttacheError {
        var copy = self
        copy.stage = stage
        return copy
    }
}

// MARK: C callbacks: recover the attempt from the user pointer and forward.

private func downloadWriteCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let user else { return 0 }
    let attempt = Unmanaged<DownloadAttempt>.fromOpaque(user).takeUnretainedValue()
    return attempt.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
}

private func downloadHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let user else { return 0 }
    let attempt = Unmanaged<DownloadAttempt>.fromOpaque(user).takeUnretainedValue()
    attempt.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}

private func downloadProgressCallback(
    _ user: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloaded: curl_off_t,
    _ uploadTotal: curl_off_t, _ uploaded: curl_off_t
) -> Int32 {
    guard let user else { return 0 }
    let attempt = Unmanaged<DownloadAttempt>.fromOpaque(user).takeUnretainedValue()
    return attempt.progress(downloaded: Int64(downloaded), expected: Int64(downloadTotal))
}
