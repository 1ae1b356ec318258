import Glibc
internal import CFingerprint

/// A re-openable source of bytes whose exact length is known before the first byte is read.
///
/// Every stage after Transform is a `ByteSource` wrapping the one before it (file → sealer →
/// base64), so the uploader can state an exact `Content-Length` and pull the body in bounded chunks.
/// Opening a source again yields the same bytes: that is what makes a retried upload identical.
public protocol ByteSource: Sendable {
    /// The exact number of bytes every reader of this source produces.
    var byteCount: Int64 { get }

    /// Opens a new reader positioned at the first byte.
    /// - Throws: ``AttacheError`` when the underlying file cannot be opened.
    func makeReader() throws -> any ByteReader

    /// Opens a new reader positioned at byte `offset` (0 ≤ offset ≤ ``byteCount``): what a resumed
    /// upload sends from the server's offset. The default reads and discards the bytes before
    /// `offset`; files seek, and sealed `stream-gcm` payloads start at the segment holding `offset`
    /// without sealing the segments before it.
    /// - Throws: ``AttacheError`` when the source cannot be opened or read.
    func makeReader(startingAt offset: Int64) throws -> any ByteReader
}

extension ByteSource {
    /// Reads and discards the first `offset` bytes of a new reader: the default for sources that
    /// cannot start elsewhere.
    /// - Throws: ``AttacheError`` when the source cannot be opened or read.
    public func makeReader(startingAt offset: Int64) throws -> any ByteReader {
        let reader = try makeReader()
        try reader.skip(offset)
        return reader
    }
}

extension ByteReader {
    /// Reads and discards `count` bytes.
    /// - Throws: what reading throws; ``AttacheError/Code/fileChanged`` when the source ends first.
    package func skip(_ count: Int64) throws {
        guard count > 0 else { return }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        defer { buffer.deallocate() }
        var left = count
        while left > 0 {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(left, Int64(buffer.count)))]))
            if n == 0 {
                throw AttacheError(.fileChanged, stage: .read, "the source ended before the resume offset", isRetryable: false)
            }
            left -= Int64(n)
        }
    }
}

/// The bytes `offset ..< offset + count` of another source: one chunk of a resumable upload. Opening
/// it opens the base at `offset` (see ``ByteSource/makeReader(startingAt:)``), so a chunk sent again
/// costs only its own bytes.
package struct ByteSourceSlice: ByteSource {
    /// The whole source.
    package let base: any ByteSource
    /// Where the slice starts in `base`.
    package let offset: Int64
    /// The slice's length.
    package let byteCount: Int64

    /// Creates the slice `offset ..< offset + count` of `base` (clamped to its end).
    package init(_ base: any ByteSource, offset: Int64, count: Int64) {
        self.base = base
        self.offset = max(0, min(offset, base.byteCount))
        self.byteCount = max(0, min(count, base.byteCount - self.offset))
    }

    package func makeReader() throws -> any ByteReader {
        LimitedReader(base: try base.makeReader(startingAt: offset), limit: byteCount)
    }

    package func makeReader(startingAt offset: Int64) throws -> any ByteReader {
        let start = max(0, min(offset, byteCount))
        return LimitedReader(base: try base.makeReader(startingAt: self.offset + start), limit: byteCount - start)
    }

    private final class LimitedReader: ByteReader {
        let base: any ByteReader
        var left: Int64

        init(base: any ByteReader, limit: Int64) {
            self.base = base
            self.left = limit
        }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard left > 0, buffer.count > 0 else { return 0 }
            let want = Int(min(Int64(buffer.count), left))
            let n = try base.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]))
            if n == 0 {
                throw AttacheError(.fileChanged, stage: .read, "the source ended inside a chunk", isRetryable: true)
            }
            left -= Int64(n)
            return n
        }
    }
}

/// One pass over a ``ByteSource``, used by one thread at a time.
public protocol ByteReader: AnyObject {
    /// Copies up to `buffer.count` bytes into `buffer` and returns how many; returns 0 only at the end.
    /// - Throws: ``AttacheError`` when reading fails or the source no longer matches its length.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

extension ByteReader {
    /// Reads until `buffer` is full or the source ends; returns how many bytes were read.
    public func readFully(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var filled = 0
        while filled < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            if n == 0 { break }
            filled += n
        }
        return filled
    }
}

