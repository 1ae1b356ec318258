import Foundation
import AttacheTestSupport
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

    /// A running emulator with a bucket `media`.
    struct Running {
        let kind: S3Emulator
        let python: String
        let server: ServiceProcess
        /// The boto3 commands' interpreter (`s3_objects.py ENDPOINT serve`), with the root credentials.
        let boto3: BotoSession
        let scratch: ScratchFolder
        /// The credentials uploads use: an IAM user's on MiniStack (signatures checked), the root's on moto.
        let uploader: [String: String]

        var endpoint: String { "http://127.0.0.1:\(server.port)" }
        var tool: String { ServiceProcess.tools + "/s3_objects.py" }

        /// Runs `s3_objects.py ENDPOINT arguments...` with the root credentials; its standard output.
        @discardableResult
        func boto(_ arguments: [String]) async throws -> String {
            let result = try await boto3.run(arguments)
            try #require(result.status == 0, "s3_objects.py \(arguments.joined(separator: " ")): \(result.standardError)")
            return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// The object's bytes, read with boto3.
        func object(_ key: String, bucket: String = "media") async throws -> [UInt8] {
            let path = scratch.path + "/object-\(UUID().uuidString)"
            try await boto(["get", bucket, key, path])
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
        /// failure message.
        func log(lines: Int = 80) -> String {
            "\(kind)'s output, last \(lines) lines:\n" + server.outputTail(lines: lines)
        }

        func stop() {
            boto3.stop()
            server.stop()
            scratch.remove()
        }
    }

    /// Starts the emulator, makes the bucket `media`, runs `body`, and stops it by pid.
    func run(_ body: (Running) async throws -> Void) async throws {
        let python = try python(with: ["ministack", "boto3", "moto", "crc32c"])
        let port = try freePort()
        let scratch = try ScratchFolder(prefix: "attache-s3-\(rawValue)")
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
        let boto3: BotoSession
        do {
            boto3 = try BotoSession(
                python: python, tool: ServiceProcess.tools + "/s3_objects.py", endpoint: "http://127.0.0.1:\(server.port)",
                environment: Self.root)
        } catch {
            server.stop()
            scratch.remove()
            throw error
        }
        var running = Running(kind: self, python: python, server: server, boto3: boto3, scratch: scratch, uploader: Self.root)
        defer { running.stop() }
        try await running.boto(["make-bucket", "media"])
        if self == .ministack {
            let user = try JSONSerialization.jsonObject(with: Data(try await running.boto(["iam-user", "uploader"]).utf8))
            let keys = try #require(user as? [String: String])
            running = Running(
                kind: self, python: python, server: server, boto3: boto3, scratch: scratch,
                uploader: ["AWS_ACCESS_KEY_ID": try #require(keys["id"]), "AWS_SECRET_ACCESS_KEY": try #require(keys["secret"])])
        }
        try await body(running)
    }
}
