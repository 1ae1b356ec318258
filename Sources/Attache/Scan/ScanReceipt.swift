/// What the Scan stage did for one attachment: `scan {engine, signatures, verdict, signature?, seconds}`
/// in the receipt.
public struct ScanReceipt: Sendable, Hashable, Codable {
    /// The receipt's verdict.
    public enum Verdict: String, Sendable, Hashable, Codable {
        /// Scanned, nothing found.
        case clean
        /// Scanned, malware found (only in a journal's or queue's record of a refused file: an
        /// infected file is never sent, so no upload receipt says this).
        case infected
        /// Not scanned: the scanner gave no verdict and the policy (`--scan-failure send`) sent it anyway.
        case unscanned
    }

    /// The engine that scanned (`ClamAV 1.4.6`); nil when unscanned before any answer.
    public var engine: String?
    /// The signature database's version, when the engine reports one.
    public var signatures: String?
    /// Clean, infected or unscanned.
    public var verdict: Verdict
    /// The signature that matched.
    public var signature: String?
    /// Seconds spent in the stage.
    public var seconds: Double
    /// Why it went unscanned.
    public var reason: String?
    /// True when the verdict came from the ``ScanCache`` (these bytes were scanned before, by the same
    /// engine and signatures), not from a scan now; nil when no cache is configured.
    public var cached: Bool?
    /// True when the original was scanned too (``ScanConfiguration/scansOriginal`` and Transform changed
    /// the file).
    public var original: Bool?

    /// Creates a scan receipt.
    package init(
        engine: String?, signatures: String?, verdict: Verdict, signature: String? = nil, seconds: Double,
        reason: String? = nil, cached: Bool? = nil, original: Bool? = nil
    ) {
        self.engine = engine
        self.signatures = signatures
        self.verdict = verdict
        self.signature = signature
        self.seconds = seconds
        self.reason = reason
        self.cached = cached
        self.original = original
    }
}
