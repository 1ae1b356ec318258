/// Why an image or sticker came out as it did: the receipt's `transform.reason`. Nothing is sent larger
/// than its source unless the reason says why (a format the receiver cannot show, pixels that had to
/// change).
extension Transformer {
    /// The reason for `result`, made from a source of `sourceType` and `sourceByteCount` bytes as `kind`.
    static func imageReason(_ result: RecompressionResult, sourceType: String, kind: MessageKind,
                            sourceByteCount: Int64) -> String {
        let sent = result.outputByteCount
        let sameSize = result.outputWidth == result.inputWidth && result.outputHeight == result.inputHeight
        if kind == .sticker {
            if result.passedThrough { return "compliant: already a sticker (WebP, \(result.outputWidth)×\(result.outputHeight))" }
            return "made a sticker: WebP, \(result.outputWidth)×\(result.outputHeight)"
                + larger(sent, sourceByteCount, because: "a sticker must be WebP with a side of 512 px")
        }
        if result.passedThrough {
            let kept = sent == sourceByteCount ? "sent byte for byte" : "sent with its metadata removed"
            if sourceByteCount <= Int64(result.inputWidth) * Int64(result.inputHeight) / 2 {
                return "compliant: an upright JPEG small enough for its size, " + kept
            }
            return "compliant: the recompressed JPEG was not smaller than the source, which went instead, " + kept
        }
        var why: [String] = []
        if sourceType != result.mimeType { why.append("\(sourceType) is sent as \(result.mimeType)") }
        if !sameSize {
            why.append("downscaled \(result.inputWidth)×\(result.inputHeight) → \(result.outputWidth)×\(result.outputHeight)")
        }
        if why.isEmpty, sourceByteCount > Int64(result.inputWidth) * Int64(result.inputHeight) / 2 {
            why.append("over w·h/2 bytes, the most a photo of its size is sent as it is")
        }
        if why.isEmpty { why.append("its pixels had to change (EXIF orientation, colour space)") }
        let because = sourceType != result.mimeType
            ? "chat clients show \(result.mimeType), not \(sourceType)" : "the source cannot go as it is"
        return "recompressed: " + why.joined(separator: "; ") + larger(sent, sourceByteCount, because: because)
    }

    /// The reason for an opaque PNG sent as a PNG (no JPEG of it was smaller).
    static func pngReason(sent: Int64, source: Int64) -> String {
        "compliant: an opaque PNG at full size is smaller than a JPEG of it, "
            + (sent == source ? "sent byte for byte" : "sent with its metadata chunks removed")
    }

    /// `; larger than the source (…), kept because …` when `sent` is not smaller than `source`.
    static func larger(_ sent: Int64, _ source: Int64, because why: String) -> String {
        sent > source ? "; larger than the source (\(sent) B > \(source) B), kept because \(why)" : ""
    }
}
