internal import AttacheCore
import FoundationEssentials
import Glibc

/// Where one download attempt's answer goes: appended to the `.part` file, hashed as it is written.
/// A ``ResponseSink``, called on the transport's thread.
///
/// The answer decides what happens to the file at its head: 206 whose `Content-Range` starts at the
/// file's end is appended; 200 (the server ignored the range, or there was none) replaces it; anything
/// else is collected as an error body and never touches it.
final class DownloadSink: ResponseSink, @unchecked Sendable {
    enum Outcome {
        case complete(total: Int64, etag: String?)
        case failed(AttacheError, retryAfter: Duration?)
    }

    let url: String
    let partialPath: String
    /// The size of the `.part` file when the attempt started: what the `Range` asks to continue from.
    let offset: Int64
    /// The SHA-256 of the file's bytes before the body starts; every byte written is added to it
    /// while ``hashing``.
    let hash: RunningHash
    /// Hash the body whatever the answer says (``DownloadRequest/DigestPolicy/always``, or a digest
    /// the caller expects); otherwise only when the `ETag` is a SHA-256 to check it against.
    let hashAlways: Bool
    /// Whether this attempt's body goes into ``hash``: decided at the head, and only when the hash
    /// covers exactly the bytes before the body (otherwise the bytes are read back at the end).
    private(set) var hashing = false
    let progress: @Sendable (DownloadProgress) -> Void

    /// Body bytes written to the file by this attempt.
    private(set) var written: Int64 = 0
    private var status = 0
    private var headers: [HeaderField] = []
    private var file = ResponseBodyFile()
    /// Where the body starts in the file: `offset` for a 206, 0 for a 200.
    private(set) var base: Int64 = 0
    private var total: Int64?
    private var decided = false
    private var errorBody: [UInt8] = []
    private var localError: AttacheError?

    init(
        url: String, partialPath: String, offset: Int64, hash: RunningHash, hashAlways: Bool = true,
        progress: @escaping @Sendable (DownloadProgress) -> Void
    ) {
        self.hash = hash
        self.hashAlways = hashAlways
        self.url = url
        self.partialPath = partialPath
        self.offset = offset
        self.base = offset
        self.progress = progress
    }

    var failure: AttacheError? { localError }

    /// The validator of the bytes this attempt writes (strong `ETag`, else `Last-Modified`), once a
    /// 200 or 206 answer started; nil before, or for an error answer.
    private(set) var validator: String?
    var collectedBody: [UInt8] { errorBody }
    var bodyExceededCap: Bool { false }

