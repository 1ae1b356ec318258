import FoundationEssentials
public import Logging

extension RequestClient {
    /// What every request of a client gets: connection settings and credentials, default headers,
    /// system parameters, interceptors, logging and limits.
    ///
    /// ```swift
    /// var configuration = RequestClient.Configuration()
    /// configuration.connection.authorization = .bearer(token)
    /// configuration.systemParameters = ["appVersion": "5.2", "platform": "linux"]
    /// configuration.logger.logLevel = .debug
    /// let client = RequestClient(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// Timeouts, retries (idempotent methods only), TLS, proxy, `User-Agent`, headers sent with
        /// every request and Basic/Bearer credentials (``ConnectionConfiguration/authorization``).
        public var connection: ConnectionConfiguration
        /// The `Accept-Language` header; nil sends none. Default: from the process's locale
        /// (the `LANGUAGE`, `LC_ALL`, `LC_MESSAGES` and `LANG` variables).
        public var acceptLanguage: String?
        /// Offer `Accept-Encoding` for every encoding libcurl decodes (gzip, deflate, br, zstd) and
        /// decode the answer transparently, as `curl --compressed` does. Default: true.
        public var acceptsCompressedResponses: Bool
        /// Parameters added to every request: to the query of `GET`/`HEAD`/`DELETE` and of requests
        /// with an explicit body, to the form or JSON body built from `ClientRequest/parameters`
        /// otherwise. A parameter of the same name in the request wins.
        public var systemParameters: Parameters
        /// How parameters become query strings and form bodies.
        package var formEncoder: URLFormEncoder
        /// Run in order before every attempt (signing, fresh tokens).
        public var adapters: [any RequestAdapter]
        /// Asked in order after every attempt whether to retry (refresh a token on 401).
        public var retriers: [any RequestRetrier]
        /// Where requests are logged: one line per exchange at `.debug` (method, redacted URL, status,
        /// sizes, curl's timings); headers, bounded body previews and an equivalent `curl` command at
        /// `.trace`.
        public var logger: Logger
        /// What the logs never show.
        package var redaction: LogRedaction
        /// The longest answer body kept in memory; longer ones are cut there
        /// (`ServerResponse/bodyExceededCap`). Default: 10 MiB.
        public var maximumResponseBodySize: Int
        /// The longest body preview logged at `.trace`, in bytes. Default: 1024.
        package var bodyPreviewLimit: Int
        /// A deadline for each attempt; nil (the default) relies on the connect and stall timeouts.
        public var timeout: Duration?

        /// The defaults described on each property.
        public init(
            connection: ConnectionConfiguration = .init(), logger: Logger = Logger(label: "attache.http")
        ) {
            self.connection = connection
            self.acceptLanguage = AcceptLanguage.fromEnvironment()
            self.acceptsCompressedResponses = true
            self.systemParameters = [:]
            self.formEncoder = URLFormEncoder()
            self.adapters = []
            self.retriers = []
            self.logger = logger
            self.redaction = LogRedaction()
            self.maximumResponseBodySize = 10 << 20
            self.bodyPreviewLimit = 1024
            self.timeout = nil
        }
    }

    /// How far a request has come: body bytes sent and answer bytes received in the current attempt.
    public struct Progress: Sendable, Hashable {
        /// The attempt, from 1.
        public var attempt: Int
        /// Request body bytes handed to the network.
        public var bytesSent: Int64
        /// The request body's length (0 without a body).
        public var bytesToSend: Int64
        /// Answer bytes received (as they arrive, before decompression).
        public var bytesReceived: Int64
        /// The answer's announced length, when the server announced one.
        public var bytesToReceive: Int64?
    }
}
