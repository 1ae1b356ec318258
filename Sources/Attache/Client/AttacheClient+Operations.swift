public import Logging

extension AttacheClient {
    /// Sends a multipart upload, retrying per the connection's policy; see ``Uploader/upload(_:progress:)``.
    ///
    /// ```swift
    /// let result = try await client.upload(UploadRequest(url: "https://files.example/upload", body: body))
    /// ```
    /// - Throws: as ``Uploader/upload(_:progress:)``.
    public func upload(
        _ request: UploadRequest, answers: ResponseInterpreter.Configuration = .init(),
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> UploadResult {
        try await Uploader(client: self, answers: answers).upload(request, progress: progress)
    }

    /// The multipart upload operation, for callers that keep one (its answers and logger set once).
    public func uploader(
        answers: ResponseInterpreter.Configuration = .init(), logger: Logger = Logger(label: "attache.upload")
    ) -> Uploader {
        Uploader(client: self, answers: answers, logger: logger)
    }

    /// The resumable upload operation (tus 1.0, the IETF draft).
    package func resumableUploader(
        answers: ResponseInterpreter.Configuration = .init(), configuration: ResumableConfiguration = .init(mode: .auto)
    ) -> ResumableUploader {
        ResumableUploader(client: self, answers: answers, configuration: configuration)
    }

    /// Downloads `request.url` to `request.destination`; see ``Downloader/download(_:progress:)``.
    ///
    /// ```swift
    /// let receipt = try await client.download(DownloadRequest(url: url, destination: "photo.jpg", resume: true))
    /// ```
    /// - Throws: as ``Downloader/download(_:progress:)``.
    public func download(
        _ request: DownloadRequest, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> DownloadReceipt {
        try await Downloader(client: self).download(request, progress: progress)
    }

    /// A download manager whose downloads run on this client.
    package func downloadManager(
        configuration: DownloadManager.Configuration = .init(), journal: (any DownloadJournaling)? = nil
    ) -> DownloadManager {
        DownloadManager(client: self, configuration: configuration, journal: journal)
    }

    /// The request layer on this client: `configuration`'s defaults, adapters and retriers, then the
    /// client's.
    ///
    /// ```swift
    /// let me = try await client.requests().get("https://api.example/me").decode(Profile.self)
    /// ```
    public func requests(_ configuration: RequestClient.Configuration = .init()) -> RequestClient {
        RequestClient(client: self, configuration: configuration)
    }
}
