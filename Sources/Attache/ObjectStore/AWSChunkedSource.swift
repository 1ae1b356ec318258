internal import AttacheCore
import FoundationEssentials

/// A part's bytes in S3's `aws-chunked` encoding with its checksum in a trailer
/// (`x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER`): each chunk as its size in hex, CRLF, the
/// bytes, CRLF; then the empty chunk `0` CRLF, the trailer `x-amz-checksum-ALG:BASE64` CRLF, and CRLF.
///
/// The checksum is summed as the transport pulls the bytes through the reader, so the part is read (and
/// sealed) once per attempt; the trailer carries it and ``checksum`` keeps it for the completion. The
/// length of every chunk and of the trailer is known in advance, so the encoded body has an exact
/// `Content-Length` like any other.
struct AWSChunkedSource: ByteSource {
    /// The bytes of each chunk but the last one's, unless given: 64 MiB, so that a part of up to that
    /// size is one chunk. S3 takes chunks of any size from 8 KiB, and a server that joins a body's
    /// chunks by copying pays for every extra one: moto's decoder, which appends chunk by chunk, spent
    /// 72 ms of CPU on a 16 MiB part in 1 MiB chunks and 2.5 ms on the same part in one.
    static let defaultChunkSize: Int64 = 64 << 20

    /// The bytes of each chunk but the last one's.
    let chunkSize: Int64

    /// The part.
    let decoded: any ByteSource
    let algorithm: MultipartSettings.ChecksumAlgorithm
    /// What the last reader put in the trailer.
    let checksum = StreamedChecksum()

    init(_ decoded: any ByteSource, algorithm: MultipartSettings.ChecksumAlgorithm, chunkSize: Int64 = defaultChunkSize) {
        self.decoded = decoded
        self.algorithm = algorithm
        self.chunkSize = max(8 << 10, chunkSize)
    }

    /// The request headers that announce the encoding (the signer adds `x-amz-content-sha256`).
    var headers: [HeaderField] {
        [
            HeaderField(name: "Content-Encoding", value: "aws-chunked"),
            HeaderField(name: "x-amz-decoded-content-length", value: String(decoded.byteCount)),
            HeaderField(name: "x-amz-trailer", value: algorithm.headerName),
            HeaderField(name: "x-amz-sdk-checksum-algorithm", value: algorithm.s3Name),
        ]
    }

    /// `x-amz-content-sha256` of a body sent this way.
    static let payloadHash = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"

    var byteCount: Int64 { Self.encodedByteCount(decoded.byteCount, algorithm: algorithm, chunkSize: chunkSize) }

    /// The encoded length of `count` bytes in chunks of `chunkSize`.
    static func encodedByteCount(
        _ count: Int64, algorithm: MultipartSettings.ChecksumAlgorithm, chunkSize: Int64 = defaultChunkSize
    ) -> Int64 {
        var total: Int64 = 0
        let whole = count / chunkSize
        total += whole * (Int64(String(chunkSize, radix: 16).utf8.count) + 4 + chunkSize)
        let rest = count % chunkSize
        if rest > 0 { total += Int64(String(rest, radix: 16).utf8.count) + 4 + rest }
        let trailer = algorithm.headerName.utf8.count + 1 + Base64.encodedCount(algorithm.digestByteCount, padded: true)
        return total + 3 + Int64(trailer) + 4
    }

    func makeReader() throws -> any ByteReader {
        Reader(inner: try decoded.makeReader(), left: decoded.byteCount, summer: try PartChecksummer(algorithm), source: self)
    }

    private final class Reader: ByteReader {
        let inner: any ByteReader
        let source: AWSChunkedSource
        var summer: PartChecksummer
        /// Part bytes not read yet.
        var left: Int64
        /// Part bytes left in the current chunk.
        var inChunk: Int64 = 0
        /// Framing to hand out before anything else.
        var pending: [UInt8] = []
        var pendingAt = 0
        /// Whether the trailer is queued (nothing follows it).
        var finished = false

        init(inner: any ByteReader, left: Int64, summer: PartChecksummer, source: AWSChunkedSource) {
            self.inner = inner
            self.left = left
            self.summer = summer
            self.source = source
        }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            var written = 0
            while written < buffer.count {
                if pendingAt < pending.count {
                    let n = min(buffer.count - written, pending.count - pendingAt)
                    pending.withUnsafeBytes { bytes in
                        (buffer.baseAddress! + written).copyMemory(from: bytes.baseAddress! + pendingAt, byteCount: n)
                    }
                    pendingAt += n
                    written += n
                    continue
                }
                if inChunk > 0 {
                    let want = Int(min(Int64(buffer.count - written), inChunk))
                    let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[written..<(written + want)])
                    let n = try inner.read(into: slice)
                    if n == 0 {
                        throw AttacheError(.fileChanged, stage: .read, "the part ended before its length", isRetryable: true)
                    }
                    try summer.update(UnsafeRawBufferPointer(rebasing: slice[..<n]))
                    inChunk -= Int64(n)
                    left -= Int64(n)
                    written += n
                    if inChunk == 0 { try queueNext(after: true) }
                    continue
                }
                if finished { break }
                try queueNext(after: false)
            }
            return written
        }

        /// Queues the next chunk's size line, or the last chunk and the trailer (with the CRLF that ends
        /// the chunk just sent).
        private func queueNext(after chunk: Bool) throws {
            var text = chunk ? "\r\n" : ""
            if left > 0 {
                inChunk = min(source.chunkSize, left)
                text += String(inChunk, radix: 16) + "\r\n"
            } else {
                let value = Base64.encode(try summer.finish())
                source.checksum.set(value)
                text += "0\r\n" + source.algorithm.headerName + ":" + value + "\r\n\r\n"
                finished = true
            }
            pending = Array(text.utf8)
            pendingAt = 0
        }
    }
}
