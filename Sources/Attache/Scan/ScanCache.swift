import Glibc

/// Verdicts already known, keyed by the content's SHA-256 and the engine and signature versions, so
/// that a duplicate is not scanned twice (`--scan-cache FILE`).
///
/// A new signature database (another ``ScanEngineVersion``) misses every entry and scans again. Only
/// verdicts are kept, never a failure. With a path, the entries are also appended to that file, one
/// line each (`sha256 TAB engine TAB signatures TAB clean|infected TAB signature`, mode 0600), and read
/// back when a cache is made from it, so a later run knows them too. clamd does not report a
/// signature version for a database without a `daily` part: such a database is keyed by the engine
/// alone, so clear the file when you change it.
public final class ScanCache: Sendable {
    private struct Key: Hashable {
        var digest: String
        var version: ScanEngineVersion
    }

    /// The file the entries are appended to, when there is one.
    package let path: String?
    private let entries = LockedValue<[Key: ScanVerdict]>([:])
    private let descriptor: Int32

    /// A cache in memory only.
    public init() {
        path = nil
        descriptor = -1
    }

    /// A cache kept in the file at `path`: its entries are read now, new ones appended.
    /// - Throws: ``AttacheCore/AttacheError`` `.fileUnwritable` (stage `scan`) when the file cannot be opened.
    public init(path: String) throws {
        self.path = path
        descriptor = FileDescriptor.open(path, O_RDWR | O_CREAT | O_APPEND, mode: 0o600)
        guard descriptor >= 0 else {
            throw AttacheError.system("cannot open the scan cache", .fileUnwritable, stage: .scan, file: path)
        }
        var text: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let count = FileDescriptor.read(descriptor, into: buffer, at: offset)
            guard count > 0 else { break }
            text.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            offset += Int64(count)
        }
        var loaded: [Key: ScanVerdict] = [:]
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
                .map { String(decoding: $0, as: UTF8.self) }
            guard fields.count == 5, fields[0].count == 64,
                let outcome = ScanVerdict.Outcome(rawValue: fields[3])
            else { continue }
            let version = ScanEngineVersion(engine: fields[1], signatures: fields[2].isEmpty ? nil : fields[2])
            loaded[Key(digest: fields[0], version: version)] = ScanVerdict(
                outcome: outcome, signature: fields[4].isEmpty ? nil : fields[4], version: version)
        }
        entries.withLock { $0 = loaded }
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// The verdict for content with SHA-256 `digest` under `version`, when one is known.
    package func verdict(digest: String, version: ScanEngineVersion) -> ScanVerdict? {
        entries.withLock { $0[Key(digest: digest, version: version)] }
    }

    /// Keeps `verdict` for content with SHA-256 `digest` (and appends it to the file, if any).
    package func store(_ verdict: ScanVerdict, digest: String) {
        let key = Key(digest: digest, version: verdict.version)
        let isNew = entries.withLock { entries -> Bool in
            defer { entries[key] = verdict }
            return entries[key] == nil
        }
        guard isNew, descriptor >= 0 else { return }
        let clean: (String) -> String = { $0.filter { $0 != "\t" && $0 != "\n" } }
        let line = [
            digest, clean(verdict.version.engine), clean(verdict.version.signatures ?? ""), verdict.outcome.rawValue,
            clean(verdict.signature ?? ""),
        ].joined(separator: "\t") + "\n"
        // One write of one short line to a file opened O_APPEND: lines of concurrent writers never mix.
        _ = Array(line.utf8).withUnsafeBytes { FileDescriptor.writeAll(descriptor, $0) }
    }

    /// How many verdicts are known.
    package var count: Int { entries.withLock { $0.count } }
}
