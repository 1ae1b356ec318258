/// Where clamd listens: a UNIX socket (`unix:/run/clamav/clamd.ctl`) or TCP (`tcp:127.0.0.1:3310`).
public enum ClamdAddress: Sendable, Hashable, CustomStringConvertible {
    /// A UNIX socket at this path (`LocalSocket` in clamd.conf). Only here can files be passed as open
    /// descriptors (`FILDES`).
    case unix(path: String)
    /// A TCP address (`TCPAddr`, `TCPSocket`).
    case tcp(host: String, port: Int)

    /// Reads `unix:PATH` or `tcp:HOST:PORT` (`tcp:[::1]:3310` for an IPv6 literal).
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`).
    package init(parsing text: String) throws {
        func bad(_ why: String) -> AttacheError {
            AttacheError(
                .invalidArgument, stage: .configuration,
                "not a clamd address (\(why)): expected unix:PATH or tcp:HOST:PORT, got \(text)")
        }
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            guard !path.isEmpty else { throw bad("no socket path") }
            // sockaddr_un holds 108 bytes with the terminating NUL.
            guard path.utf8.count < 108 else { throw bad("the socket path is longer than 107 bytes") }
            self = .unix(path: path)
        } else if text.hasPrefix("tcp:") {
            let rest = text.dropFirst(4)
            guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]),
                (1...65535).contains(port)
            else { throw bad("no port") }
            var host = String(rest[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { throw bad("no host") }
            self = .tcp(host: host, port: port)
        } else {
            throw bad("unknown scheme")
        }
    }

    /// `unix:PATH` or `tcp:HOST:PORT`, as parsed.
    public var description: String {
        switch self {
        case .unix(let path): "unix:\(path)"
        case .tcp(let host, let port): host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        }
    }
}
