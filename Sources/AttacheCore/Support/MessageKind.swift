/// What a chat shows an attachment as.
///
/// The pipeline decides the kind from the content (`MIMEDetector`); a caller may declare a kind,
/// which is checked against the content and never trusted blindly.
public enum MessageKind: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// A photo or picture, recompressed to JPEG.
    case image
    /// A voice note: audio meant for speech.
    case voice
    /// A video clip.
    case video
    /// A sticker: WebP/TGS/WebM, small and square-ish.
    case sticker
    /// Anything else, sent as it is.
    case file

    /// The kind's name, as the CLI and receipts spell it (`voice`).
    public var description: String { rawValue }
}
