import Glibc
internal import CLibc

/// `stream-gcm` from one file to another on every core, with positioned reads and writes.
///
/// Where each segment lies in the plaintext and in the sealed file is a pure function of the plaintext
/// length (and of the sealed length when opening), so the file is cut into runs of
/// ``segmentsPerRun`` segments that any thread may read, seal and write at their own offsets: no
/// ordering between threads, no hand-off of buffers. On two cores this overlaps one thread's GCM with
/// the other's page-cache copies, which cost about as much. Memory is one run buffer per thread.
///
/// The bytes written are exactly those of ``StreamGCMSealProducer``; only the order of the writes
/// differs, which nobody sees because the output is a temporary file renamed into place on success.
enum StreamGCMFiles {
    /// 6 segments (384 KiB of plaintext): large enough to amortise two system calls (3, 6, 12 and 24
    /// measured within noise of each other), small enough that a run stays in a core's L2 cache between
    /// the read, the encryption and the write and that `attache encrypt` stays near 13 MB of RSS; a
    /// multiple of 3 so that a run's sealed length is also a whole number of base64 quanta.
    static let segmentsPerRun = 6
    static let runPlaintextCount = segmentsPerRun * StreamGCM.segmentPlaintextCount
    static let runSealedCount = segmentsPerRun * StreamGCM.segmentCount

    /// Seals the file of `source` into `output` (an empty file, written from offset 0).
    /// - Throws: ``AttacheError`` `.fileChanged` when the file is not the length or age `source`
    ///   recorded, `.fileUnreadable`/`.fileNotFound` for the input, `.fileUnwritable` naming
    ///   `outputPath` for the output.
    static func seal(plan: StreamGCMSealPlan, source: FileSource, to output: Int32, outputPath: String) throws {
        let input = try InputFile(source)
        let plaintextCount = source.byteCount
        let segmentTotal = StreamGCM.segments(forPlaintextCount: plaintextCount)
        guard segmentTotal <= Int64(UInt32.max) + 1 else {
            throw AttacheError(.limitExceeded, stage: .seal, "the plaintext is too large for stream-gcm (256 TiB)")
        }
        let out = OutputFile(descriptor: output, path: outputPath)
        reserveSpace(output, count: StreamGCM.sealedCount(forPlaintextCount: plaintextCount))
        try plan.header.withUnsafeBytes { try out.write($0.baseAddress!, count: $0.count, at: 0) }
        let runCount = (segmentTotal + Int64(segmentsPerRun) - 1) / Int64(segmentsPerRun)
        try ParallelRuns.run(jobCount: runCount, threads: ParallelRuns.threadCount(forJobs: runCount)) {
            let worker = try SealWorker(plan: plan, input: input, output: out, segmentTotal: segmentTotal)
            return { run in try worker.seal(run: run) }
        }
        try input.checkUnchanged()
    }

