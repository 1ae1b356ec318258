/// What a ``MalwareScanner`` found in one file's bytes.
public struct ScanVerdict: Sendable, Hashable, Codable {
    /// Clean or infected.
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// Nothing found.
        case clean
        /// Malware found: ``ScanVerdict/signature`` names it.
        case infected
    }

    /// Clean or infected.
    public var outcome: Outcome
    /// The signature that matched, for an infected file (`Win.Test.EICAR_HDB-1`).
    public var signature: String?
    /// The engine and signature versions that scanned it.
    public var version: ScanEngineVersion

    /// Creates a verdict.
    public init(outcome: Outcome, signature: String? = nil, version: ScanEngineVersion) {
        self.outcome = outcome
        self.signature = signature
        self.version = version
    }
}

/// The engine and signature versions of a scanner (clamd's `VERSION`: `ClamAV 1.4.6/27470/…`).
public struct ScanEngineVersion: Sendable, Hashable, Codable {
    /// The engine (`ClamAV 1.4.6`).
    public var engine: String
    /// The signature database's version (`27470`), when the engine reports one: clamd does not when
    /// its database has no `daily` part.
    public var signatures: String?

    /// Creates a version.
    public init(engine: String, signatures: String? = nil) {
        self.engine = engine
        self.signatures = signatures
    }
}
