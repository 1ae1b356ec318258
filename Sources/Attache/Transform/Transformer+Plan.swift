extension Transformer.Configuration {
    /// Whether a file of this type and kind is transformed (and so needs a work directory); every other
    /// file passes through untouched.
    public func transforms(mimeType: String, kind: MessageKind) -> Bool {
        let type = mimeType.lowercased()
        switch kind {
        case .image: return recompressImages && Transformer.recompressibleTypes.contains(type)
        case .sticker: return makeStickers && Transformer.recompressibleTypes.contains(type)
        case .voice, .video, .file: return false
        }
    }
}
