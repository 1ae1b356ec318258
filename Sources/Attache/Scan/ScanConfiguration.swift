/// The Scan stage's settings: which scanner, what it sees, and what happens when it cannot answer.
///
/// With no ``scanner`` (the default) there is no Scan stage. With one, every attachment's bytes as
/// they will be sealed (after Transform) are scanned before anything is sent; an infected file fails
/// with ``AttacheCore/AttacheError/Code/infected`` and nothing of it is sent.
public struct ScanConfiguration: Sendable {
    /// The scanner; nil: no scanning.
    public var scanner: (any MalwareScanner)?
    /// What happens when the scanner cannot give a verdict (unreachable, its own error, over its size
    /// limit, no answer in time): ``ScanFailurePolicy/refuse`` (the default) fails the send;
    /// ``ScanFailurePolicy/send`` sends the file and the receipt says `unscanned`.
    public var failurePolicy = ScanFailurePolicy.refuse
    /// Also scan the original when Transform changed it (a recompressed photo, a converted video): the
    /// file is refused when either is infected.
    public var scansOriginal = false
    /// Verdicts already known, by content digest and signature version; nil: every file is scanned.
    public var cache: ScanCache?
    /// How long a file waits for a scanner that cannot be reached (refused, or it went away while
    /// scanning) before it fails, trying again with backoff; nil (the default): it fails at once. Only
    /// under ``ScanFailurePolicy/refuse``: with `send` the file goes out unscanned at once.
    /// `attache batch` and `worker` set it, so that a restarted clamd lets the waiting files go on.
    public var unreachableWait: Duration?

    /// Creates the settings; no scanner means no Scan stage.
    public init(scanner: (any MalwareScanner)? = nil) {
        self.scanner = scanner
    }
}

/// What the Scan stage does when the scanner gives no verdict.
public enum ScanFailurePolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Fail the send (the default): nothing unscanned leaves.
    case refuse
    /// Send it anyway; the receipt's scan says `unscanned` and why.
    case send
}
