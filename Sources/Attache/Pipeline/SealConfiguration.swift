/// How the Seal stage encrypts attachments.
///
/// The default is `stream-gcm` with a fresh random key per attachment, returned in the receipt (the
/// ``SealReceipt/key`` of ``UploadReceipt/seal``) for the message that carries the attachment, as Signal
/// and Telegram do. With a fixed ``key``, every attachment is sealed with it and no key is put in receipts.
public struct SealConfiguration: Sendable {
    /// The encryption scheme; `.none` sends the bytes as they are.
    public var scheme: SealScheme = .streamGCM
    /// Binary or base64 on the wire.
    public var transferEncoding: TransferEncoding = .binary
    /// One key for every attachment; `nil` makes a fresh random key per attachment.
    public var key: AttachmentKey?

    /// `stream-gcm`, binary, a fresh key per attachment.
    public init() {}

    /// No encryption, binary.
    public static var none: SealConfiguration {
        var configuration = SealConfiguration()
        configuration.scheme = .none
        return configuration
    }
}
