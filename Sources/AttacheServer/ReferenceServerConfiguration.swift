public import Attache
public import Logging

/// How to run the reference server: where it listens, where it stores uploads, and which faults it
/// injects.
///
/// ```swift
/// var configuration = ReferenceServerConfiguration(storeDirectory: "/tmp/attache-store", port: 0)
/// configuration.faults = try FaultPlan(parsing: "503@1")
/// ```
public struct ReferenceServerConfiguration: Sendable {
    /// The address to bind; loopback by default so a test server is never reachable from outside.
    public var host: String = "127.0.0.1"
    /// The TCP port; 0 picks a free port (read it from ``withReferenceServer(configuration:_:)``).
    public var port: Int = 8080
    /// The store: `files/` (bytes and receipts), `keys/` (idempotency keys), `pending/` (commits in
    /// progress, finished or undone at start-up), `salt`, `tmp/` (uploads in progress). Created if
    /// missing.
    public var storeDirectory: String
    /// Faults injected into `POST /upload` for the whole run; see ``FaultPlan``.
    public var faults: FaultPlan = .none
    /// Faults injected into `GET /files/{id}` for the whole run; see ``FileFaultPlan``.
    public var fileFaults: FileFaultPlan = .none
    /// A file that gets a JSON line per `GET|HEAD /files/{id}` when it is answered: `id`, `range` and
    /// `ifRange` (the request's headers, when sent), `status`; and one `{"id","sent"}` line per body
    /// when it ends, with the bytes sent (`sent` is on the first line for answers without a body).
    /// Tests read it to see the ranges a client asked for and the bytes it fetched. Setting it makes
    /// every body go through a counting writer instead of NIO's file I/O.
    public var fileLogPath: String? = nil
    /// A file that gets a JSON line per `POST /upload` with an `Idempotency-Key` once its fate is known:
    /// `key`, `outcome` (`stored`: committed as a new upload; `replayed`: answered with an earlier
    /// upload's receipt; `in-progress`: refused while another request with the key runs) and `fileId`.
    /// Idempotency keys are not secrets; the log never holds form fields or bytes. Appended to.
    public var uploadLogPath: String? = nil
    /// Uploads whose `Content-Length` exceeds this many bytes are answered 413 before their body is
    /// read; streamed bodies without a length are cut off at this size. `nil` means no limit.
    public var maxBodySize: Int64? = nil
    /// The largest text field (a part without a filename) kept in memory; larger ones are rejected
    /// with 413.
    public var maxFieldSize: Int = 64 * 1024
    /// Whether `POST /upload` also speaks the resumable protocols (tus 1.0 and the IETF draft) and
    /// serves their upload resources at `/resumable/{id}`. Off, the server is a plain multipart
    /// endpoint (tests of the client's fallback).
    public var resumable: Bool = true
    /// How long an unfinished resumable upload is kept (tus `Upload-Expires`, IETF `Upload-Limit`
    /// `expires`); after that its resource answers 410 (tus) or 404 (IETF) and its bytes are deleted.
    public var resumableLifetime: Duration = .seconds(24 * 3600)
    /// The largest append (one PATCH body, or the body of the creating POST) the server takes; larger
    /// ones are answered 413 before their body is read. Announced as `Upload-Limit: max-append-size`
    /// (IETF). `nil` means no limit.
    public var maxAppendSize: Int64? = nil
    /// Faults injected into the requests that append to resumable uploads; see ``AppendFaultPlan``.
    public var appendFaults: AppendFaultPlan = .none
    /// A file that gets one JSON line per resumable event: `{"event":"create"|"append"|"complete"|
    /// "delete"|"expired", "protocol", "id", "offset", "received", "status", "fileId"}` (the members that
    /// apply). `offset` is where an append started, `received` the body bytes it kept. Tests read it to
    /// see where a client resumed and how many bytes it sent.
    public var resumableLogPath: String? = nil
    /// The level of the request log.
    public var logLevel: Logger.Level = .info
    /// Whether every request is a span and measured (a tracing middleware that redacts query values, and
    /// Hummingbird's metrics middleware), through what the process bootstrapped in
    /// swift-distributed-tracing and swift-metrics: an incoming `traceparent` makes the server's span a
    /// child of the client's.
    public var recordsTelemetry = false
    /// A key file for decrypting and verifying sealed uploads: raw key bytes or their base64 text
    /// (`stream-gcm`, `signal`), or a passphrase (`legacy-*`), as `attache encrypt` reads it.
    ///
    /// When set, an upload whose form has a `scheme` field (and `encoding`, `plaintextSize`, as the
    /// pipeline sends them; `digest` optionally for `signal`) is decrypted as a stream and checked
    /// before it is stored: tags, HMAC and digest, and the plaintext length. One that fails is answered
    /// 422 with `{"errorCode":422,"message":…}` and not stored. One that verifies is stored as the
    /// sealed bytes received, and its receipt gains a `sealed` object (scheme, `verified`, plaintext size
    /// and SHA-256). The file is read once at start-up; its contents are never logged.
    ///
    /// The same key opens the encrypted JSON forms posted to `POST /echo-sealed` (as a passphrase for
    /// `legacy-*`, as a 32-byte key for `stream-gcm`); without a key that route answers 501.
    public var keyFile: String? = nil
    /// clamd's address (`--clamd unix:PATH|tcp:HOST:PORT`): every file part received is scanned before
    /// it is stored, as it was received (sealed bytes stay sealed: scan them with `--scheme none` sent).
    /// An infected part is answered 422 `{"errorCode":422,"message":"infected: SIGNATURE"}` and nothing
    /// of the upload is stored; when clamd gives no verdict the answer is 503 with `Retry-After: 5`, so
    /// the server fails closed and the client tries again.
    public var clamd: ClamdAddress? = nil
    /// A PEM certificate chain and private key: when both are set the server speaks HTTPS only. Tests
    /// use a throwaway self-signed certificate to check the client's TLS verification and pinning.
    public var tls: TLSFiles? = nil

    /// The files for serving HTTPS.
    public struct TLSFiles: Sendable, Hashable {
        /// The PEM certificate chain, leaf first.
        public var certificateChain: String
        /// The PEM private key of the leaf certificate.
        public var privateKey: String

        /// Creates the pair.
        public init(certificateChain: String, privateKey: String) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
        }
    }

    /// `https` when TLS files are set, else `http`.
    public var scheme: String { tls == nil ? "http" : "https" }

    /// Creates a configuration.
    public init(
        storeDirectory: String, host: String = "127.0.0.1", port: Int = 8080, faults: FaultPlan = .none,
        maxBodySize: Int64? = nil, logLevel: Logger.Level = .info, keyFile: String? = nil
    ) {
        self.storeDirectory = storeDirectory
        self.host = host
        self.port = port
        self.faults = faults
        self.maxBodySize = maxBodySize
        self.logLevel = logLevel
        self.keyFile = keyFile
    }
}
