/// Scans with ClamAV's daemon, clamd, over its socket protocol (clamd(8)).
///
/// Each connection is a session (`zIDSESSION`) that reads the engine and signature versions once
/// (`zVERSION`) and then serves many scans; idle sessions are kept for the next scan (see
/// `Configuration/idleSessions`). A file goes as an open descriptor (`zFILDES`, over a UNIX socket,
/// when the bytes are a file: clamd reads it itself, nothing is copied) or as a stream (`zINSTREAM`:
/// chunks of `Configuration/chunkSize` bytes, each after its length), so memory never depends on the
/// file's size.
///
/// ```swift
/// let scanner = ClamAVScanner(address: try ClamdAddress(parsing: "unix:/run/clamav/clamd.ctl"))
/// let verdict = try await scanner.scan(try FileSource(path: "upload.bin"), file: "upload.bin")
/// if verdict.outcome == .infected { print(verdict.signature ?? "") }
/// ```
public struct ClamAVScanner: MalwareScanner {
    /// How bytes reach clamd.
    package enum Transfer: String, Sendable, Hashable, CaseIterable {
        /// Pass files as open descriptors over a UNIX socket, stream everything else (the default).
        case automatic
        /// Always stream (`zINSTREAM`), also files over a UNIX socket.
        case stream
        /// Always pass the descriptor (`zFILDES`): only files, only over a UNIX socket.
        case descriptor
    }

    /// The client's settings.
    package struct Configuration: Sendable {
        /// Where clamd listens.
        package var address: ClamdAddress
        /// How bytes reach clamd.
        package var transfer = Transfer.automatic
        /// The size of a stream's chunks (and of the one buffer a stream uses).
        package var chunkSize = 256 * 1024
        /// How long to wait for clamd to accept a connection.
        package var connectTimeout = Duration.seconds(10)
        /// How long clamd may take to read the next chunk or the version: past it a clamd that stopped
        /// answering fails the scan (`.timedOut`).
        package var stallTimeout = Duration.seconds(30)
        /// How long clamd may take to scan once it has everything.
        package var replyTimeout = Duration.seconds(300)
        /// Idle sessions kept for the next scans.
        package var idleSessions = 16

        /// The defaults for clamd at `address`.
        package init(address: ClamdAddress) {
            self.address = address
        }
    }

    /// The settings.
    package let configuration: Configuration
    private let sessions: ClamdSessionPool
    /// clamd's answers by content digest and versions (``scanBlocking(_:file:contentDigest:)``).
    private let remembered = LockedValue<[String: ClamdReply]>([:])
    /// Answers remembered at most; past it the memory starts again.
    private static let rememberedLimit = 65_536

    /// Creates a scanner for clamd as `configuration` says.
    package init(configuration: Configuration) {
        self.configuration = configuration
        self.sessions = ClamdSessionPool(capacity: max(0, configuration.idleSessions))
    }

    /// Creates a scanner for clamd at `address`, with the default settings.
    public init(address: ClamdAddress) {
        self.init(configuration: Configuration(address: address))
    }

    /// Scans `source`: its file by descriptor when it is a file and the transfer allows, else as a
    /// stream.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `scan`): `.connectionFailed` and `.connectionLost`
    ///   (retryable), `.timedOut` (clamd stopped answering), `.limitExceeded` (over clamd's
    ///   `StreamMaxLength`), `.scanFailed` (clamd's own error), `.invalidArgument` (a descriptor
    ///   transfer that cannot be made); reading the source's own errors.
    public func scan(_ source: any ByteSource, file: String) async throws -> ScanVerdict {
        let path = try descriptorPath(of: source, file: file)
        let configuration = configuration
        let sessions = sessions
        return try await BlockingPool.shared.run {
            try Self.scan(source, path: path, file: file, configuration: configuration, sessions: sessions)
        }
    }

    /// ``scan(_:file:)`` on the calling thread, which blocks until clamd answers: for a caller that keeps
    /// threads of its own, one per session (`attache scan`), and so saves two thread hand-offs a file.
    package func scanBlocking(_ source: any ByteSource, file: String) throws -> ScanVerdict {
        try Self.scan(source, path: try descriptorPath(of: source, file: file), file: file,
                      configuration: configuration, sessions: sessions)
    }

    /// ``scanBlocking(_:file:)`` for bytes whose SHA-256 the caller knows: a verdict this scanner gave
    /// for the same content under the same signature version is given again without asking clamd, whose
    /// verdict depends on nothing else (by descriptor or stream, clamd never sees a file's name).
    package func scanBlocking(_ source: any ByteSource, file: String, contentDigest: String) throws -> ScanVerdict {
        try Self.scan(source, path: try descriptorPath(of: source, file: file), file: file,
                      configuration: configuration, sessions: sessions, remembering: (remembered, contentDigest))
    }

    /// Whether files go to clamd by descriptor (a UNIX socket, and a transfer that allows it).
    package var passesDescriptors: Bool {
        guard case .unix = configuration.address else { return false }
        return configuration.transfer != .stream
    }

    /// Scans files by descriptor in one session, every request sent before the answers are read (see
    /// ``ClamdConnection/scanDescriptors(_:)``), as `clamdscan --fdpass --multiscan` does: for
    /// `attache scan` over many files. The verdicts come in the order of `paths`. Blocking.
    /// - Throws: ``AttacheCore/AttacheError`` when the session fails (every file of `paths` is then unscanned).
    package func scanFilesBlocking(_ paths: [String]) throws -> [Result<ScanVerdict, AttacheError>] {
        let configuration = configuration
        let (replies, version) = try sessions.withSession(connect: { try Self.connect(configuration) }) { connection in
            (try connection.scanDescriptors(paths), connection.version)
        }
        return zip(paths, replies).map { path, reply in
            Result {
                try Self.verdict(try reply.get(), version: version, address: configuration.address, file: path)
            }.mapError { ($0 as? AttacheError) ?? AttacheError(.internalError, stage: .scan, "\($0)", file: path) }
        }
    }

