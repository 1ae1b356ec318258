// The package's one conversion of a `Duration` to a number. The standard library gives only
// `components` (whole seconds and attoseconds); every timeout handed to curl or clamd, every seconds
// field of a receipt and every timer reading goes through these.

extension Duration {
    /// The duration in seconds, as a floating-point number (receipts, rates, log lines).
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole milliseconds, rounded toward zero (curl's and `poll`'s timeouts).
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The duration in whole microseconds, rounded toward zero (curl's transfer timings).
    package var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    /// The duration in whole nanoseconds, rounded toward zero (metrics timers, NIO's `TimeAmount`).
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
