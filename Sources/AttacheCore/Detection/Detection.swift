/// The result of detecting one file: its type, the message kind it will be sent as, and the
/// metadata read from its headers.
///
/// ```swift
/// let detection = try MIMEDetector().detect(fileAt: "IMG_0001.jpg")
/// print(detection.mimeType, detection.kind, detection.metadata.width ?? 0)
/// if detection.mismatch { print("extension says \(detection.extensionMIMEType ?? "?")") }
/// ```
public struct Detection: Sendable, Equatable, Codable {
    /// The IANA media type decided from the content (`image/jpeg`, `audio/ogg`, …), without
    /// parameters. `application/octet-stream` when neither content nor extension says anything,
    /// `application/x-empty` for an empty file.
    public var mimeType: String
    /// The message kind the attachment will be sent as (after checking a declared kind).
    public var kind: MessageKind
    /// The type the filename's extension stands for, when the extension is known.
    public var extensionMIMEType: String?
    /// Whether content and extension disagree, ignoring harmless differences (an `.mp4` holding
    /// only audio, a `.png` that is an APNG, a `.zip` that is a DOCX, a `.txt` holding JSON).
    public var mismatch: Bool
    /// The kind the caller declared, if any.
    public var declaredKind: MessageKind?
    /// False when a declared kind contradicted the content; ``kind`` is then the policy's result.
    /// True when nothing was declared.
    public var declaredKindAccepted: Bool
    /// Sizes, duration, codecs and flags read from the headers.
    public var metadata: MediaMetadata
    /// The usual filename extension for ``mimeType``, without a dot (`jpg`, `ogg`, `docx`).
    public var preferredFilenameExtension: String?

    /// Creates a detection result.
    package init(
        mimeType: String, kind: MessageKind, extensionMIMEType: String? = nil, mismatch: Bool = false,
        declaredKind: MessageKind? = nil, declaredKindAccepted: Bool = true,
        metadata: MediaMetadata = MediaMetadata(), preferredFilenameExtension: String? = nil
    ) {
        self.mimeType = mimeType
        self.kind = kind
        self.extensionMIMEType = extensionMIMEType
        self.mismatch = mismatch
        self.declaredKind = declaredKind
        self.declaredKindAccepted = declaredKindAccepted
        self.metadata = metadata
        self.preferredFilenameExtension = preferredFilenameExtension
    }

    /// Form fields for the upload, derived from the detection.
    ///
    /// Always `mimeType` and `kind`; then, when known, in this order: `width`, `height`,
    /// `orientation`, `rotation`, `hasAlpha`, `isAnimated`, `frameCount`, `duration` (seconds with
    /// two decimals, e.g. `3.52`), `audioCodec`, `videoCodec`, `sampleRate`, `channels`,
    /// `textEncoding`, `title`, `performer`, `album`. Booleans are `true`/`false`. The names are
    /// stable. The values describe the source file; a transform that resizes an image should replace `width` and `height`.
    package var uploadFields: [UploadField] {
        var result = [
            UploadField(name: "mimeType", value: mimeType),
            UploadField(name: "kind", value: kind.rawValue),
        ]
        for field in metadata.fields { result.append(UploadField(name: field.name, value: field.value)) }
        return result
    }
}
