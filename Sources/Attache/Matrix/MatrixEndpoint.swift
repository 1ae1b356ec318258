import FoundationEssentials

/// A Matrix homeserver's content repository as the place attachments go: each sealed attachment (and each
/// thumbnail) is one media upload, and the receipt carries the `m.room.message` content a client sends
/// for it (``MatrixReceipt``).
///
/// Set it as ``PipelineConfiguration/matrix``, with the user's access token as the connection's bearer
/// token. The pipeline follows the client-server API's media endpoints:
/// - it reads the homeserver's upload limit once (`GET /_matrix/client/v1/media/config`, `m.upload.size`),
///   and refuses a larger file before a byte of it is sealed or sent;
/// - where the homeserver offers it (spec v1.7, MSC2246), it reserves the `mxc://` URI first
///   (`POST /_matrix/media/v1/create`), keeps it in the send's journal (``SendJournal``), and then puts the
///   bytes there (`PUT /_matrix/media/v3/upload/{server}/{id}`). A send that is run again (a killed batch, a
///   queue row taken over) puts the same bytes to the same URI, and the homeserver's
///   `M_CANNOT_OVERWRITE_MEDIA` means they are stored: a file is stored once, and media cannot be deleted
///   through the client API, so a second copy would stay for good;
/// - otherwise it posts the bytes (`POST /_matrix/media/v3/upload?filename=`).
///
/// Answers are read with the `matrix` profile: `M_LIMIT_EXCEEDED` waits `retry_after_ms`, `M_TOO_LARGE` and
/// `M_FORBIDDEN` are refusals, `M_UNKNOWN_TOKEN` and `M_MISSING_TOKEN` are `unauthorized`.
///
/// ```swift
/// var configuration = PipelineConfiguration(url: "https://matrix.example.org")
/// configuration.matrix = MatrixEndpoint(homeserver: "https://matrix.example.org")
/// configuration.connection.authorization = .bearer(token)
/// configuration.seal.scheme = .matrix
/// let receipt = try await AttachmentPipeline(configuration: configuration).send(Attachment(path: "photo.jpg"))
/// let content = receipt.matrix?.content   // send it with your Matrix SDK, as m.room.message
/// ```
public struct MatrixEndpoint: Sendable, Hashable {
    /// The homeserver's base URL (`https://matrix.example.org`), without a path.
    public var homeserver: String
    /// Whether the `mxc://` URI is reserved before the bytes go (MSC2246). Nil (the default): when the
    /// homeserver lists spec version v1.7 or later (`GET /_matrix/client/versions`).
    public var reservesMediaIDs: Bool?
    /// Reserved URIs still without content at one time, across the sends of one pipeline. Synapse lets a
    /// user hold 5 (`max_pending_media_uploads`) and answers a sixth reservation with a 429 whose wait is
    /// a day; the default keeps one under that.
    public var maximumPendingUploads = 4

    /// Creates an endpoint for `homeserver`.
    public init(homeserver: String) {
        var base = homeserver
        while base.hasSuffix("/") { base.removeLast() }
        self.homeserver = base
    }

    /// The server name and media id of `mxc://SERVER/ID`; nil for anything else.
    public static func mediaID(of uri: String) -> (server: String, id: String)? {
        guard uri.hasPrefix("mxc://") else { return nil }
        let rest = uri.dropFirst(6)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let server = String(rest[..<slash])
        let id = String(rest[rest.index(after: slash)...])
        guard !server.isEmpty, !id.isEmpty, !id.contains("/") else { return nil }
        return (server, id)
    }

    /// The authenticated download URL of `mxc://SERVER/ID` (`/_matrix/client/v1/media/download`); nil when
    /// `uri` is not an `mxc://` URI.
    public func downloadURL(of uri: String) -> String? {
        guard let (server, id) = Self.mediaID(of: uri) else { return nil }
        return homeserver + "/_matrix/client/v1/media/download/" + PercentEncoding.escape(server) + "/"
            + PercentEncoding.escape(id)
    }
}
