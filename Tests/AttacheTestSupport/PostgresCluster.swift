import Attache
import Foundation
import Synchronization
import Testing

/// A temporary PostgreSQL cluster on a free 127.0.0.1 port, for the shared queue's tests: one per test
/// run of the queue suites (``SharedPostgresCluster``), one database per test.
///
/// Debian's `postgresql` package (Scripts/bootstrap.sh) provides the binaries under
/// `/usr/lib/postgresql/VERSION/bin`. `initdb` refuses to run as root, so under root (CI) the cluster
/// runs as the package's `postgres` user (else `nobody`), in a folder that user owns; `setpriv` execs the
/// server in place, so the pid we stop is the postmaster's. Connections need a password (SCRAM), which
/// reaches every command through `PGPASSWORD` only, never argv.
package final class PostgresCluster: Sendable {
    package let port: Int
    package let directory: String
    package let binaries: String
    /// The superuser's password, random per cluster; give it to commands as `PGPASSWORD`.
    package let password: String
    /// The server's self-signed certificate (PEM), for `sslrootcert`.
    package let certificate: String
    private let server: Mutex<ServiceProcess?>

    package static let user = "attache"

    /// The newest installed server's `bin` folder, or nil.
    package static var installedBinaries: String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions {
            let bin = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb"),
                FileManager.default.isExecutableFile(atPath: bin + "/postgres")
            {
                return bin
            }
        }
        return nil
    }

    /// Why the queue tests cannot run here, or nil when they can.
    package static var unavailableReason: String? {
        installedBinaries == nil ? "PostgreSQL is not installed (Debian package postgresql; run Scripts/bootstrap.sh)" : nil
    }

    private init(
        port: Int, directory: String, binaries: String, password: String, certificate: String,
        server: sending ServiceProcess
    ) {
        self.certificate = certificate
        self.port = port
        self.directory = directory
        self.binaries = binaries
        self.password = password
        self.server = Mutex(server)
    }

    /// The environment every command talking to the cluster gets.
    package var environment: [String: String] { ["PGPASSWORD": password] }

    /// Creates a cluster and starts its server.
    package static func start() async throws -> PostgresCluster {
        guard let binaries = installedBinaries else { throw TestFailure(unavailableReason ?? "no PostgreSQL") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-pg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let password = randomBytes(18).map { String(format: "%02x", $0) }.joined()
        let passwordFile = directory + "/pw"
        try Data(password.utf8).write(to: URL(fileURLWithPath: passwordFile))
        chmod(passwordFile, 0o600)
        var prefix: [String] = []
        if geteuid() == 0 {
            let account = getpwnam("postgres") ?? getpwnam("nobody")
            guard let account else { throw TestFailure("no postgres or nobody user to run PostgreSQL as") }
            let (uid, gid) = (account.pointee.pw_uid, account.pointee.pw_gid)
            for path in [directory, passwordFile] { chown(path, uid, gid) }
            prefix = ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--"]
        }
        let initdb = try await runCommand(
            prefix.first ?? binaries + "/initdb",
            Array(prefix.dropFirst()) + (prefix.isEmpty ? [] : [binaries + "/initdb"]) + [
                "-D", directory + "/data", "-U", user, "--pwfile=" + passwordFile, "-A", "scram-sha-256",
                "-E", "UTF8", "--locale=C", "--no-sync",
            ])
        try? FileManager.default.removeItem(atPath: passwordFile)
        guard initdb.status == 0 else { throw TestFailure("initdb failed: \(initdb.all)") }
        // TLS with a throwaway certificate for localhost and 127.0.0.1 (the server also takes plain text).
        let certificate = directory + "/server.crt"
        let key = directory + "/server.key"
        let openssl = try await runCommand(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ])
        guard openssl.status == 0 else { throw TestFailure("openssl req failed: \(openssl.all)") }
        chmod(key, 0o600)
        if geteuid() == 0, let account = getpwnam("postgres") ?? getpwnam("nobody") {
            for path in [certificate, key] { chown(path, account.pointee.pw_uid, account.pointee.pw_gid) }
        }
        // Durability is not what these tests measure: no fsync keeps 1,000-file runs quick.
        let port = try freePort()
        let server = try await ServiceProcess(
            prefix + [
                binaries + "/postgres", "-D", directory + "/data", "-p", String(port), "-k", directory,
                "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
                "-c", "full_page_writes=off", "-c", "max_connections=200",
                "-c", "ssl=on", "-c", "ssl_cert_file=" + certificate, "-c", "ssl_key_file=" + key,
            ], ready: "ready to accept connections", port: port)
        return PostgresCluster(
            port: port, directory: directory, binaries: binaries, password: password, certificate: certificate,
            server: server)
    }

    /// A new, empty database; returns its URL (no password in it).
    package func createDatabase() async throws -> String {
        let name = "q" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let result = try await runCommand(
            binaries + "/createdb", ["-h", "127.0.0.1", "-p", String(port), "-U", Self.user, String(name)],
            environment: environment)
        guard result.status == 0 else { throw TestFailure("createdb failed: \(result.all)") }
        return "postgres://\(Self.user)@127.0.0.1:\(port)/\(name)?sslmode=disable"
    }

    /// One value from `sql` in database `url`'s database, through psql.
    package func scalar(_ sql: String, in url: String) async throws -> String {
        let database = String(url.split(separator: "/").last?.split(separator: "?").first ?? "")
        let result = try await runCommand(
            binaries + "/psql",
            ["-h", "127.0.0.1", "-p", String(port), "-U", Self.user, "-d", database, "-At", "-c", sql],
            environment: environment)
        guard result.status == 0 else { throw TestFailure("psql failed: \(result.all)") }
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Fast shutdown (SIGINT to the postmaster, by pid), then the folder is removed.
    package func stop() {
        if let server = server.withLock({ value -> ServiceProcess? in
            let taken = value
            value = nil
            return taken
        }) {
            kill(server.process.processIdentifier, SIGINT)
            server.process.waitForExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The cluster of the running suite (``SharedPostgresCluster``).
    @TaskLocal package static var shared: PostgresCluster?

    /// The suite's cluster, or a failure naming the missing trait.
    package static func current() throws -> PostgresCluster {
        guard let shared else { throw TestFailure("no cluster: the suite needs the .sharedPostgresCluster trait") }
        return shared
    }
}

/// Starts one cluster around a whole suite and stops it at the end, so that its tests share it.
package struct SharedPostgresCluster: SuiteTrait, TestScoping {
    package var isRecursive: Bool { false }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let cluster = try await PostgresCluster.start()
        defer { cluster.stop() }
        try await PostgresCluster.$shared.withValue(cluster) { try await function() }
    }
}

extension Trait where Self == SharedPostgresCluster {
    /// One temporary PostgreSQL cluster for the suite's tests.
    package static var sharedPostgresCluster: Self { SharedPostgresCluster() }
}
