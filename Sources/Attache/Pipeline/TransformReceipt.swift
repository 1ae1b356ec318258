/// What the Transform stage did to one attachment.
public struct TransformReceipt: Sendable, Codable, Hashable {
    /// True when the file was recompressed (or made a sticker); false when it went as it was.
    public var recompressed: Bool
    /// The size after Transform, before sealing.
    public var byteCount: Int64
    /// The image's width after Transform, for images and stickers.
    public var width: Int?
    /// The image's height after Transform.
    public var height: Int?
    /// The form names of the thumbnail parts sent inline with the attachment (thumbnails sent in requests
    /// of their own are in ``UploadReceipt/thumbnails``).
    public var thumbnails: [String]
    /// Set when an image was meant to be recompressed but went as it is, because the Transform stage
    /// could not read it (``AttacheCore/TransformErrorPolicy/sendOriginal``): the error code and message. Absent
    /// otherwise (and in receipts written before this field existed).
    public var skipped: String?
    /// Which path the Transform stage took and why, for media and images: what the source lacked
    /// (`encoded: rotated 90°; video 8.0 Mbps is over the 1.0 Mbps cap`) or why it could go as it is
    /// (`compliant: …`), and, when sizes decided, both sizes and which was sent. Nothing is sent larger
    /// than its source unless this says why. Absent for files, which always go as they are.
    public var reason: String?
    /// For video, voice and animations: what the converter did and found; absent for other kinds.
    public var media: MediaReceipt?
    /// True when this file's bytes were those of another file of the same run, whose transform this send
    /// took rather than repeat it (``PipelineConfiguration/sharesTransforms``); absent otherwise.
    public var reused: Bool?

    /// Creates a transform receipt.
    package init(recompressed: Bool, byteCount: Int64, width: Int? = nil, height: Int? = nil, thumbnails: [String] = [],
                skipped: String? = nil, media: MediaReceipt? = nil, reason: String? = nil) {
        self.recompressed = recompressed
        self.byteCount = byteCount
        self.width = width
        self.height = height
        self.thumbnails = thumbnails
        self.skipped = skipped
        self.media = media
        self.reason = reason
    }
}