    /// Opens the `stream-gcm` file of `source` into `output` when it is intact, and returns false
    /// without a specific error when anything about it is wrong (header, key, lengths, a tag), or the
    /// file changed: the caller then runs the sequential reader, which names exactly what is wrong.
    /// Every segment is verified before its plaintext is written.
    /// - Throws: ``AttacheError`` for I/O errors only.
    static func open(key: AttachmentKey, source: FileSource, to output: Int32, outputPath: String) throws -> Bool {
        let input = try InputFile(source)
        let sealedCount = source.byteCount
        let bodyCount = sealedCount - Int64(StreamGCM.headerCount)
        guard bodyCount >= Int64(StreamGCM.tagCount) else { return false }
        var header = [UInt8](repeating: 0, count: StreamGCM.headerCount)
        guard try header.withUnsafeMutableBytes({ try input.read(into: $0.baseAddress!, count: $0.count, at: 0) }) else {
            return false
        }
        let saltEnd = 5 + StreamGCM.saltCount
        let prefixEnd = saltEnd + StreamGCM.noncePrefixCount
        guard Array(header[..<4]) == StreamGCM.magic, header[4] == StreamGCM.version,
            !key.isPassphrase, key.bytes.count == StreamGCM.keyCount
        else { return false }
        let keys = try StreamGCM.deriveKeys(from: key, salt: Array(header[5..<saltEnd]))
        let keyMatches = keys.keyCheck.withUnsafeBytes { expected in
            header[prefixEnd...].withUnsafeBytes { constantTimeEqual(expected, $0) }
        }
        guard keyMatches else { return false }
        let segmentTotal = (bodyCount + Int64(StreamGCM.segmentCount) - 1) / Int64(StreamGCM.segmentCount)
        let lastCount = bodyCount - (segmentTotal - 1) * Int64(StreamGCM.segmentCount)
        // A final segment shorter than a tag is truncated; an empty one after data is not canonical.
        guard segmentTotal <= Int64(UInt32.max) + 1, lastCount >= Int64(StreamGCM.tagCount),
            segmentTotal == 1 || lastCount > Int64(StreamGCM.tagCount)
        else { return false }
        let layout = OpenLayout(
            noncePrefix: Array(header[saltEnd..<prefixEnd]), segmentKey: keys.segmentKey,
            sealedCount: sealedCount, segmentTotal: segmentTotal)
        let out = OutputFile(descriptor: output, path: outputPath)
        reserveSpace(output, count: bodyCount - Int64(StreamGCM.tagCount) * segmentTotal)
        let runCount = (segmentTotal + Int64(segmentsPerRun) - 1) / Int64(segmentsPerRun)
        do {
            try ParallelRuns.run(jobCount: runCount, threads: ParallelRuns.threadCount(forJobs: runCount)) {
                let worker = try OpenWorker(layout: layout, input: input, output: out)
                return { run in try worker.open(run: run) }
            }
            try input.checkUnchanged()
        } catch is NotVerified {
            return false
        } catch let error as AttacheError where error.code == .fileChanged {
            return false
        }
        return true
    }

    /// Allocates the output's blocks up front, its length being known: ext4 then skips the delayed
    /// allocation bookkeeping of every page written (4–8 % of the wall time of a 1 GiB seal here), and a
    /// full disk fails at once. Where the file system cannot, nothing changes.
    private static func reserveSpace(_ descriptor: Int32, count: Int64) {
        if count > 0 { _ = attache_reserve_file_space(descriptor, count) }
    }

    /// Thrown by an ``OpenWorker`` when a segment does not verify; never leaves this file.
    private struct NotVerified: Error {}

    private struct OpenLayout: Sendable {
        let noncePrefix: [UInt8]
        let segmentKey: SecureBytes
        let sealedCount: Int64
        let segmentTotal: Int64
    }

    /// One thread's cipher context and run buffer for sealing.
    private final class SealWorker {
        private let plan: StreamGCMSealPlan
        private let input: InputFile
        private let output: OutputFile
        private let segmentTotal: Int64
        private let cipher: CipherContext
        /// Segment `i` of a run is read to offset `i × 65,552`, sealed in place, its tag written after it.
        private let buffer: UnsafeMutableRawBufferPointer
        private let nonce: UnsafeMutableRawBufferPointer
        private let vectors: UnsafeMutableBufferPointer<iovec>

        init(plan: StreamGCMSealPlan, input: InputFile, output: OutputFile, segmentTotal: Int64) throws {
            self.plan = plan
            self.input = input
            self.output = output
            self.segmentTotal = segmentTotal
            let cipher = try CipherContext()
            try plan.keys.segmentKey.withUnsafeBytes { try cipher.start(.aes256GCM, encrypt: true, key: $0, iv: nil) }
            self.cipher = cipher
            // Allocated after everything that can throw, so a failed init leaks nothing.
            buffer = .allocate(byteCount: StreamGCMFiles.runSealedCount, alignment: 64)
            let nonce = UnsafeMutableRawBufferPointer.allocate(byteCount: StreamGCM.noncePrefixCount + 5, alignment: 8)
            plan.noncePrefix.withUnsafeBytes { nonce.copyMemory(from: $0) }
            self.nonce = nonce
            vectors = .allocate(capacity: StreamGCMFiles.segmentsPerRun)
        }

