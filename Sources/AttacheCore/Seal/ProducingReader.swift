/// Something that makes output one chunk at a time: a sealed segment, a run of base64 text.
protocol ChunkProducer: AnyObject {
    /// The most bytes one call to ``produce(into:)`` writes.
    var maximumChunkSize: Int { get }
    /// Writes the next chunk into `buffer` (at least ``maximumChunkSize`` bytes) and returns its
    /// length; returns 0 only when the output has ended.
    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

/// Adapts a ``ChunkProducer`` to ``ByteReader``'s any-size reads.
///
/// When the caller's buffer can hold a whole chunk the producer writes straight into it, so a large
/// reader (the CLI, curl's read callback) pays for no extra copy, and the reader's own buffer is
/// allocated only if a smaller read ever needs it.
package final class ProducingReader: ByteReader {
    private let producer: any ChunkProducer
    private let chunkSize: Int
    private var storage: UnsafeMutableRawBufferPointer?
    private var start = 0
    private var end = 0
    private var finished = false

    init(_ producer: any ChunkProducer) {
        self.producer = producer
        chunkSize = producer.maximumChunkSize
    }

    deinit { storage?.deallocate() }

    package func read(into target: UnsafeMutableRawBufferPointer) throws -> Int {
        guard target.count > 0 else { return 0 }
        let buffer: UnsafeMutableRawBufferPointer
        if let storage {
            buffer = storage
        } else {
            if target.count >= chunkSize {
                guard !finished else { return 0 }
                let n = try producer.produce(into: target)
                if n == 0 { finished = true }
                return n
            }
            buffer = .allocate(byteCount: chunkSize, alignment: 16)
            storage = buffer
        }
        if start == end {
            guard !finished else { return 0 }
            if target.count >= buffer.count {
                let n = try producer.produce(into: target)
                if n == 0 { finished = true }
                return n
            }
            start = 0
            end = try producer.produce(into: buffer)
            if end == 0 {
                finished = true
                return 0
            }
        }
        let n = min(target.count, end - start)
        target.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: n)
        start += n
        return n
    }
}

// Every sealed length is computed from the plaintext's declared length, so a source that yields a
// different number of bytes must fail rather than produce a body that contradicts Content-Length.
extension ByteReader {
    /// Reads exactly `buffer.count` bytes or throws.
    func readExactly(into buffer: UnsafeMutableRawBufferPointer) throws {
        let n = try readFully(into: buffer)
        guard n == buffer.count else {
            throw AttacheError(
                .fileChanged, stage: .seal, "the plaintext ended before its declared length", isRetryable: true)
        }
    }

    /// Confirms that the source has ended; a file source also checks it was not modified meanwhile.
    func expectEnd() throws {
        var probe: UInt8 = 0
        let n = try withUnsafeMutableBytes(of: &probe) { try read(into: $0) }
        guard n == 0 else {
            throw AttacheError(
                .fileChanged, stage: .seal, "the plaintext is longer than its declared length", isRetryable: true)
        }
    }
}
