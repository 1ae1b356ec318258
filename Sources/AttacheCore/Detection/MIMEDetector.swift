import Glibc

/// Decides what a file is from its content: the IANA media type, the message kind it is sent as,
/// whether its extension lies, and the metadata its headers state.
///
/// Detection reads the first 4 KiB and reads further only when a container needs it (a zip's
/// central directory, an MP4's `moov` box, a Matroska track list, an Ogg stream's last page), with a
/// hard cap on the bytes read per file. The extension is used only when the content says nothing,
/// or to refine a generic answer (text that is Markdown by name). See docs/DETECTION.md for the
/// type tree and the kind rules.
///
/// ```swift
/// let detector = MIMEDetector()
/// let detection = try detector.detect(fileAt: "voice.m4a", declaredKind: .voice)
/// // detection.mimeType == "audio/mp4", detection.kind == .voice, detection.metadata.duration == 3.52
/// ```
package struct MIMEDetector: Sendable {
    /// What happens when a caller declares a kind the content contradicts.
    package enum DeclaredKindPolicy: String, Sendable, Hashable, Codable {
        /// Send it as a file and report the lie (``Detection/declaredKindAccepted`` is false).
        case downgradeToFile
        /// Throw ``AttacheError/Code/kindMismatch``.
        case reject
    }

    /// Tunable rules for classification.
    package struct Configuration: Sendable {
        /// A WebP, or a WebM without audio, no wider and no taller than this is a sticker.
        package var stickerMaxSide = 512
        /// A WebM longer than this many seconds is a video, not a sticker.
        package var stickerMaxDuration = 3.0
        /// The kind an animated GIF is sent as (`.image`, or `.video` to have it converted).
        package var animatedGIFKind: MessageKind = .image
        /// What a contradicted declared kind leads to.
        package var declaredKindPolicy: DeclaredKindPolicy = .downgradeToFile
        /// Image types shown inline as pictures; other images (TIFF, SVG, PSD, ICO) are files.
        package var imageTypes: Set<String> = [
            "image/jpeg", "image/png", "image/apng", "image/gif", "image/webp", "image/bmp",
            "image/heic", "image/heif", "image/avif",
        ]
        /// Audio types that can be voice notes, when they look like speech (docs/DETECTION.md); other
        /// audio (FLAC, MIDI, AIFF), and music in these types, is a file.
        package var voiceTypes: Set<String> = [
            "audio/ogg", "audio/mp4", "audio/mpeg", "audio/aac", "audio/amr", "audio/amr-wb",
            "audio/wav", "audio/x-caf", "audio/webm", "audio/matroska", "audio/3gpp", "audio/3gpp2",
        ]
        /// Audio codecs that never make a voice note, whatever the container (lossless music).
        package var nonVoiceCodecs: Set<String> = ["flac", "alac"]
        /// Codecs made for speech: audio in one of them may be stereo and long and still be a voice note.
        package var voiceCodecs: Set<String> = ["opus", "speex", "amr_nb", "amr_wb", "gsm", "pcm_alaw", "pcm_mulaw"]
        /// Containers that phones and browsers record speech into (not music): audio in one of them
        /// may be long and still be a voice note.
        package var speechContainers: Set<String> = ["audio/amr", "audio/amr-wb", "audio/3gpp", "audio/3gpp2", "audio/webm"]
        /// Mono audio in another container is a voice note up to this many seconds (10 minutes); longer,
        /// it is a file (a lecture, an audiobook chapter).
        package var voiceMaxDuration = 600.0
        /// Video types sent as videos.
        package var videoTypes: Set<String> = [
            "video/mp4", "video/quicktime", "video/3gpp", "video/3gpp2", "video/webm", "video/matroska",
            "video/x-msvideo", "video/mp2t", "video/x-flv", "video/ogg", "video/mpeg", "video/x-ms-asf",
        ]
        /// The most bytes one detection may read beyond the first 4 KiB.
        package var readBudget = 8 << 20

        /// The default rules.
        package init() {}
    }

    /// How many bytes every detection reads first.
    package static let headSize = 4096

    /// The rules in use.
    package let configuration: Configuration

    /// What the rules say about each known type, computed once so that a detection costs one
    /// table lookup here instead of one per rule.
    private let facts: TypeTable<TypeFacts>

    private enum KindRule: Sendable {
        case fixed(MessageKind)
        case voiceUnlessLossless
        case webp, webm, gif
    }

    private struct TypeFacts: Sendable {
        var rule: KindRule
        var isTextual: Bool
        package var preferredExtension: String?
    }

    /// Creates a detector.
    package init(configuration: Configuration = .init()) {
        self.configuration = configuration
        var facts: [(key: String, value: TypeFacts)] = []
        var types = Set(MIMETable.byExtension.values).union(MIMETable.preferredExtension.keys).union(MIMETable.parent.keys)
        types.formUnion(configuration.imageTypes)
        types.formUnion(configuration.voiceTypes)
        types.formUnion(configuration.videoTypes)
        for type in types {
            let rule: KindRule
            switch type {
            case "application/x-tgsticker": rule = .fixed(.sticker)
            case "image/webp": rule = .webp
            case "video/webm": rule = .webm
            case "image/gif": rule = .gif
            default:
                if configuration.imageTypes.contains(type) {
                    rule = .fixed(.image)
                } else if configuration.voiceTypes.contains(type) {
                    rule = .voiceUnlessLossless
                } else if configuration.videoTypes.contains(type) {
                    rule = .fixed(.video)
                } else {
                    rule = .fixed(.file)
                }
            }
            facts.append((type, TypeFacts(
                rule: rule, isTextual: MIMETable.isTextual(type), preferredExtension: MIMETable.preferredExtension[type])))
        }
        self.facts = TypeTable(facts)
    }

    /// Detects the file at `path` with blocking, bounded reads.
    ///
    /// An empty file is `application/x-empty` of kind `.file` and is not an error: an empty
    /// attachment is unusual but valid, and the content cannot contradict its extension.
    ///
    /// - Parameters:
    ///   - path: the file to read.
    ///   - declaredKind: the kind the caller wants to send it as; checked against the content.
    /// - Throws: ``AttacheError`` at stage `.detect` naming the file: `.fileNotFound`,
    ///   `.fileUnreadable` (also for directories and other non-regular files), or `.kindMismatch`
    ///   when `declaredKind` contradicts the content and the policy is ``DeclaredKindPolicy/reject``.
    package func detect(fileAt path: String, declaredKind: MessageKind? = nil) throws -> Detection {
        var scratch: [UInt8] = []
        return try detect(fileAt: path, declaredKind: declaredKind, reusing: &scratch)
    }

    /// Detects the file at `path` exactly as ``detect(fileAt:declaredKind:)`` does, reading its
    /// first bytes into `scratch`, which keeps its storage between calls: a caller detecting many
    /// files in a row saves an allocation per file.
    ///
    /// The file is opened, read once (``headSize`` bytes at most; containers read further only when
    /// they need to) and closed. Its size is asked of the system only when that first read filled
    /// the head or found nothing; a shorter read is the whole of a regular file.
    ///
    /// ```swift
    /// var scratch: [UInt8] = []
    /// for path in paths {
    ///     let detection = try detector.detect(fileAt: path, reusing: &scratch)
    ///     print(path, detection.mimeType)
    /// }
    /// ```
    /// - Throws: the same errors as ``detect(fileAt:declaredKind:)``.
    package func detect(fileAt path: String, declaredKind: MessageKind? = nil, reusing scratch: inout [UInt8]) throws -> Detection {
        let descriptor = try FileDescriptor.openForReading(path, stage: .detect)
        defer { close(descriptor) }
        if scratch.count != Self.headSize { scratch = [UInt8](repeating: 0, count: Self.headSize) }
        let filled = scratch.withUnsafeMutableBytes { raw in FileDescriptor.read(descriptor, into: raw, at: 0) }
        if filled < 0 {
            let code = errno
            if code == EISDIR { throw AttacheError(.fileUnreadable, stage: .detect, "not a regular file", file: path) }
            throw AttacheError.system("read failed", errno: code, stage: .detect, file: path)
        }
        var size = Int64(filled)
        if filled == 0 || filled == Self.headSize {
            // A full head says nothing of the size, which containers need; an empty read may be a
            // device rather than an empty file.
            var info = stat()
            guard fstat(descriptor, &info) == 0 else {
                throw AttacheError.system("cannot stat the file", stage: .detect, file: path)
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                throw AttacheError(.fileUnreadable, stage: .detect, "not a regular file", file: path)
            }
            size = max(Int64(info.st_size), size)
        }
        let source = SniffSource(
            head: ByteSpan(scratch, count: filled), size: size, descriptor: descriptor, budget: configuration.readBudget)
        return try finish(Sniffer.sniff(source), source: source, filename: path, declaredKind: declaredKind, file: path)
    }

    /// Detects the file at `path` on `pool`, off the cooperative thread pool.
    ///
    /// ```swift
    /// let detection = try await MIMEDetector().detect(fileAt: path, declaredKind: .image, on: .shared)
    /// ```
    /// - Throws: the same errors as ``detect(fileAt:declaredKind:)``.
    package func detect(fileAt path: String, declaredKind: MessageKind? = nil, on pool: BlockingPool) async throws -> Detection {
        try await pool.run { try self.detect(fileAt: path, declaredKind: declaredKind) }
    }

    /// Detects from the first bytes of some content whose full length is unknown (an upload being
    /// received, a buffer). Nothing beyond `prefix` is read, so durations that need the file's size
    /// or its end are absent. Give at least ``headSize`` bytes when there are that many.
    ///
    /// ```swift
    /// let detection = MIMEDetector().detect(prefix: Array(data.prefix(4096)), filename: "a.png")
    /// ```
    package func detect(prefix: [UInt8], filename: String?) -> Detection {
        let source = SniffSource(head: prefix, size: nil)
        return classify(Sniffer.sniff(source), source: source, filename: filename)
    }

    /// Detects content held whole in memory, exactly as a file with these bytes would be detected.
    /// - Throws: ``AttacheError`` `.kindMismatch` under the ``DeclaredKindPolicy/reject`` policy.
    package func detect(contents: [UInt8], filename: String?, declaredKind: MessageKind? = nil) throws -> Detection {
        let source = SniffSource(head: contents, size: Int64(contents.count))
        return try finish(Sniffer.sniff(source), source: source, filename: filename, declaredKind: declaredKind, file: filename)
    }

    // MARK: Extension, kind and declared kind

    private func finish(
        _ sniffed: consuming Sniffed, source: SniffSource, filename: String?, declaredKind: MessageKind?, file: String?
    ) throws -> Detection {
        var detection = classify(sniffed, source: source, filename: filename)
        guard let declaredKind else { return detection }
        let contentKind = detection.kind
        detection.declaredKind = declaredKind
        detection.declaredKindAccepted = accepts(
            declaredKind, contentKind: contentKind, mimeType: detection.mimeType, metadata: detection.metadata)
        if detection.declaredKindAccepted {
            detection.kind = declaredKind
        } else if configuration.declaredKindPolicy == .reject {
            throw AttacheError(
                .kindMismatch, stage: .detect,
                "declared as \(declaredKind) but the content is \(detection.mimeType) (\(contentKind))", file: file)
        } else {
            detection.kind = .file
        }
        return detection
    }

    /// The detection without a declared kind: the content's type, refined or contradicted by the
    /// filename's extension, and the kind the rules give it.
    private func classify(_ sniffed: consuming Sniffed, source: SniffSource, filename: String?) -> Detection {
        var mimeType = sniffed.mimeType
        var facts = self.facts[mimeType]
        var extensionType: String?
        var mismatch = false
        if let filename, let fileExtension = Self.fileExtension(filename) {
            let contentIsTextual = facts?.isTextual ?? mimeType.hasPrefix("text/")
            extensionType = MIMETable.extensionLookup[fileExtension]
            if contentIsTextual, let alternative = MIMETable.textAlternatives[fileExtension] { extensionType = alternative }
            if let extensionType, mimeType != "application/x-empty" {
                if mimeType == "application/octet-stream" {
                    // The content says nothing only when there was too little of it to recognise anything.
                    if source.head.count < 16 && source.size == nil || source.head.count < 4 {
                        mimeType = extensionType
                    } else {
                        mismatch = true
                    }
                } else if MIMETable.isDescendant(extensionType, of: mimeType),
                    sniffed.inconclusive || contentIsTextual, !extensionType.hasPrefix("image/")
                {
                    mimeType = extensionType
                } else {
                    mismatch = !MIMETable.isCompatible(content: mimeType, claimed: extensionType)
                }
                if mimeType == extensionType { facts = self.facts[mimeType] }
            }
        }
        let kind = kind(facts?.rule ?? .fixed(.file), mimeType: mimeType, sniffed.metadata)
        return Detection(
            mimeType: mimeType, kind: kind, extensionMIMEType: extensionType, mismatch: mismatch,
            metadata: sniffed.metadata, preferredFilenameExtension: facts?.preferredExtension)
    }

    /// The lower-case extension of the last path component, if it has one (`.bashrc` has none).
    package static func fileExtension(_ filename: String) -> String? {
        // Scanned as UTF-8 from the end: no path components or substrings are built.
        let utf8 = filename.utf8
        var dot: String.Index?
        var index = utf8.endIndex
        while index > utf8.startIndex {
            let previous = utf8.index(before: index)
            let byte = utf8[previous]
            if byte == UInt8(ascii: "/") { break }
            if byte == UInt8(ascii: "."), dot == nil { dot = previous }
            index = previous
        }
        // `index` is now the start of the last component; a leading dot is a hidden file, not an extension.
        guard let dot, dot != index else { return nil }
        let ext = filename[utf8.index(after: dot)...]
        guard !ext.isEmpty, ext.count <= 16 else { return nil }
        return ext.lowercased()
    }

    /// The kind the content alone implies.
    private func kind(_ rule: KindRule, mimeType: String, _ metadata: MediaMetadata) -> MessageKind {
        let maxSide = configuration.stickerMaxSide
        let small = metadata.width.map { $0 <= maxSide } == true && metadata.height.map { $0 <= maxSide } == true
        switch rule {
        case .fixed(let kind):
            return kind
        case .voiceUnlessLossless:
            return isSpeech(mimeType: mimeType, metadata) ? .voice : .file
        case .webp:
            return small ? .sticker : configuration.imageTypes.contains("image/webp") ? .image : .file
        case .webm:
            let silentClip = metadata.audioCodec == nil && ["vp8", "vp9", "av1"].contains(metadata.videoCodec ?? "")
            if small && silentClip && (metadata.duration ?? 0) <= configuration.stickerMaxDuration { return .sticker }
            return configuration.videoTypes.contains("video/webm") ? .video : .file
        case .gif:
            if metadata.isAnimated == true { return configuration.animatedGIFKind }
            return configuration.imageTypes.contains("image/gif") ? .image : .file
        }
    }

    /// Whether audio of one of the voice types looks like a recording of speech rather than music: not
    /// a lossless codec, no music tags (a performer or an album; a title alone is how recorders name
    /// a recording), mono or a speech codec, and short or in a speech codec or a recorder's container.
    /// What is unknown (channels or duration a header does not state) does not count against it.
    private func isSpeech(mimeType: String, _ metadata: MediaMetadata) -> Bool {
        let codec = metadata.audioCodec ?? ""
        if configuration.nonVoiceCodecs.contains(codec) { return false }
        if metadata.performer != nil || metadata.album != nil { return false }
        let speechCodec = configuration.voiceCodecs.contains(codec)
        guard speechCodec || (metadata.channels ?? 1) <= 1 else { return false }
        if speechCodec || configuration.speechContainers.contains(mimeType) { return true }
        return (metadata.duration ?? 0) <= configuration.voiceMaxDuration
    }

    /// Whether the content can honestly be sent as `declared`.
    private func accepts(_ declared: MessageKind, contentKind: MessageKind, mimeType: String, metadata: MediaMetadata) -> Bool {
        if declared == contentKind || declared == .file { return true }
        switch declared {
        case .image:
            // A sticker-sized WebP is still a picture.
            return configuration.imageTypes.contains(mimeType)
        case .sticker:
            // Stickers are made from pictures and short silent clips as well as sent as they are.
            return configuration.imageTypes.contains(mimeType) || mimeType == "video/webm" || mimeType == "application/x-tgsticker"
        case .video:
            return configuration.videoTypes.contains(mimeType) || (mimeType == "image/gif" && metadata.isAnimated == true)
        case .voice:
            // Declared, any audio of a voice type is a voice note (music included: the sender knows),
            // except lossless audio, which no voice note is made from.
            return configuration.voiceTypes.contains(mimeType)
                && !configuration.nonVoiceCodecs.contains(metadata.audioCodec ?? "")
        case .file:
            return true
        }
    }
}