extension ByteReader {
    /// Reads to the end and returns every byte; for small sources (tests, fuzzing, verification).
    public func readToEnd() throws -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try chunk.withUnsafeMutableBytes { try read(into: $0) }
            if n == 0 { return result }
            result += chunk[..<n]
        }
    }
}

/// Bytes held in memory: form fields, small parts, tests.
package struct DataSource: ByteSource {
    /// The bytes.
    package let bytes: [UInt8]

    /// Creates a source over `bytes`.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }
    /// Creates a source over the UTF-8 bytes of `string`.
    package init(_ string: String) { self.bytes = Array(string.utf8) }

    package var byteCount: Int64 { Int64(bytes.count) }

    package func makeReader() throws -> any ByteReader { Reader(bytes: bytes) }

    private final class Reader: ByteReader {
        let bytes: [UInt8]
        var offset = 0
        init(bytes: [UInt8]) { self.bytes = bytes }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let n = min(buffer.count, bytes.count - offset)
            guard n > 0 else { return 0 }
            bytes.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: n)
            }
            offset += n
            return n
        }
    }
}

/// A file on disk, read with plain `read(2)` in the caller's chunk size.
///
/// The size and modification time are taken when the source is created. A reader that finds the file
/// shorter or longer than that, or modified since, fails with ``AttacheError/Code/fileChanged``
/// instead of sending a body that contradicts its `Content-Length`.
///
/// Size and modification time do not see every change: a same-size rewrite that puts the old time back
/// (`rsync --inplace -t`, `touch -r`) passes them. With `verifiesContent`, a reader also fingerprints
/// the bytes it hands out and, just before handing out the last ones, reads the file again and compares:
/// a file whose bytes changed while it was read fails with `.fileChanged` while the last bytes are
/// still held back, so a torn copy never completes. That costs a non-cryptographic hash of the bytes
/// (several GB/s) and, unless the kernel can vouch that nobody wrote the file meanwhile (a local file
/// system, no process with the file open for writing at the start or the end, a status-change time that
/// did not move: see `WriterWatch`), a second read of the file, usually from the page cache.
package struct FileSource: ByteSource {
    /// The file's path.
    package let path: String
    /// The size seen when the source was created.
    package let byteCount: Int64
    /// The modification time seen when the source was created, in nanoseconds since the epoch.
    package let modificationTime: Int64
    /// Whether readers check the content itself before handing out the last byte.
    package let verifiesContent: Bool

    /// Creates a source for the file at `path`, recording its size and modification time.
    /// - Parameter verifiesContent: fingerprint the bytes as they are read and compare them with a
    ///   second read before the last ones are handed out (see above).
    /// - Throws: ``AttacheError`` with `.fileNotFound` or `.fileUnreadable`.
    package init(path: String, verifiesContent: Bool = false) throws {
        var info = stat()
        guard PlatformPath.withCString(path, { stat($0, &info) }) == 0 else {
            throw AttacheError.system("cannot stat the file", stage: .read, file: path, missing: "no such file")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw AttacheError(.fileUnreadable, stage: .read, "not a regular file", file: path)
        }
        self.path = path
        self.byteCount = Int64(info.st_size)
        self.modificationTime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        self.verifiesContent = verifiesContent
    }

    package func makeReader() throws -> any ByteReader {
        try Reader(source: self)
    }

    /// Seeks instead of reading: a reader from `offset` (its content check, when asked for, covers
    /// only readers from the start).
    package func makeReader(startingAt offset: Int64) throws -> any ByteReader {
        guard offset > 0 else { return try Reader(source: self) }
        return try Reader(source: FileSource(copying: self, verifiesContent: false), offset: min(offset, byteCount))
    }

    /// The SHA-256 of the file's whole content as it is now: the content's identity, which tells that two
    /// files hold the same bytes (and, read twice, that one did not change in between).
    /// - Throws: ``AttacheError`` from opening or reading, `.fileChanged` when the size changed.
    package func contentSHA256() throws -> [UInt8] {
        let reader = try Reader(source: FileSource(copying: self, verifiesContent: false))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        let digest = try SHA256Digest()
        while true {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            try digest.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }
        return try digest.finish()
    }

    /// A fingerprint of the file's whole content as it is now (a fast non-cryptographic hash), to tell
    /// whether the bytes changed between two moments.
    /// - Throws: ``AttacheError`` from opening or reading, `.fileChanged` when the size changed.
    package func contentFingerprint() throws -> UInt64 {
        let reader = try Reader(source: FileSource(copying: self, verifiesContent: false))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var hash = ContentFingerprint()
        while true {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            hash.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }
        return hash.value
    }

    private init(copying other: FileSource, verifiesContent: Bool) {
        path = other.path
        byteCount = other.byteCount
        modificationTime = other.modificationTime
        self.verifiesContent = verifiesContent
    }

    /// How a reader with ``verifiesContent`` made sure the bytes it handed out are the file's.
    package enum ContentCheck: Sendable, Equatable {
        /// Nobody had the file open for writing when it was opened nor when its last bytes were read,
        /// and its status-change time did not move (``WriterWatch``): no second read was needed.
        case unwrittenSinceOpened
        /// The file was read a second time and its fingerprint compared.
        case readAgain
    }

    /// How `reader` (made by a source with ``verifiesContent``) checked the content, once it has
    /// handed out its last byte; nil before that or for other readers.
    package static func contentCheck(of reader: any ByteReader) -> ContentCheck? {
        (reader as? Reader)?.contentCheck
    }

    private final class Reader: ByteReader {
        let source: FileSource
        let descriptor: Int32
        var remaining: Int64
        var fingerprint: ContentFingerprint?
        /// When the kernel can vouch that the file was not written while it was read, the second read
        /// is skipped (``WriterWatch``).
        var watch: WriterWatch?
        /// How the content was checked before the last bytes went out, once they have.
        var contentCheck: ContentCheck?

        init(source: FileSource, offset: Int64 = 0) throws {
            self.source = source
            let fd = try FileDescriptor.openForReading(source.path, stage: .read)
            self.descriptor = fd
            self.remaining = source.byteCount - offset
            self.fingerprint = source.verifiesContent ? ContentFingerprint() : nil
            if source.verifiesContent {
                watch = WriterWatch(
                    descriptor: fd, expectedSize: source.byteCount, expectedModification: source.modificationTime)
            }
            if offset > 0, lseek(fd, off_t(offset), SEEK_SET) != off_t(offset) {
                let failure = AttacheError.system("cannot seek in the file", stage: .read, file: source.path)
                close(fd)
                throw failure
            }
            _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        }

        deinit { close(descriptor) }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard buffer.count > 0 else { return 0 }
            if remaining == 0 {
                // One more byte past the recorded size means the file grew.
                var probe: UInt8 = 0
                let extra = Glibc.read(descriptor, &probe, 1)
                if extra > 0 { throw changed("the file grew while it was being read") }
                try checkUnmodified()
                return 0
            }
            let want = Int(min(Int64(buffer.count), remaining))
            while true {
                let n = Glibc.read(descriptor, buffer.baseAddress, want)
                if n > 0 {
                    remaining -= Int64(n)
                    if fingerprint != nil {
                        fingerprint!.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
                        // The last bytes stay here until a second read agrees with what was handed out.
                        if remaining == 0 { try verifyContent() }
                    }
                    return n
                }
                if n == 0 { throw changed("the file shrank while it was being read") }
                if errno == EINTR { continue }
                throw AttacheError.system("read failed", stage: .read, file: source.path)
            }
        }

        /// Reads the whole file again and compares its fingerprint with the bytes read so far.
        private func verifyContent() throws {
            try checkUnmodified()
            if let watch, watch.fileIsUnchanged(descriptor: descriptor) {
                contentCheck = .unwrittenSinceOpened
                return
            }
            contentCheck = .readAgain
            let again = try source.contentFingerprint()
            guard again == fingerprint?.value else {
                throw changed("the file's bytes changed while it was being read")
            }
        }

        private func checkUnmodified() throws {
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { return }
            let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            if mtime != source.modificationTime || Int64(info.st_size) != source.byteCount {
                throw changed("the file was modified while it was being read")
            }
        }

        private func changed(_ message: String) -> AttacheError {
            AttacheError(.fileChanged, stage: .read, message, file: source.path, isRetryable: true)
        }
    }
}

