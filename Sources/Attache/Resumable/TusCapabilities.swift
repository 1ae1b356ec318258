/// The capabilities a tus server announced in its `OPTIONS` answer.
struct TusCapabilities: Sendable {
    var extensions: Set<String> = []
    var maximumSize: Int64?
    var checksumAlgorithms: [String] = []

    /// The checksum to send: `sha256` when listed, else `sha1`, else none.
    var checksumAlgorithm: String? {
        guard extensions.contains("checksum") else { return nil }
        if checksumAlgorithms.contains("sha256") { return "sha256" }
        if checksumAlgorithms.contains("sha1") { return "sha1" }
        return nil
    }
}
