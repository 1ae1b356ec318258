import FoundationEssentials

/// Where the time of one exchange went, as libcurl measured it (`CURLINFO_*_TIME_T`), and the bytes
/// that moved.
///
/// Every point is measured from the start of the exchange, so they add up rather than overlap:
/// ``nameLookup`` ≤ ``connect`` ≤ ``tlsHandshake`` ≤ ``firstByte`` ≤ ``total``. A reused connection
/// shows zero (or near zero) DNS, connect and TLS times; plain `http` has no TLS time (zero). With
/// redirects followed, the figures are those of the last hop.
package struct TransferTimings: Sendable, Hashable, Codable {
    /// Until the host name was resolved.
    package var nameLookup: Duration
    /// Until the TCP connection was established.
    package var connect: Duration
    /// Until the TLS handshake was done (zero over plain `http`).
    package var tlsHandshake: Duration
    /// Until the first byte of the answer arrived (curl's "start transfer").
    package var firstByte: Duration
    /// The whole exchange.
    package var total: Duration
    /// Request body bytes sent.
    package var bytesSent: Int64
    /// Answer body bytes received, as libcurl counts them.
    package var bytesReceived: Int64

    /// Creates timings.
    package init(
        nameLookup: Duration = .zero, connect: Duration = .zero, tlsHandshake: Duration = .zero,
        firstByte: Duration = .zero, total: Duration = .zero, bytesSent: Int64 = 0, bytesReceived: Int64 = 0
    ) {
        self.nameLookup = nameLookup
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.firstByte = firstByte
        self.total = total
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
    }

    /// `dns 0.1ms connect 0.3ms tls 0.0ms first-byte 2.4ms total 2.6ms`, for log lines.
    package var summary: String {
        "dns \(Self.format(nameLookup)) connect \(Self.format(connect)) tls \(Self.format(tlsHandshake)) "
            + "first-byte \(Self.format(firstByte)) total \(Self.format(total))"
    }

    /// Milliseconds with one decimal, without `String(format:)` (the module is Foundation-free).
    static func format(_ duration: Duration) -> String {
        let tenths = (duration.microseconds + 50) / 100
        return "\(tenths / 10).\(tenths % 10)ms"
    }
}