/// Several sources one after the other, as one source.
package struct ConcatenatedSource: ByteSource {
    /// The parts, in order.
    package let parts: [any ByteSource]

    /// Creates a source that yields every part in order.
    package init(_ parts: [any ByteSource]) { self.parts = parts }

    package var byteCount: Int64 { parts.reduce(0) { $0 + $1.byteCount } }

    package func makeReader() throws -> any ByteReader { Reader(parts: parts) }

    private final class Reader: ByteReader {
        let parts: [any ByteSource]
        var index = 0
        var current: (any ByteReader)?
        init(parts: [any ByteSource]) { self.parts = parts }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            while index < parts.count {
                if current == nil { current = try parts[index].makeReader() }
                let n = try current!.read(into: buffer)
                if n > 0 { return n }
                current = nil
                index += 1
            }
            return 0
        }
    }
}

/// A fast non-cryptographic 64-bit hash of a byte stream, for telling whether a file's bytes changed
/// between two reads (not for anything an adversary chooses: the writer of the file could simply write
/// other bytes). Four independent multiply-rotate lanes over 8-byte words, so the CPU runs them in
/// parallel; the same bytes give the same value however they are split into updates.
struct ContentFingerprint {
    // Eight independent lanes: each round is a multiply chain, so eight lanes keep the multiplier busy
    // where four left it waiting on the chains' latency (about twice the bytes per second).
    private var lanes: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (
        0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0x85EB_CA77_C2B2_AE63,
        0x27D4_EB2F_1656_67C5, 0x94D0_49BB_1331_11EB, 0xBF58_476D_1CE4_E5B9, 0xD6E8_FEB8_6659_FD93
    )
    /// The AES-round lanes of the fast method (CFingerprint), when this CPU has AES-NI; empty otherwise.
    private var fastLanes: [UInt64]
    private var pending = [UInt8]()
    private var total: UInt64 = 0
    private static let prime: UInt64 = 0x9FB2_1C65_1E98_DF25
    /// Whether this process fingerprints with AES rounds (about ten times the bytes per second of the
    /// multiply lanes below). One process uses one method for every read it compares.
    private static let fast = attache_fingerprint_fast_available() != 0
    private static let block = fast ? 128 : 64

