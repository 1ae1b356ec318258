extension Transformer.Configuration {
    /// What the Transform stage does with a file.
    package enum Action: String, Sendable, Hashable {
        /// Nothing: it goes as it is.
        case none
        /// Recompressed as a photo (HEIC/AVIF decoded first).
        case image
        /// Made a sticker.
        case sticker
        /// Converted to H.264/AAC MP4 (or kept, or remuxed, when it already complies).
        case video
        /// Converted to Ogg/Opus, with a waveform.
        case voice
        /// An animated GIF or APNG made a silent MP4.
        case animation
    }

    /// What happens to a file of this type and kind: the one rule set behind `upload`, `batch` and
    /// `recompress`.
    package func action(mimeType: String, kind: MessageKind, isAnimated: Bool = false) -> Action {
        let type = mimeType.lowercased()
        switch kind {
        case .image:
            if isAnimated, Transformer.animationTypes.contains(type) { return convertAnimations ? .animation : .none }
            let still = Transformer.recompressibleTypes.contains(type) || Transformer.heifTypes.contains(type)
            return recompressImages && still ? .image : .none
        case .sticker:
            return makeStickers && Transformer.recompressibleTypes.contains(type) ? .sticker : .none
        case .video:
            if type == "image/gif" || type == "image/apng" { return convertAnimations ? .animation : .none }
            return convertVideo && type.hasPrefix("video/") ? .video : .none
        case .voice:
            return convertVoice ? .voice : .none
        case .file:
            return .none
        }
    }

    /// Whether a file of this type and kind is transformed (and so needs a work directory); every other
    /// file passes through untouched.
    package func transforms(mimeType: String, kind: MessageKind, isAnimated: Bool = false) -> Bool {
        action(mimeType: mimeType, kind: kind, isAnimated: isAnimated) != .none
    }
}
