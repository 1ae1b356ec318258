/// A verdict found before the pipeline ran (``AttachmentPipeline/scanAhead(fileAt:detection:sha256:)``),
/// which the Scan stage takes (``SendOptions/scannedAhead``) instead of scanning the same file again.
public struct ScannedAhead: Sendable {
    /// The file that was scanned.
    public let path: String
    /// What the scanner found.
    public let verdict: ScanVerdict
    /// How long the scan took, in seconds.
    public let seconds: Double
}