    init() {
        if Self.fast {
            fastLanes = [UInt64](repeating: 0, count: 16)
            fastLanes.withUnsafeMutableBufferPointer { attache_fingerprint_fast_init($0.baseAddress) }
        } else {
            fastLanes = []
        }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        total &+= UInt64(bytes.count)
        var rest = bytes
        if !pending.isEmpty {
            let take = min(Self.block - pending.count, rest.count)
            pending += rest[..<take]
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            guard pending.count == Self.block else { return }
            pending.withUnsafeBytes { mix($0) }
            pending.removeAll(keepingCapacity: true)
        }
        let whole = rest.count & ~(Self.block - 1)
        if whole > 0 { mix(UnsafeRawBufferPointer(rebasing: rest[..<whole])) }
        if whole < rest.count { pending += rest[whole...] }
    }

    private mutating func mix(_ blocks: UnsafeRawBufferPointer) {
        if Self.fast {
            fastLanes.withUnsafeMutableBufferPointer { lanes in
                attache_fingerprint_fast_blocks(
                    lanes.baseAddress, blocks.baseAddress?.assumingMemoryBound(to: UInt8.self), blocks.count)
            }
            return
        }
        var (a, b, c, d, e, f, g, h) = lanes
        var offset = 0
        while offset < blocks.count {
            a = Self.round(a, blocks.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            b = Self.round(b, blocks.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            c = Self.round(c, blocks.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
            d = Self.round(d, blocks.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self))
            e = Self.round(e, blocks.loadUnaligned(fromByteOffset: offset + 32, as: UInt64.self))
            f = Self.round(f, blocks.loadUnaligned(fromByteOffset: offset + 40, as: UInt64.self))
            g = Self.round(g, blocks.loadUnaligned(fromByteOffset: offset + 48, as: UInt64.self))
            h = Self.round(h, blocks.loadUnaligned(fromByteOffset: offset + 56, as: UInt64.self))
            offset += Self.block
        }
        lanes = (a, b, c, d, e, f, g, h)
    }

    @inline(__always)
    private static func round(_ lane: UInt64, _ word: UInt64) -> UInt64 {
        let mixed = (lane ^ word) &* prime
        return (mixed << 31) | (mixed >> 33)
    }

    var value: UInt64 {
        var copy = self
        if !pending.isEmpty {
            var tail = pending
            tail += [UInt8](repeating: 0, count: Self.block - tail.count)
            tail.withUnsafeBytes { copy.mix($0) }
        }
        if Self.fast {
            return copy.fastLanes.withUnsafeBufferPointer { attache_fingerprint_fast_value($0.baseAddress, total) }
        }
        let (a, b, c, d, e, f, g, h) = copy.lanes
        var result = total &* Self.prime
        for lane in [a, b, c, d, e, f, g, h] {
            result = (result ^ lane) &* Self.prime
            result ^= result >> 29
        }
        return result
    }
}
