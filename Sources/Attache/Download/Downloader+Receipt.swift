import FoundationEssentials

extension Downloader {
    /// Fetches the file an upload receipt leads to, checks it, and writes it opened to `destination`.
    ///
    /// One call from a receipt back to the file: the URL is the receipt's ``UploadReceipt/url`` (absolute:
    /// the pipeline resolves a server's `/files/7` against the upload URL); the downloaded bytes are checked
    /// against the server's `sha256` member when the receipt has one; a sealed attachment is opened with
    /// the receipt's key (or `key`, for a pipeline that used a fixed key) and verified before anything
    /// appears at `destination`.
    ///
    /// ```swift
    /// let receipt = try await pipeline.send(Attachment(path: "photo.jpg"))
    /// // … later, wherever the receipt was kept:
    /// try await Downloader().download(receipt: receipt, to: "photo-again.jpg")
    /// ```
    ///
    /// - Parameters:
    ///   - receipt: the receipt of the upload: its URL, digest and seal.
    ///   - destination: the path the opened file is written to.
    ///   - key: the key to open a sealed file with, when the receipt carries none (a fixed key).
    ///   - headers: extra request headers (`Authorization`, …).
    ///   - objectStore: the store an object's receipt (its URL `s3://BUCKET/KEY`) is fetched from, with
    ///     signed GETs (`DownloadRequest.objectStore`); usually the endpoint the pipeline sent it to.
    ///   - progress: called as the download advances, as ``download(_:progress:)`` calls it.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `.download`) when the receipt has no URL,
    ///   `.invalidKey` (stage `.seal`) when a sealed file has no key; then whatever
    ///   ``download(_:progress:)`` throws (`corruptInput` for a digest that differs,
    ///   `authenticationFailed` for a key that does not open it, …).
    public func download(
        receipt: UploadReceipt, to destination: String, key: AttachmentKey? = nil, headers: [HeaderField] = [],
        objectStore: ObjectStoreEndpoint? = nil, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> DownloadReceipt {
        guard let url = receipt.url, !url.isEmpty else {
            throw AttacheError(
                .invalidArgument, stage: .download, "the receipt names no URL to fetch the file from",
                file: receipt.path)
        }
        var unsealing: DownloadRequest.Unsealing?
        let seal = receipt.seal
        if seal.scheme != .none || seal.transferEncoding != .binary {
            guard let key = key ?? seal.key else {
                throw AttacheError(
                    .invalidKey, stage: .seal,
                    "the receipt carries no key (the upload used a fixed key): pass the key to open the file",
                    file: receipt.path)
            }
            unsealing = DownloadRequest.Unsealing(
                scheme: seal.scheme, key: key, transferEncoding: seal.transferEncoding,
                plaintextByteCount: seal.plaintextByteCount)
        }
        let digest = receipt.server["sha256"]?.stringValue.flatMap { $0.count == 64 ? $0.lowercased() : nil }
        var request = DownloadRequest(
            url: url, destination: destination, headers: headers, unsealing: unsealing,
            expectedSHA256: digest)
        request.digest = .whenVerifiable
        request.objectStore = objectStore
        return try await download(request, progress: progress)
    }
}
