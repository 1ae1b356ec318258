/// What makes a file "the same file" for the journal and the shared queue (with its absolute path).
package struct FileIdentity: Sendable, Hashable {
    package var byteCount: Int64
    /// Nanoseconds since the epoch.
    package var modificationTime: Int64
    /// Lower-case hex SHA-256 of the content.
    package var sha256: String

    package init(byteCount: Int64, modificationTime: Int64, sha256: String) {
        self.byteCount = byteCount
        self.modificationTime = modificationTime
        self.sha256 = sha256
    }
}
