import Foundation
import AttacheTestSupport
import Synchronization
import Testing

/// The two independent S3 implementations the object storage tests run against, both from PyPI and
/// started on 127.0.0.1 on a free port: moto's server (which takes any signature) and MiniStack with
/// `AUTH=true` (which checks the SigV4 signature of an IAM user's key as S3 does; its root key it takes
/// unchecked, so the uploads under test use an IAM user's key; its CRC-32C is the `crc32c` module's, see
/// `Tools/ministack_server.py`). Objects are checked with boto3
/// (`Tools/s3_objects.py`), never with Attache.
enum S3Emulator: String, CaseIterable, CustomStringConvertible, Sendable {
    case moto
    case ministack

    var description: String { rawValue }

    /// The emulator's root credentials: what boto3 checks objects with.
    static let root = ["AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret"]

    /// An emulator a test runs against: the server of its kind, shared by every test of this process,
    /// and a bucket of the test's own (``bucket``), which no other test touches.
    struct Running {
        let kind: S3Emulator
        let python: String
        let server: ServiceProcess
        /// The boto3 commands' interpreter (`s3_objects.py ENDPOINT serve`), with the root credentials:
        /// the test's own while it runs, so that one test's long download does not hold another's
        /// commands (taken from the idle ones a test before it left, see ``S3Emulator/run(_:)``).
        let boto3: BotoSession
        /// A folder of the test's own, removed when it ends.
        let scratch: ScratchFolder
        /// The credentials uploads use: an IAM user's on MiniStack (signatures checked), the root's on moto.
        let uploader: [String: String]
        /// The test's bucket (`media-N`).
        let bucket: String

        var endpoint: String { "http://127.0.0.1:\(server.port)" }
        var tool: String { ServiceProcess.tools + "/s3_objects.py" }

        /// Runs `s3_objects.py ENDPOINT arguments...` with the root credentials; its standard output.
        @discardableResult
        func boto(_ arguments: [String]) async throws -> String {
            let result = try await boto3.run(arguments)
            try #require(result.status == 0, "s3_objects.py \(arguments.joined(separator: " ")): \(result.standardError)")
            return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// The object's bytes, read with boto3 (from the test's bucket unless `bucket` says otherwise).
        func object(_ key: String, bucket: String? = nil) async throws -> [UInt8] {
            let path = scratch.path + "/object-\(UUID().uuidString)"
            try await boto(["get", bucket ?? self.bucket, key, path])
            defer { try? FileManager.default.removeItem(atPath: path) }
            return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        }

        /// The environment `attache` runs with: the uploader's keys, and shared AWS files that do not exist
        /// (so nothing of the machine's own AWS setup leaks in).
        func environment(_ extra: [String: String] = [:]) -> [String: String] {
            uploader.merging([
                "AWS_SHARED_CREDENTIALS_FILE": scratch.path + "/no-credentials",
                "AWS_CONFIG_FILE": scratch.path + "/no-config", "AWS_PROFILE": "", "AWS_REGION": "",
                "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": "", "AWS_SESSION_TOKEN": "",
            ]) { $1 }.merging(extra) { $1 }
        }

        /// The emulator's last `lines` lines of output (its request log, the traceback behind a 500): for a
        /// failure message. The server is shared, so other tests' requests are among them.
        func log(lines: Int = 80) -> String {
            "\(kind)'s output, last \(lines) lines:\n" + server.outputTail(lines: lines)
        }
    }

    /// Makes a bucket of the test's own on the server of this kind (started by the first test that asks),
    /// and runs `body`.
    ///
    /// One server of each kind serves the whole test process: a start costs about two CPU-seconds (an
    /// interpreter importing moto or MiniStack, a bucket, an IAM user), and the S3 suites ran about forty
    /// of them. Tests keep apart by bucket. The servers are killed by pid when the process exits.
    ///
    /// The boto3 interpreter is the test's alone while it runs. A test that passes leaves it idle for the
    /// next test of this kind (an interpreter importing boto3 costs about half a CPU-second, and the S3
    /// suites have about seventy test cases, at most eight at a time); a test that throws stops it, since
    /// a command may have been left half-answered.
    func run(_ body: (Running) async throws -> Void) async throws {
        let shared = try await Self.shared(self)
        let scratch = try ScratchFolder(prefix: "attache-s3-\(rawValue)")
        defer { scratch.remove() }
        let idle = Self.idleSessions.withLock { $0[self]?.popLast() }
        let boto3 = try idle ?? BotoSession(
            python: shared.python, tool: ServiceProcess.tools + "/s3_objects.py",
            endpoint: "http://127.0.0.1:\(shared.server.port)", environment: Self.root)
        let running = Running(
            kind: self, python: shared.python, server: shared.server, boto3: boto3, scratch: scratch,
            uploader: shared.uploader, bucket: "media-\(Self.buckets.add(1, ordering: .relaxed).newValue)")
        do {
            try await running.boto(["make-bucket", running.bucket])
            try await body(running)
        } catch {
            boto3.stop()
            throw error
        }
        Self.idleSessions.withLock { $0[self, default: []].append(boto3) }
    }

