/// Where an image's thumbnails go.
public enum ThumbnailPlacement: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// As extra parts of the attachment's own request (`thumbnail`, `thumbnailTiny`), after its file part.
    case inline
    /// Each in a request of its own, after the attachment was stored, with the attachment's form fields and
    /// the thumbnail as the one file part (named like the attachment's), under an idempotency key derived
    /// from the attachment's. Each gets its own receipt (``UploadReceipt/thumbnails``).
    case separate
    /// Not made, not sent (`none` on the command line).
    case omitted = "none"

    /// The name used on the command line.
    public var description: String { rawValue }
}