    func begin(status: Int, headers: [HeaderField]) -> Bool {
        self.status = status
        self.headers = headers
        decided = true
        return decide()
    }

    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        receiveBody(bytes) == bytes.count
    }

    func progress(sent: Int64, received: Int64, expectedReceive: Int64?) {
        guard decided, file.isOpen else { return }
        progress(
            DownloadProgress(
                receivedBytes: base + written, totalBytes: total ?? expectedReceive.map { base + $0 },
                validator: validator))
    }

    /// Closes the file; throws when the last writes failed to reach it.
    func closeFile() throws {
        if let code = file.close(), localError == nil {
            localError = AttacheError.system("cannot write the download", errno: code, .fileUnwritable, stage: .download, file: partialPath)
        }
        if let localError { throw localError }
    }

    /// What the final answer means for the download.
    func verdict(for response: ServerResponse, classifier: RetryClassifier) -> Outcome {
        let status = response.status
        if !decided {
            self.status = status
            self.headers = response.headers
        }
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
                var empty = ResponseBodyFile()
                _ = empty.open(partialPath)
                _ = empty.close()
            }
            return .complete(total: end, etag: header("ETag"))
        case _ where classifier.isRetryable(response):
            return .failed(refusal(status: status, retryable: true), retryAfter: classifier.retryAfter(in: response))
        default:
            return .failed(refusal(status: status, retryable: false), retryAfter: nil)
        }
    }

    /// The error of an error answer. An object store's XML `<Error>` (`NoSuchKey`, `SignatureDoesNotMatch`,
    /// `AccessDenied`) is named by its code and message, with the refusal as the cause; any other body is
    /// quoted in part.
    private func refusal(status: Int, retryable: Bool) -> AttacheError {
        if XMLAnswerReader.looksLikeXML(errorBody), let xml = XMLAnswerReader.read(errorBody), xml.root == "Error",
            let code = xml.value["Code"]?.stringValue, !code.isEmpty
        {
            let message = xml.value["Message"]?.stringValue.map { String($0.prefix(300)) } ?? "no message"
            let rejection = Rejection(reason: .status, status: status, businessCode: String(code.prefix(100)), message: message)
            return AttacheError(
                .rejected, stage: .download, "the store answered \(rejection)", file: url, isRetryable: retryable,
                cause: RejectionError(rejection: rejection))
        }
        let excerpt = bodyExcerpt()
        let rejection = Rejection(
            reason: .status, status: status, message: excerpt.isEmpty ? "no message" : String(excerpt.dropFirst(2)))
        return AttacheError(
            .rejected, stage: .download, "the server answered \(status)\(bodyExcerpt())", file: url, isRetryable: retryable,
            cause: RejectionError(rejection: rejection))
    }

    // MARK: Writing (transport thread)

    private func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        if !decided {
            decided = true
            // Returning less than was given makes curl stop the transfer; `localError` says why.
            guard decide() else { return 0 }
        }
        guard file.isOpen else { return collect(bytes) }
        if let code = file.write(bytes) {
            localError = AttacheError.system("cannot write the download", errno: code, .fileUnwritable, stage: .download, file: partialPath)
            return 0
        }
        do {
            if hashing { try hash.append(bytes) }
        } catch {
            localError = AttacheError(.nativeLibrary, stage: .download, "SHA-256 of the download failed: \(error)")
            return 0
        }
        written += Int64(bytes.count)
        return bytes.count
    }

    /// Opens the file for the answer now known; false (with `localError` set) when it cannot be used.
    private func decide() -> Bool {
        var openFailure: Int32?
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
            openFailure = file.open(partialPath, at: offset)
        case 200:
            base = 0
            total = header("Content-Length").flatMap { Int64($0) }
            openFailure = file.open(partialPath)
            do {
                try hash.reset()
            } catch {
                localError = AttacheError(.nativeLibrary, stage: .download, "SHA-256 of the download failed: \(error)")
                return false
            }
        default:
            return true  // an error answer: its body is collected, the file is left alone
        }
        validator = Self.validator(etag: header("ETag"), lastModified: header("Last-Modified"))
        hashing =
            (hashAlways || header("ETag").flatMap(DownloadRun.sha256ETag) != nil) && hash.count == base
        if file.isOpen {
            progress(DownloadProgress(receivedBytes: base, totalBytes: total, validator: validator))
        }
        if let openFailure {
            localError = AttacheError.system("cannot open \(partialPath)", errno: openFailure, .fileUnwritable, stage: .download, file: partialPath)
            return false
        }
        return true
    }

    /// The `If-Range` value for bytes served with these headers: a strong `ETag` (a weak one may not
    /// be used there), else the `Last-Modified` date, else nothing.
    static func validator(etag: String?, lastModified: String?) -> String? {
        if let etag = etag?.trimmingBlanks, !etag.isEmpty, !etag.hasPrefix("W/") { return etag }
        if let date = lastModified?.trimmingBlanks, !date.isEmpty { return date }
        return nil
    }

    private func collect(_ bytes: UnsafeRawBufferPointer) -> Int {
        if errorBody.count < 4096 { errorBody.append(contentsOf: bytes.prefix(4096 - errorBody.count)) }
        return bytes.count
    }

    private func header(_ name: String) -> String? {
        headers.last { $0.name.equalsIgnoringASCIICase(name) }?.value
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
            .split(whereSeparator: \.isNewline).joined(separator: " ").trimmingBlanks
        return text.isEmpty ? "" : ": \(text)"
    }
}