    /// The boto3 interpreters no test holds, by kind.
    private static let idleSessions = Mutex<[S3Emulator: [BotoSession]]>([:])

    /// Kills the idle interpreters by pid (at the process's exit).
    fileprivate static func killIdleSessions() {
        for session in idleSessions.withLock({ $0.values.flatMap { $0 } }) { session.killAtExit() }
    }

    /// A server of this process, and what every test of it shares.
    private struct Shared: @unchecked Sendable {
        let python: String
        let server: ServiceProcess
        let uploader: [String: String]
    }

    private static let buckets = Atomic<Int>(0)
    private static let servers = Mutex<[S3Emulator: Task<Shared, any Error>]>([:])

    /// The server of `kind`, started once: the tests that ask while it starts wait for the same start
    /// (and share its failure).
    private static func shared(_ kind: S3Emulator) async throws -> Shared {
        let start = servers.withLock { servers in
            if let started = servers[kind] { return started }
            let started = Task { try await kind.start() }
            servers[kind] = started
            return started
        }
        return try await start.value
    }

    private func start() async throws -> Shared {
        let python = try python(with: ["ministack", "boto3", "moto", "crc32c"])
        let port = try freePort()
        let scratch = try ScratchFolder(prefix: "attache-s3-\(rawValue)-server")
        let server: ServiceProcess
        switch self {
        case .moto:
            server = try await ServiceProcess(
                [python, "-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)], environment: Self.root,
                ready: "Running on", port: port)
        case .ministack:
            // MiniStack keeps a pid file in its temporary folder: one of our own, removed afterwards. Started
            // through `ministack_server.py`, which gives it a CRC-32C summed in C (its own, in Python, took
            // five minutes of the 1 GiB multipart test); it still checks every checksum it is sent.
            server = try await ServiceProcess(
                [python, ServiceProcess.tools + "/ministack_server.py"],
                environment: Self.root.merging([
                    "GATEWAY_PORT": String(port), "BIND_HOST": "127.0.0.1", "SERVICES": "s3,iam", "AUTH": "true",
                    "TMPDIR": scratch.path,
                ]) { $1 },
                ready: "Running on", port: port)
        }
        SharedServers.stopAtExit(server, removing: scratch)
        guard self == .ministack else { return Shared(python: python, server: server, uploader: Self.root) }
        // The uploads under test sign with an IAM user's key, whose signatures MiniStack checks.
        let boto3 = try BotoSession(
            python: python, tool: ServiceProcess.tools + "/s3_objects.py", endpoint: "http://127.0.0.1:\(port)",
            environment: Self.root)
        defer { boto3.stop() }
        let made = try await boto3.run(["iam-user", "uploader"])
        try #require(made.status == 0, "s3_objects.py iam-user: \(made.standardError)")
        let keys = try #require(try JSONSerialization.jsonObject(with: Data(made.standardOutput.utf8)) as? [String: String])
        return Shared(
            python: python, server: server,
            uploader: ["AWS_ACCESS_KEY_ID": try #require(keys["id"]), "AWS_SECRET_ACCESS_KEY": try #require(keys["secret"])])
    }
}

/// The emulators shared by the tests of this process, stopped by pid (``ServiceProcess/stop()``) and their
/// folders removed when it exits.
private enum SharedServers {
    private struct Started: @unchecked Sendable {
        let server: ServiceProcess
        let scratch: ScratchFolder
    }

    private static let started = Mutex<[Started]>([])
    /// The exit handler, registered by the first server started.
    private static let registration: Void = { atexit { SharedServers.stopAll() } }()

    static func stopAtExit(_ server: ServiceProcess, removing scratch: ScratchFolder) {
        _ = registration
        started.withLock { $0.append(Started(server: server, scratch: scratch)) }
    }

    private static func stopAll() {
        S3Emulator.killIdleSessions()
        for started in started.withLock({ $0 }) {
            started.server.stop()
            started.scratch.remove()
        }
    }
}
