/// What the Transform stage makes for a client to show before the attachment arrives: the JPEG
/// thumbnails and the placeholders, from the same downscales.
package struct ImagePreviews: Sendable {
    /// The JPEG previews, one per side asked for.
    package var thumbnails: [Thumbnail]
    /// The placeholders, when they were asked for.
    package var placeholders: Placeholders?
    /// The downscale the placeholders were computed from (grey, RGB or RGBA), for tests that feed the
    /// same pixels to other implementations.
    var placeholderSource: Raster?

    /// Creates previews.
    package init(thumbnails: [Thumbnail], placeholders: Placeholders?) {
        self.thumbnails = thumbnails
        self.placeholders = placeholders
    }
}
