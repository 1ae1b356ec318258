import AttacheCore
import Foundation
public import PostgresNIO

/// Where the shared queue lives: a PostgreSQL connection string, parsed, with its password kept out of
/// every rendering.
///
/// The form is libpq's URL: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE&sslrootcert=FILE]`
/// (`postgresql://` too). `sslmode` is `disable`, `prefer` (the default, as in libpq: TLS when the
/// server offers it, unverified), `require` (TLS, unverified), `verify-ca` (TLS, the chain checked
/// against `sslrootcert` or the system roots) or `verify-full` (also the host name; use this one across
/// networks you do not own). `application_name` and `connect_timeout` (seconds) are honoured too.
///
/// The password comes, in this order, from the URL (only when the URL itself was not on the command
/// line: see ``init(parsing:passwordAllowed:)``), `PGPASSWORD`, or the passfile (`PGPASSFILE`, else
/// `~/.pgpass`, used only when nobody but its owner can read it, as libpq does).
///
/// ```swift
/// var queue = try QueueConnection(parsing: "postgres://attache@db.internal/attache?sslmode=verify-full")
/// try queue.resolvePassword(environment: ProcessInfo.processInfo.environment)
/// print(queue.redacted)   // postgres://attache@db.internal:5432/attache?sslmode=verify-full
/// ```
public struct QueueConnection: Sendable, CustomStringConvertible {
    /// How the connection is encrypted (libpq's `sslmode`).
    public enum TLSMode: String, Sendable, CaseIterable {
        /// Plain text.
        case disable
        /// TLS when the server offers it, unverified (libpq's default).
        case prefer
        /// TLS, unverified.
        case require
        /// TLS, the certificate chain verified.
        case verifyCA = "verify-ca"
        /// TLS, the chain and the host name verified.
        case verifyFull = "verify-full"
    }

    /// The database user.
    public var user: String
    /// The host name or address.
    public var host: String
    /// The TCP port (5432 by default).
    public var port: Int
    /// The database.
    public var database: String
    /// How the connection is encrypted.
    public var tlsMode: TLSMode
    /// A PEM file of the certificate authorities to trust (`sslrootcert`); the system's when nil.
    public var rootCertificateFile: String?
    /// Shown in `pg_stat_activity`.
    public var applicationName: String
    /// How long one connection attempt may take.
    public var connectTimeout: Duration
    /// Never printed; see ``redacted``.
    var password: String?

    /// Whether a password is known (from the URL, `PGPASSWORD` or the passfile).
    public var hasPassword: Bool { password != nil }