    /// Scans by descriptor, in one new session, the files `next` gives until it gives nil, with up to
    /// `window` requests unanswered at a time (see ``ClamdConnection/scanDescriptors(window:next:deliver:idle:)``):
    /// `attache scan`'s way, a new request as soon as an answer frees a place. Each file's result goes to
    /// `deliver` when its answer arrives, in any order; `idle` is called when no answer came for 50 ms.
    /// Blocking.
    /// - Throws: ``AttacheCore/AttacheError`` when the session cannot be opened (no file was taken then) or
    ///   fails (every file taken and not answered was delivered with the error first).
    package func scanFilesBlocking(
        window: Int, next: () -> String?, deliver: (String, Result<ScanVerdict, AttacheError>) -> Void,
        idle: () -> Void = {}
    ) throws {
        let configuration = configuration
        try sessions.withSession(reusing: false, connect: { try Self.connect(configuration) }) { connection in
            let version = connection.version
            try connection.scanDescriptors(
                window: window, next: next,
                deliver: { _, path, reply in
                    deliver(
                        path,
                        Result {
                            try Self.verdict(try reply.get(), version: version, address: configuration.address, file: path)
                        }.mapError { ($0 as? AttacheError) ?? AttacheError(.internalError, stage: .scan, "\($0)", file: path) })
                },
                idle: idle)
        }
    }

    private static func scan(
        _ source: any ByteSource, path: String?, file: String, configuration: Configuration, sessions: ClamdSessionPool,
        remembering: (answers: LockedValue<[String: ClamdReply]>, digest: String)? = nil
    ) throws -> ScanVerdict {
        let (reply, version) = try sessions.withSession(connect: { try Self.connect(configuration) }) { connection in
            let key = remembering.map { "\($0.digest) \(connection.version.engine) \(connection.version.signatures ?? "-")" }
            if let remembering, let key, let known = remembering.answers.withLock({ $0[key] }) {
                return (known, connection.version)
            }
            let reply =
                if let path {
                    try connection.scanDescriptor(path: path, file: file)
                } else {
                    try connection.scanStream(source, chunkSize: configuration.chunkSize, file: file)
                }
            // Only verdicts are kept: clamd's errors (a limit, a file it could not read) are asked again.
            if let remembering, let key, reply.isVerdict {
                remembering.answers.withLock { known in
                    if known.count >= rememberedLimit { known.removeAll(keepingCapacity: true) }
                    known[key] = reply
                }
            }
            return (reply, connection.version)
        }
        return try Self.verdict(reply, version: version, address: configuration.address, file: file)
    }

    /// The versions clamd reports (read when a session begins; a kept session answers at once).
    /// - Throws: ``AttacheCore/AttacheError`` (stage `scan`) when clamd cannot be reached.
    public func engineVersion() async throws -> ScanEngineVersion {
        let configuration = configuration
        let sessions = sessions
        return try await BlockingPool.shared.run {
            try sessions.withSession(connect: { try Self.connect(configuration) }) { $0.version }
        }
    }

    /// Sessions opened so far: each began with `IDSESSION` and one `VERSION`.
    package var sessionsOpened: Int { sessions.opened }

    /// Ends the idle sessions now (they end by themselves when the process does).
    package func closeIdleSessions() {
        sessions.closeAll()
    }

    private static func connect(_ configuration: Configuration) throws -> ClamdConnection {
        try ClamdConnection(
            address: configuration.address,
            timeouts: ClamdConnection.Timeouts(
                connect: configuration.connectTimeout, stall: configuration.stallTimeout,
                reply: configuration.replyTimeout))
    }

    /// The file to pass by descriptor, or nil to stream.
    private func descriptorPath(of source: any ByteSource, file: String) throws -> String? {
        let isLocal = if case .unix = configuration.address { true } else { false }
        let path = (source as? FileSource)?.path
        switch configuration.transfer {
        case .stream: return nil
        case .automatic: return isLocal ? path : nil
        case .descriptor:
            guard isLocal, let path else {
                throw AttacheError(
                    .invalidArgument, stage: .scan,
                    isLocal
                        ? "only files can be passed to clamd by descriptor, and these bytes are not in a file"
                        : "clamd at \(configuration.address) is reached over TCP: descriptors pass only over a UNIX socket",
                    file: file)
            }
            return path
        }
    }

    private static func verdict(
        _ reply: ClamdReply, version: ScanEngineVersion, address: ClamdAddress, file: String
    ) throws -> ScanVerdict {
        switch reply {
        case .clean:
            return ScanVerdict(outcome: .clean, version: version)
        case .infected(let signature):
            return ScanVerdict(outcome: .infected, signature: signature, version: version)
        case .error(let message) where message.contains("size limit exceeded"):
            throw AttacheError(
                .limitExceeded, stage: .scan,
                "the file is larger than clamd's StreamMaxLength (clamd at \(address): \(ClamdConnection.excerpt(message)))",
                file: file)
        case .error(let message):
            throw AttacheError(
                .scanFailed, stage: .scan, "clamd at \(address) could not scan it: \(ClamdConnection.excerpt(message))",
                file: file)
        }
    }
}