        deinit {
            buffer.deallocate()
            nonce.deallocate()
            vectors.deallocate()
        }

        func seal(run: Int64) throws {
            let first = run * Int64(StreamGCMFiles.segmentsPerRun)
            let segments = Int(min(Int64(StreamGCMFiles.segmentsPerRun), segmentTotal - first))
            let plainOffset = first * Int64(StreamGCM.segmentPlaintextCount)
            let plainCount = Int(min(input.count - plainOffset, Int64(StreamGCMFiles.runPlaintextCount)))
            try readSpread(count: plainCount, segments: segments, at: plainOffset)
            var sealed = 0
            for index in 0..<segments {
                let count = min(StreamGCM.segmentPlaintextCount, plainCount - index * StreamGCM.segmentPlaintextCount)
                let counter = first + Int64(index)
                let at = buffer.baseAddress! + index * StreamGCM.segmentCount
                StreamGCM.setNonce(nonce, counter: UInt32(counter), last: counter == segmentTotal - 1)
                try cipher.start(nil, encrypt: true, key: nil, iv: UnsafeRawBufferPointer(nonce))
                var written = count > 0 ? try cipher.update(at, count: count, output: at) : 0
                let final = cipher.finish(output: at + written)
                guard final.ok else { throw AttacheError.openSSL("EVP_CipherFinal_ex") }
                written += final.written
                try cipher.tag(into: at + written, count: StreamGCM.tagCount)
                sealed += written + StreamGCM.tagCount
            }
            try output.write(
                buffer.baseAddress!, count: sealed, at: Int64(StreamGCM.headerCount) + first * Int64(StreamGCM.segmentCount))
        }

        /// Reads `count` plaintext bytes at `offset` into the run's segment slots: one `preadv` for the
        /// whole run, then plain `pread`s for whatever a short read left.
        private func readSpread(count: Int, segments: Int, at offset: Int64) throws {
            for index in 0..<segments {
                let start = index * StreamGCM.segmentPlaintextCount
                vectors[index] = iovec(
                    iov_base: buffer.baseAddress! + index * StreamGCM.segmentCount,
                    iov_len: min(StreamGCM.segmentPlaintextCount, count - start))
            }
            var done = count == 0 ? 0 : preadv(input.descriptor, vectors.baseAddress, Int32(segments), off_t(offset))
            if done < 0 {
                guard errno == EINTR else { throw input.readFailed(errno) }
                done = 0
            }
            while done < count {
                let (index, within) = done.quotientAndRemainder(dividingBy: StreamGCM.segmentPlaintextCount)
                let end = min((index + 1) * StreamGCM.segmentPlaintextCount, count)
                let at = buffer.baseAddress! + index * StreamGCM.segmentCount + within
                guard try input.read(into: at, count: end - done, at: offset + Int64(done)) else {
                    throw input.changed("the file shrank while it was being read")
                }
                done = end
            }
        }
    }

    /// One thread's cipher context and buffers for opening.
    private final class OpenWorker {
        private let layout: OpenLayout
        private let input: InputFile
        private let output: OutputFile
        private let cipher: CipherContext
        private let sealed: UnsafeMutableRawBufferPointer
        private let plain: UnsafeMutableRawBufferPointer
        private let nonce: UnsafeMutableRawBufferPointer

        init(layout: OpenLayout, input: InputFile, output: OutputFile) throws {
            self.layout = layout
            self.input = input
            self.output = output
            let cipher = try CipherContext()
            try layout.segmentKey.withUnsafeBytes { try cipher.start(.aes256GCM, encrypt: false, key: $0, iv: nil) }
            self.cipher = cipher
            sealed = .allocate(byteCount: StreamGCMFiles.runSealedCount, alignment: 64)
            plain = .allocate(byteCount: StreamGCMFiles.runPlaintextCount, alignment: 64)
            let nonce = UnsafeMutableRawBufferPointer.allocate(byteCount: StreamGCM.noncePrefixCount + 5, alignment: 8)
            layout.noncePrefix.withUnsafeBytes { nonce.copyMemory(from: $0) }
            self.nonce = nonce
        }

