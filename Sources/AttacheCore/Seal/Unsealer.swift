#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Decrypts what a ``Sealer`` with the same scheme, key and transfer encoding produced.
///
/// Authenticated schemes release no plaintext that failed verification: `stream-gcm` verifies each
/// segment before releasing it, `signal` verifies the MAC over the whole blob in a first pass. Every
/// way sealed data can be wrong has its own error code (see ``AttacheError/Code``): `.sealedHeaderInvalid`,
/// `.invalidKey`, `.sealedDataTruncated`, `.sealedSegmentMisplaced`, `.authenticationFailed`,
/// `.sealedPaddingInvalid`, `.base64Invalid`.
///
/// ```swift
/// let unsealer = Unsealer(scheme: .streamGCM, key: try AttachmentKey(contentsOfFile: "photo.key"))
/// try unsealer.unseal(fileAt: "photo.sealed", to: "photo.jpg")
/// ```
public struct Unsealer: Sendable {
    /// The encryption scheme.
    public let scheme: SealScheme
    /// The key.
    public let key: AttachmentKey
    /// How the sealed bytes are represented.
    public let transferEncoding: TransferEncoding
    /// For `signal`: the real plaintext length from the receipt. When nil the bucket padding is kept.
    public let plaintextByteCount: Int64?

    /// Creates an unsealer; `plaintextByteCount` matters only for `signal`.
    public init(
        scheme: SealScheme, key: AttachmentKey, transferEncoding: TransferEncoding = .binary,
        plaintextByteCount: Int64? = nil
    ) {
        self.scheme = scheme
        self.key = key
        self.transferEncoding = transferEncoding
        self.plaintextByteCount = plaintextByteCount
    }

    /// Returns a reader of the plaintext that decrypts as it is pulled.
    ///
    /// `signal` reads `sealed` twice (MAC first), which is why this takes a re-openable source.
    /// - Throws: ``AttacheError`` — here for a bad key size, otherwise from the reader's `read`.
    public func unseal(_ sealed: any ByteSource) throws -> any ByteReader {
        let encoding = transferEncoding
        let openBinary: @Sendable () throws -> any ByteReader = {
            let raw = try sealed.makeReader()
            guard let alphabet = encoding.alphabet else { return raw }
            return ProducingReader(Base64DecodingProducer(base: raw, alphabet: alphabet))
        }
        switch scheme {
        case .streamGCM:
            return ProducingReader(
                try StreamGCMOpenProducer(key: key, sealed: try openBinary(), sealedCountBound: sealed.byteCount))
        case .signal:
            return ProducingReader(try SignalOpenProducer(key: key, plaintextCount: plaintextByteCount, openSealed: openBinary))
        case .legacyCBC, .legacyECB:
            return ProducingReader(
                try LegacyAESProducer(scheme: scheme, key: key, source: try openBinary(), encrypt: false))
        case .none:
            return try openBinary()
        }
    }

    /// Decrypts the file at `input` into `output`, streaming, in bounded memory.
    ///
    /// The plaintext goes to a temporary file beside `output`, which is renamed over `output` only when
    /// everything verified; on failure it is removed and `output` is untouched.
    /// - Throws: ``AttacheError`` naming `input` (sealed-data and key errors) or `output` (write errors).
    public func unseal(fileAt input: String, to output: String) throws {
        do {
            let source = try FileSource(path: input)
            if scheme == .streamGCM, transferEncoding == .binary, try unsealInParallel(source, to: output) { return }
            let reader = try unseal(source)
            try StreamingFileWriter.write(reader, to: output)
        } catch let error as AttacheError {
            throw error.concerning(input)
        }
    }

    /// Opens an intact `stream-gcm` file on every core; false when it is not intact (nothing is left
    /// at `output` then), so that the sequential reader runs and names what is wrong.
    private func unsealInParallel(_ source: FileSource, to output: String) throws -> Bool {
        struct NotIntact: Error {}
        do {
            try StreamingFileWriter.write(to: output) { descriptor in
                guard try StreamGCMFiles.open(key: key, source: source, to: descriptor, outputPath: output) else {
                    throw NotIntact()
                }
            }
            return true
        } catch is NotIntact {
            return false
        }
    }
}

/// Writes a reader to a file through a temporary file beside it, renamed into place on success.
enum StreamingFileWriter {
    /// - Throws: ``AttacheError`` `.fileUnwritable` naming `path`, or whatever the reader throws.
    static func write(_ reader: any ByteReader, to path: String, mode: mode_t = 0o644) throws {
        try write(to: path, mode: mode) { descriptor in
            if let code = try WriteBehind.copy(reader, to: descriptor) {
                throw unwritable(path, "write failed: \(String(cString: strerror(code)))")
            }
        }
    }

    /// Runs `body` on the descriptor of a new temporary file beside `path`, then renames it to `path`;
    /// when `body` throws, the temporary file is removed and its error rethrown.
    /// - Throws: ``AttacheError`` `.fileUnwritable` naming `path`, or whatever `body` throws.
    static func write(to path: String, mode: mode_t = 0o644, _ body: (Int32) throws -> Void) throws {
        // Split by hand: the temporary file must be in the same directory so that rename is atomic.
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? "./"
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var template = Array((directory + ".\(name).XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw unwritable(path, "cannot create a temporary file beside it") }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var renamed = false
        defer {
            if !renamed { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            try body(fd)
            guard fchmod(fd, mode) == 0 else { throw unwritable(path, "cannot set the file mode") }
        }
        guard rename(temporary, path) == 0 else {
            throw unwritable(path, "cannot rename the temporary file into place: \(String(cString: strerror(errno)))")
        }
        renamed = true
    }

    private static func unwritable(_ path: String, _ message: String) -> AttacheError {
        AttacheError(.fileUnwritable, stage: .seal, message, file: path)
    }
}

extension ByteSource {
    /// Writes every byte of the source to `path` through a temporary file renamed into place, so a
    /// failure half-way never leaves a partial file under the final name.
    ///
    /// Blocking: call it from ``BlockingPool`` in async code.
    /// ```swift
    /// try await BlockingPool.shared.run { try payload.write(toFile: "video.sealed") }
    /// ```
    /// - Throws: ``AttacheError`` from reading the source, or `.fileUnwritable` naming `path`.
    public func write(toFile path: String) throws {
        try StreamingFileWriter.write(try makeReader(), to: path)
    }
}

extension SealedPayload {
    /// Writes the sealed bytes to `path` through a temporary file renamed into place, like
    /// ``ByteSource/write(toFile:)``, and for binary `stream-gcm` of a file on every core (the bytes
    /// are the same as a reader's).
    ///
    /// Blocking: call it from ``BlockingPool`` in async code.
    /// ```swift
    /// let payload = try Sealer(scheme: .streamGCM, key: key).seal(try FileSource(path: "video.mp4"))
    /// try await BlockingPool.shared.run { try payload.write(toFile: "video.sealed") }
    /// ```
    /// - Throws: ``AttacheError`` from reading the plaintext (`.fileChanged` when the file is not what
    ///   its ``FileSource`` recorded), or `.fileUnwritable` naming `path`.
    public func write(toFile path: String) throws {
        guard case .streamGCM(let plan) = plan, transferEncoding == .binary, let file = plaintext as? FileSource else {
            return try StreamingFileWriter.write(try makeReader(), to: path)
        }
        try StreamingFileWriter.write(to: path) { descriptor in
            try StreamGCMFiles.seal(plan: plan, source: file, to: descriptor, outputPath: path)
        }
    }
}
