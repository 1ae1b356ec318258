/// An asynchronous sequence of byte chunks, type-erased so that an ``Attachment`` can hold any.
package struct AttachmentStream: Sendable {
    private let drain: @Sendable (_ consume: ([UInt8]) throws -> Void) async throws -> Void

    /// Wraps `chunks`; it is iterated once, when the attachment is sent, in the sending task (so the
    /// producer is asked for the next chunk only when the last one was stored: no buffering between).
    package init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element == [UInt8] {
        drain = { consume in
            for try await chunk in chunks { try consume(chunk) }
        }
    }

    /// Hands every chunk to `consume`, in order.
    func forEachChunk(_ consume: ([UInt8]) throws -> Void) async throws {
        try await drain(consume)
    }
}