        deinit {
            sealed.deallocate()
            plain.deallocate()
            nonce.deallocate()
        }

        func open(run: Int64) throws {
            let first = run * Int64(StreamGCMFiles.segmentsPerRun)
            let segments = Int(min(Int64(StreamGCMFiles.segmentsPerRun), layout.segmentTotal - first))
            let sealedOffset = Int64(StreamGCM.headerCount) + first * Int64(StreamGCM.segmentCount)
            let sealedCount = Int(min(layout.sealedCount - sealedOffset, Int64(StreamGCMFiles.runSealedCount)))
            guard try input.read(into: sealed.baseAddress!, count: sealedCount, at: sealedOffset) else {
                throw NotVerified()
            }
            var opened = 0
            for index in 0..<segments {
                let start = index * StreamGCM.segmentCount
                let body = min(StreamGCM.segmentCount, sealedCount - start) - StreamGCM.tagCount
                let counter = first + Int64(index)
                StreamGCM.setNonce(nonce, counter: UInt32(counter), last: counter == layout.segmentTotal - 1)
                try cipher.start(nil, encrypt: false, key: nil, iv: UnsafeRawBufferPointer(nonce))
                let from = sealed.baseAddress! + start
                let to = plain.baseAddress! + opened
                var written = body > 0 ? try cipher.update(from, count: body, output: to) : 0
                try cipher.expectTag(from + body, count: StreamGCM.tagCount)
                let final = cipher.finish(output: to + written)
                guard final.ok else { throw NotVerified() }
                written += final.written
                opened += written
            }
            try output.write(plain.baseAddress!, count: opened, at: first * Int64(StreamGCM.segmentPlaintextCount))
        }
    }
}

/// The input file of a ``StreamGCMFiles`` job, read with `pread` by several threads at once.
private final class InputFile: Sendable {
    let source: FileSource
    let descriptor: Int32
    var count: Int64 { source.byteCount }

    init(_ source: FileSource) throws {
        self.source = source
        let fd = try FileDescriptor.openForReading(source.path, stage: .read)
        descriptor = fd
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
    }

    deinit { close(descriptor) }

    /// Reads exactly `count` bytes at `offset`; returns false when the file ends first.
    func read(into start: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws -> Bool {
        var done = 0
        while done < count {
            let n = FileDescriptor.read(
                descriptor, into: UnsafeMutableRawBufferPointer(start: start + done, count: count - done),
                at: offset + Int64(done))
            if n == 0 { return false }
            guard n > 0 else { throw readFailed(errno) }
            done += n
        }
        return true
    }

    /// Confirms that the file still has the length and modification time recorded by its source.
    func checkUnchanged() throws {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw readFailed(errno) }
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        if Int64(info.st_size) > source.byteCount { throw changed("the file grew while it was being read") }
        if Int64(info.st_size) < source.byteCount { throw changed("the file shrank while it was being read") }
        if mtime != source.modificationTime { throw changed("the file was modified while it was being read") }
    }

    func readFailed(_ code: Int32) -> AttacheError {
        AttacheError.system("read failed", errno: code, stage: .read, file: source.path)
    }

    func changed(_ message: String) -> AttacheError {
        AttacheError(.fileChanged, stage: .read, message, file: source.path, isRetryable: true)
    }
}

/// The output file of a ``StreamGCMFiles`` job, written with `pwrite` by several threads at once.
private struct OutputFile: Sendable {
    let descriptor: Int32
    let path: String

    /// Writes `count` bytes at `offset`, retrying short writes and EINTR.
    func write(_ start: UnsafeRawPointer, count: Int, at offset: Int64) throws {
        if let code = FileDescriptor.writeAll(descriptor, UnsafeRawBufferPointer(start: start, count: count), at: offset) {
            throw AttacheError.system("write failed", errno: code, .fileUnwritable, stage: .seal, file: path)
        }
    }
}
