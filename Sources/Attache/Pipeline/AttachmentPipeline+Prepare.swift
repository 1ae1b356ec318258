/// The prepare stage's hand-off: the attachment's bytes ready for every later stage.
///
/// A file is read where it is, bytes from memory; a stream has been read to its end (into memory, or a
/// private spool file when large), because every attempt must send the same bytes. ``remove()`` deletes
/// the spool once the send is over.
struct PreparedAttachment: Sendable {
    /// The attachment as the caller gave it.
    let attachment: Attachment
    /// The name to send; a name whose bytes are not UTF-8 has U+FFFD for each such byte (PlatformPath).
    let filename: String
    /// Where the bytes are now: a file, or memory.
    let input: PreparedInput
    /// The bytes as they are, for a payload that Transform leaves alone.
    let original: any ByteSource
    /// The file's source that checks its content while it reads, when the bytes are in a file: a reader
    /// that finds them changed (whatever the size and modification time say) fails before handing out
    /// the last bytes, so a torn file never completes on the server. Memory cannot change under us.
    let guarded: FileSource?
    /// When the send began, for the receipt's `seconds`.
    let start: ContinuousClock.Instant

    /// The path the attachment goes by in receipts and errors.
    var path: String { attachment.path }

    /// Deletes what preparing made (a stream's spool).
    func remove() { input.remove() }
}

extension AttachmentPipeline {
    /// prepare: Attachment → PreparedAttachment.
    func prepare(_ attachment: Attachment) async throws -> PreparedAttachment {
        let start = ContinuousClock.now
        let filename = PlatformPath.displayName(attachment.filename ?? PathText.lastComponent(attachment.path))
        let input = try await PreparedInput(attachment, filename: filename)
        do {
            let original: any ByteSource
            let guarded: FileSource?
            switch input.content {
            case .file(let path):
                let source = try FileSource(path: path, verifiesContent: true)
                guarded = source
                original = source
            case .memory(let bytes):
                guarded = nil
                original = DataSource(bytes)
            }
            return PreparedAttachment(
                attachment: attachment, filename: filename, input: input, original: original, guarded: guarded,
                start: start)
        } catch {
            input.remove()
            throw error
        }
    }
}
