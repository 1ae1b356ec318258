import FoundationEssentials

/// What a Matrix client sends for an attachment stored on a homeserver (``MatrixEndpoint``): the event's
/// type and its whole content, ready for the backend's Matrix SDK. Attache sends no events itself: in an
/// encrypted room, the event is encrypted with the sender's Megolm session, which only its client holds.
///
/// The content follows the client-server API's `m.room.message` (`m.image`, `m.video`, `m.audio`,
/// `m.file`) and `m.sticker`:
/// - `body` (the file name), and `file` (the `EncryptedFile` of `--scheme matrix`) or `url` (unsealed);
/// - `info`: `mimetype`, `size`, `w` and `h`, `duration` in milliseconds, the thumbnail as
///   `thumbnail_file` (sealed with a key of its own) or `thumbnail_url`, with `thumbnail_info`, and
///   the BlurHash as `xyz.amorgan.blurhash` (MSC2448);
/// - voice notes: `org.matrix.msc3245.voice` and `org.matrix.msc1767.audio` with the duration and the
///   waveform (0–1024).
///
/// The `EncryptedFile` objects carry the key (`k`) only when the receipt carries keys
/// (``UploadReceipt/seal``'s key): a message without it could not be opened.
public struct MatrixReceipt: Sendable, Codable, Hashable {
    /// `m.room.message`, or `m.sticker` for a sticker.
    public var eventType: String
    /// The event's content.
    public var content: JSONValue

    /// Creates a receipt.
    public init(eventType: String, content: JSONValue) {
        self.eventType = eventType
        self.content = content
    }
}
