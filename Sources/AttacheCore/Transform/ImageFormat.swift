/// The format an image is recompressed to.
public enum ImageFormat: String, Sendable, Codable, CaseIterable {
    /// JPEG, 4:2:0, no metadata: what chats send photos as.
    case jpeg
    /// Lossy WebP, with alpha when the source has it: what stickers are sent as.
    case webp

    /// The IANA media type of the format.
    package var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .webp: "image/webp"
        }
    }

    /// The usual filename extension, without the dot.
    package var filenameExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .webp: "webp"
        }
    }
}

/// Image containers the Transform stage can read, recognised from their first bytes.
enum SniffedImageFormat: String, Sendable {
    case jpeg, png, webp, gif, bmp

    init?(_ bytes: some Collection<UInt8>) {
        let head = Array(bytes.prefix(12))
        func starts(_ prefix: [UInt8]) -> Bool { head.count >= prefix.count && head.starts(with: prefix) }
        if starts([0xFF, 0xD8, 0xFF]) {
            self = .jpeg
        } else if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            self = .png
        } else if head.count == 12, starts(Array("RIFF".utf8)), head[8..<12].elementsEqual("WEBP".utf8) {
            self = .webp
        } else if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) {
            self = .gif
        } else if starts(Array("BM".utf8)), head.count >= 6 {
            self = .bmp
        } else {
            return nil
        }
    }

    /// The IANA media type.
    var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .webp: "image/webp"
        case .gif: "image/gif"
        case .bmp: "image/bmp"
        }
    }
}
