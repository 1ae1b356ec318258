internal import CZlib

/// The first bytes of a raw DEFLATE (RFC 1951) stream, decoded by zlib's `inflate`, so that detection
/// can tell a TGS sticker (gzip of Lottie JSON) from any other gzip.
///
/// zlib is linked already (libpng needs it, in both executables), and its decoder has had decades of
/// fuzzing that a hand-written one has not. At most `limit` bytes are produced, whatever the input
/// claims (a gzip bomb's head costs `limit` bytes and one call), and the input is only read.
enum Inflater {
    /// Why decoding stopped.
    enum End: Equatable, Sendable {
        /// The stream's final block ended.
        case streamEnd
        /// `limit` bytes were produced; the rest was not decoded.
        case limitReached
        /// The input ended inside the stream (a file's head holds only its beginning).
        case inputEnded
        /// The stream is not valid DEFLATE from this point on; zlib's message.
        case corrupt(String)
    }

    /// What was decoded and why decoding stopped.
    struct Head: Sendable {
        /// The bytes decoded before the end, at most `limit`: on ``End/corrupt(_:)`` the output that
        /// preceded the bad data, which is a hint for sniffing, never data to trust.
        var bytes: [UInt8]
        /// Why decoding stopped.
        var end: End
    }

    /// zlib could not be used at all.
    enum Failure: Error, Equatable, Sendable {
        /// `inflateInit2` failed with this zlib code (`Z_MEM_ERROR`, `Z_VERSION_ERROR`).
        case initialization(code: Int32)
    }

    /// Inflates the raw DEFLATE stream at `input[start...]`, producing at most `limit` bytes.
    /// - Throws: ``Failure`` only when zlib cannot start; bad data is an ``End/corrupt(_:)`` head.
    static func inflate(_ input: ByteSpan, from start: Int, limit: Int) throws(Failure) -> Head {
        guard start >= 0, start < input.count, limit > 0 else { return Head(bytes: [], end: .inputEnded) }
        // On the heap: zlib keeps the stream's address in its state and refuses a stream that moved.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        defer { stream.deallocate() }
        let status = attache_inflate_init_raw(stream)
        guard status == Z_OK else { throw .initialization(code: status) }
        defer { inflateEnd(stream) }
        var output = [UInt8](repeating: 0, count: limit)
        let result: Int32 = input.withUnsafeBytes { whole in
            // zlib's next_in is not const (for old compilers); inflate only reads through it.
            stream.pointee.next_in = UnsafeMutableRawPointer(mutating: whole.baseAddress!).advanced(by: start)
                .assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_in = uInt(whole.count - start)
            return output.withUnsafeMutableBufferPointer { buffer in
                stream.pointee.next_out = buffer.baseAddress
                stream.pointee.avail_out = uInt(buffer.count)
                // One call decodes until the output is full, the input ends, the stream ends or the
                // data is bad: Z_FINISH only says that no more input will follow.
                let code = CZlib.inflate(stream, Z_FINISH)
                stream.pointee.next_in = nil
                stream.pointee.next_out = nil
                return code
            }
        }
        let produced = limit - Int(stream.pointee.avail_out)
        output.removeSubrange(produced...)
        let end: End
        switch result {
        case Z_STREAM_END:
            end = .streamEnd
        case Z_DATA_ERROR, Z_NEED_DICT:
            end = .corrupt(stream.pointee.msg.map { String(cString: $0) } ?? "invalid deflate data")
        default:
            // Z_BUF_ERROR or Z_OK: the output is full or the input ran out first.
            end = stream.pointee.avail_out == 0 ? .limitReached : .inputEnded
        }
        return Head(bytes: output, end: end)
    }
}
