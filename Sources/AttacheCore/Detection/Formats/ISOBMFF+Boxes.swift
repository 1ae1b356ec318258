/// The box reader under ``ISOBMFF``: box headers, the lazy walk over a parent's children, and what is
/// gathered per track.
extension ISOBMFF {
    struct Box {
        /// The four-character type as stored (big-endian), compared with ``fourCharCode(_:)``.
        var type: UInt32
        var start: Int64
        var payload: Int64
        var end: Int64
    }

    struct Track {
        var handler: UInt32 = 0
        var codec: String?
        var width: Int?
        var height: Int?
        var rotation = 0
        var timescale = 0
        var duration: Int64 = 0
        var sampleRate: Int?
        var channels: Int?
    }

    final class Walker {
        let source: SniffSource
        var visited = 0
        init(_ source: SniffSource) { self.source = source }

        /// The boxes directly inside `start..<end`, read one header at a time as they are iterated
        /// (no array is built); at most a few thousand in all per file.
        func children(_ start: Int64, _ end: Int64) -> Children {
            Children(walker: self, offset: start, end: end)
        }

        /// The next box header at `offset` inside a parent ending at `end`, or nil.
        func box(at offset: Int64, end: Int64) -> Box? {
            guard offset <= end - 8, visited < 2000 else { return nil }
            visited += 1
            guard let size32 = source.be32(at: offset), let typeCode = source.be32(at: offset + 4) else { return nil }
            var size = Int64(size32)
            var headerLength: Int64 = 8
            if size32 == 1 {
                guard let large = source.bytes(at: offset + 8, count: 8).be64(0), large <= UInt64(Int64.max) else { return nil }
                size = Int64(large)
                headerLength = 16
            } else if size32 == 0 {
                size = end - offset
            }
            guard size >= headerLength else { return nil }
            // A box that claims to run past its parent is cut at the parent's end (truncated file).
            let boxEnd = size > end - offset ? end : offset + size
            return Box(type: UInt32(truncatingIfNeeded: typeCode), start: offset, payload: offset + headerLength, end: boxEnd)
        }

        func read(_ box: Box, count: Int) -> ByteSpan {
            source.bytes(at: box.payload, count: Int(min(Int64(count), box.end - box.payload)))
        }
    }

    /// The child boxes of one parent, walked lazily.
    struct Children: Sequence, IteratorProtocol {
        let walker: Walker
        var offset: Int64
        let end: Int64

        mutating func next() -> Box? {
            guard let box = walker.box(at: offset, end: end) else { return nil }
            offset = box.end
            return box
        }

        /// The first child of type `type`.
        func first(_ type: StaticString) -> Box? {
            let code = fourCharCode(type)
            return first { $0.type == code }
        }
    }
}
