internal import CZlib

/// gzip (RFC 1952) of a body held in memory: an OTLP export with `Content-Encoding: gzip`.
enum Gzip {
    /// `input` compressed in one call, at zlib's fastest level: span batches are repetitive (the same
    /// attribute names in every span) and shrink several times even so, and the CPU an export takes is
    /// what tracing costs a busy process.
    /// - Throws: ``SpanExportFailure`` naming zlib's code when zlib fails (out of memory).
    static func compress(_ input: [UInt8]) throws(SpanExportFailure) -> [UInt8] {
        var stream = z_stream()
        let start = attache_deflate_init_gzip(&stream, Z_BEST_SPEED)
        guard start == Z_OK else { throw SpanExportFailure("zlib error \(start)") }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))))
        let status = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw SpanExportFailure("zlib error \(status)") }
        output.removeLast(Int(stream.avail_out))
        return output
    }
}
