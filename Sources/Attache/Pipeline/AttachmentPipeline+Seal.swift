/// The seal stage's hand-off: the payload and the thumbnails to send, encrypted and transfer-encoded as
/// streams (nothing is read until the upload pulls), and what the receipt says of the seal.
struct SealedAttachment: Sendable {
    /// One thumbnail to send, sealed.
    struct SealedThumbnail: Sendable {
        /// The thumbnail as Transform made it.
        let thumbnail: Thumbnail
        /// Its sealed bytes: part 1, 2, … of the attachment's seal material.
        let payload: SealedPayload
        /// The content type of its file part.
        let contentType: String
        /// Its own key, when it has one (a Matrix thumbnail); nil: the attachment's.
        var key: AttachmentKey? = nil
    }

    /// What came in.
    let transformed: TransformedAttachment
    /// How it was sealed.
    let seal: SealConfiguration
    /// The attachment's sealed bytes: part 0 of the seal material.
    let payload: SealedPayload
    /// The thumbnails to send (none when they are omitted), sealed with the attachment's key.
    let thumbnails: [SealedThumbnail]
    /// The content type of the attachment's file part: its own type when it goes as it is.
    let contentType: String
    /// True when nothing was changed on the way (no scheme, binary): no seal fields are sent.
    let isPlain: Bool
    /// The key for the receipt: the fresh key this send drew, nil with a fixed key or no scheme.
    let receiptKey: AttachmentKey?
    /// True when the key was drawn for this send, so no earlier send can have used it.
    let isFreshMaterial: Bool
    /// For a content-addressed object (a key template with `{sha256}`): its name and derived material.
    var contentAddress: ContentAddress? = nil
    /// What the Scan stage found, when a scanner is configured.
    var scan: ScanReceipt? = nil

    /// The bytes as prepared.
    var prepared: PreparedAttachment { transformed.prepared }
}

extension AttachmentPipeline {
    /// seal: ScannedAttachment → SealedAttachment, carrying the scan's receipt on.
    func seal(_ scanned: ScannedAttachment) async throws -> SealedAttachment {
        var address: ContentAddress?
        if configuration.objectStore?.keyTemplate.namesContent == true {
            let source = scanned.transformed.prepared.original
            let (fingerprint, scheme) = (configuration.settingsFingerprint, configuration.seal.scheme)
            address = try await BlockingPool.shared.run {
                try ContentAddress.read(source, fingerprint: fingerprint, scheme: scheme)
            }
        }
        var sealed = try seal(scanned.transformed, address: address)
        sealed.scan = scanned.receipt
        return sealed
    }

    /// seal: TransformedAttachment → SealedAttachment. Part 0 of the seal material is the attachment,
    /// 1, 2, … its thumbnails: each has header values of its own from the one seed, so a replay
    /// regenerates every part byte for byte.
    ///
    /// A content-addressed object is sealed with the material derived from its content (`address`), not
    /// the attachment's own: that is what lets another sender find it by name and open it.
    func seal(_ transformed: TransformedAttachment, address: ContentAddress? = nil) throws -> SealedAttachment {
        let seal = configuration.seal
        let attachment = transformed.prepared.attachment
        let material = address?.material ?? attachment.sealMaterial ?? SealMaterial.random(for: seal.scheme)
        let sealer = Sealer(scheme: seal.scheme, key: seal.key ?? material.key, transferEncoding: seal.transferEncoding)
        let payload = try sealer.seal(transformed.payload, material: material, part: 0)
        let isPlain = seal.scheme == .none && seal.transferEncoding == .binary
        let sealedType = seal.transferEncoding == .binary ? "application/octet-stream" : "text/plain"
        var thumbnails: [SealedAttachment.SealedThumbnail] = []
        // A Matrix thumbnail is a media file of its own, and its message carries its own key.
        let ownKeys = configuration.matrix != nil && seal.scheme == .matrix && seal.key == nil
        if configuration.thumbnailPlacement != .omitted {
            for (index, thumbnail) in transformed.output.thumbnails.enumerated() {
                let key = ownKeys ? try material.partKey(part: index + 1) : nil
                let thumbnailSealer = key.map { Sealer(scheme: seal.scheme, key: $0, transferEncoding: seal.transferEncoding) } ?? sealer
                thumbnails.append(
                    SealedAttachment.SealedThumbnail(
                        thumbnail: thumbnail,
                        payload: try thumbnailSealer.seal(DataSource(thumbnail.bytes), material: material, part: index + 1),
                        contentType: isPlain ? thumbnail.mimeType : sealedType, key: key))
            }
        }
        let drawn = seal.key == nil && seal.scheme != .none
        return SealedAttachment(
            transformed: transformed, seal: seal, payload: payload, thumbnails: thumbnails,
            contentType: isPlain ? transformed.output.mimeType : sealedType, isPlain: isPlain,
            receiptKey: drawn ? material.key : nil,
            isFreshMaterial: drawn && attachment.sealMaterial == nil && address == nil, contentAddress: address)
    }
}
