/// A verdict found before the pipeline ran (``AttachmentPipeline/scanAheadBlocking(fileAt:detection:sha256:)``),
/// which the Scan stage takes instead of scanning the same file again.
package struct ScannedAhead: Sendable {
    /// The file that was scanned.
    package let path: String
    /// What the scanner found.
    package let verdict: ScanVerdict
    /// How long the scan took.
    package let seconds: Double
}