    /// Parses `text`.
    ///
    /// - Parameter passwordAllowed: whether the URL may carry a password. Pass `false` for a URL that
    ///   came from the command line, where every user of the machine can read it in the process list.
    /// - Throws: ``AttacheError`` `.invalidArgument` (stage `configuration`) when the text is not a
    ///   PostgreSQL URL, names an unknown `sslmode`, or holds a password where none is allowed. The
    ///   message never repeats the password.
    public init(parsing text: String, passwordAllowed: Bool = true) throws {
        func invalid(_ message: String) -> AttacheError {
            AttacheError(.invalidArgument, stage: .configuration, message)
        }
        guard let schemeEnd = text.range(of: "://"),
            ["postgres", "postgresql"].contains(text[..<schemeEnd.lowerBound].lowercased())
        else { throw invalid("the queue must be a postgres:// URL") }
        var rest = text[schemeEnd.upperBound...]
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var databasePart: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            databasePart = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var userPart: Substring = ""
        if let at = rest.lastIndex(of: "@") {
            userPart = rest[..<at]
            rest = rest[rest.index(after: at)...]
        }
        var password: String?
        if let colon = userPart.firstIndex(of: ":") {
            password = Self.percentDecoded(userPart[userPart.index(after: colon)...])
            userPart = userPart[..<colon]
            if !passwordAllowed {
                throw invalid(
                    "the queue URL on the command line holds a password, which every user of this machine can "
                        + "read: put the URL in ATTACHE_QUEUE_URL, or the password in PGPASSWORD or a passfile (~/.pgpass)")
            }
        }
        // The host: `[v6]:port`, `name:port` or `name`.
        var hostText = String(rest)
        var port = 5432
        if hostText.hasPrefix("["), let close = hostText.firstIndex(of: "]") {
            let after = hostText[hostText.index(after: close)...]
            if after.hasPrefix(":") {
                guard let value = Int(after.dropFirst()), (1...65535).contains(value) else {
                    throw invalid("the queue URL's port is not a number from 1 to 65535")
                }
                port = value
            }
            hostText = String(hostText[hostText.index(after: hostText.startIndex)..<close])
        } else if let colon = hostText.lastIndex(of: ":") {
            guard let value = Int(hostText[hostText.index(after: colon)...]), (1...65535).contains(value) else {
                throw invalid("the queue URL's port is not a number from 1 to 65535")
            }
            port = value
            hostText = String(hostText[..<colon])
        }
        self.host = hostText.isEmpty ? "127.0.0.1" : Self.percentDecoded(Substring(hostText))
        self.port = port
        self.password = password
        let environment = ProcessInfo.processInfo.environment
        self.user = userPart.isEmpty ? (environment["PGUSER"] ?? environment["USER"] ?? "postgres") : Self.percentDecoded(userPart)
        self.database = databasePart.isEmpty ? self.user : Self.percentDecoded(databasePart)
        self.tlsMode = .prefer
        self.applicationName = "attache"
        self.connectTimeout = .seconds(10)
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let value = parts.count > 1 ? Self.percentDecoded(parts[1]) : ""
            switch name {
            case "sslmode":
                // `allow` tries plain text first, which PostgresNIO cannot; the closest safe reading is prefer.
                if value == "allow" {
                    tlsMode = .prefer
                } else {
                    guard let mode = TLSMode(rawValue: value) else {
                        throw invalid("unknown sslmode '\(value)' (disable, prefer, require, verify-ca, verify-full)")
                    }
                    tlsMode = mode
                }
            case "sslrootcert":
                rootCertificateFile = value
            case "application_name":
                applicationName = value
            case "connect_timeout":
                guard let seconds = Int(value), seconds > 0 else { throw invalid("connect_timeout must be whole seconds") }
                connectTimeout = .seconds(seconds)
            case "password":
                throw invalid("put the queue's password in ATTACHE_QUEUE_URL, PGPASSWORD or a passfile, not in a URL parameter")
            default:
                throw invalid("unknown parameter '\(name)' in the queue URL")
            }
        }
    }

    /// Fills in the password from `PGPASSWORD` or the passfile when the URL had none.
    ///
    /// The passfile is `PGPASSFILE` or `~/.pgpass`: lines of `host:port:database:user:password`, `*`
    /// matching anything and `\` escaping `:` and `\`; the first matching line wins. Like libpq, a
    /// passfile that its group or others may read is ignored.
    public mutating func resolvePassword(environment: [String: String]) {
        if password != nil { return }
        if let value = environment["PGPASSWORD"], !value.isEmpty {
            password = value
            return
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        let file = environment["PGPASSFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.pgpass"
        password = Self.passfilePassword(file: file, host: host, port: port, database: database, user: user)
    }

    package static func passfilePassword(file: String, host: String, port: Int, database: String, user: String) -> String? {
        var info = stat()
        guard stat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o077 == 0,
            let text = try? String(contentsOfFile: file, encoding: .utf8)
        else { return nil }
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            var fields: [String] = []
            var current = ""
            var escaping = false
            for character in line {
                if escaping {
                    current.append(character)
                    escaping = false
                } else if character == "\\" {
                    escaping = true
                } else if character == ":", fields.count < 4 {
                    fields.append(current)
                    current = ""
                } else {
                    current.append(character)
                }
            }
            fields.append(current)
            guard fields.count == 5 else { continue }
            let wanted = [host, String(port), database, user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// The URL without the password; what every message and log line shows.
    public var redacted: String {
        let hostText = host.contains(":") ? "[\(host)]" : host
        var text = "postgres://\(user)@\(hostText):\(port)/\(database)"
        if tlsMode != .prefer { text += "?sslmode=\(tlsMode.rawValue)" }
        return text
    }

    /// ``redacted``.
    public var description: String { redacted }

    /// Removes a password from a `postgres://` URL in free text (for messages that quote what a user typed).
    public static func redacting(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://") else { return text }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else {
            return text
        }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    /// NIOSSL's settings for ``tlsMode``, or nil for `disable`.
    /// - Throws: ``AttacheError`` `.invalidArgument` when `sslrootcert` cannot be read.
    func tlsConfiguration() throws -> TLSConfiguration? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch tlsMode {
        case .disable:
            return nil
        case .prefer, .require:
            configuration.certificateVerification = .none
        case .verifyCA, .verifyFull:
            configuration.certificateVerification = tlsMode == .verifyFull ? .fullVerification : .noHostnameVerification
            if let rootCertificateFile {
                guard FileManager.default.isReadableFile(atPath: rootCertificateFile) else {
                    throw AttacheError(
                        .invalidArgument, stage: .configuration, "cannot read the queue's sslrootcert",
                        file: rootCertificateFile)
                }
                configuration.trustRoots = .file(rootCertificateFile)
            }
        }
        return configuration
    }

    /// PostgresNIO's pool configuration for this connection.
    /// - Throws: ``AttacheError`` `.invalidArgument` when `sslrootcert` cannot be read.
    public func clientConfiguration(maximumConnections: Int = 4) throws -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        if let settings = try tlsConfiguration() {
            tls = tlsMode == .prefer ? .prefer(settings) : .require(settings)
        } else {
            tls = .disable
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = connectTimeout
        configuration.options.maximumConnections = max(1, maximumConnections)
        configuration.options.additionalStartupParameters = [("application_name", applicationName)]
        return configuration
    }

    /// PostgresNIO's configuration for one connection outside the pool (the first contact, whose
    /// failure must be reported rather than retried).
    /// - Throws: ``AttacheError`` `.invalidArgument` when `sslrootcert` cannot be read; `.tlsFailure`
    ///   when the TLS settings cannot be turned into a context.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        if let settings = try tlsConfiguration() {
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: settings)
            } catch {
                throw AttacheError(.tlsFailure, stage: .configuration, "cannot set up TLS for the queue: \(error)")
            }
            tls = tlsMode == .prefer ? .prefer(context) : .require(context)
        } else {
            tls = .disable
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .nanoseconds(connectTimeout.nanoseconds)
        configuration.options.additionalStartupParameters = [("application_name", applicationName)]
        return configuration
    }

    private static func percentDecoded(_ text: Substring) -> String {
        text.percentDecoded() ?? String(text)
    }
}
