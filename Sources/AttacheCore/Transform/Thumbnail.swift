/// A small JPEG preview of an image or sticker, sent as its own multipart part.
package struct Thumbnail: Sendable {
    /// The part name: `thumbnail` (≤ 320 px) or `thumbnailTiny` (≈ 40 px).
    package var name: String
    /// The part's filename.
    package var filename: String
    /// Always `image/jpeg`.
    package var mimeType: String
    /// The JPEG bytes.
    package var bytes: [UInt8]
    /// The preview's width.
    package var width: Int
    /// The preview's height.
    package var height: Int

    /// Creates a thumbnail.
    package init(name: String, filename: String, mimeType: String, bytes: [UInt8], width: Int, height: Int) {
        self.name = name
        self.filename = filename
        self.mimeType = mimeType
        self.bytes = bytes
        self.width = width
        self.height = height
    }

    package init(side: Int, bytes: [UInt8], width: Int, height: Int) {
        let tiny = side <= 64
        self.init(name: tiny ? "thumbnailTiny" : "thumbnail", filename: tiny ? "thumbnail-tiny.jpg" : "thumbnail.jpg",
                  mimeType: "image/jpeg", bytes: bytes, width: width, height: height)
    }
}
