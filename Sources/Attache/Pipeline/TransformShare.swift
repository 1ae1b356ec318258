internal import AttacheCore
import FoundationEssentials
import Glibc

/// The transforms of one pipeline's identical sources, made once: the first send of a content (its SHA-256,
/// with the type and kind the transform goes by) transforms it, and the sends of the same content, at the
/// same time or later in the run, wait for that and take its output (``PipelineConfiguration/sharesTransforms``).
///
/// Each send still seals its payload with its own key and sends it on its own: no server can tell that two
/// uploads had one source. Outputs no send holds are kept for later copies, the most recently used first,
/// up to ``keptByteLimit`` bytes on disk (256 MiB: some 2,000 recompressed photos with their thumbnails)
/// and ``keptEntryLimit`` sources; the rest are deleted. The pipeline's end deletes what is kept.
final class TransformShare: Sendable {
    /// What makes two transforms the same: the source's bytes and what the transform goes by. The
    /// transform's settings are the pipeline's, the same for every send.
    struct Key: Hashable, Sendable {
        var digest: [UInt8]
        var mimeType: String
        var kind: MessageKind
        var isAnimated: Bool
    }

    /// A transform made: its output, in a work directory the share owns.
    struct Made: Sendable {
        var output: TransformOutput
        var workDirectory: String
        var byteCount: Int64
    }

    /// A send's hold on a made transform, given back by ``release()`` when the send is over.
    struct Lease: Sendable {
        let share: TransformShare
        let key: Key
        let made: Made
        /// True when another send made it (this one took its output).
        let reused: Bool

        func release() { share.release(key) }
    }

    private struct Entry {
        var task: Task<Made, any Error>
        var users: Int
        var lastUse: UInt64
        /// Set once made: what a released entry holds on disk.
        var made: Made?
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var clock: UInt64 = 0
    }

    /// Bytes of outputs kept on disk for later copies once no send holds them.
    let keptByteLimit: Int64
    /// Sources whose outputs are kept for later copies.
    let keptEntryLimit: Int
    private let state = LockedValue(State())

    init(keptByteLimit: Int64 = 256 << 20, keptEntryLimit: Int = 4_096) {
        self.keptByteLimit = keptByteLimit
        self.keptEntryLimit = keptEntryLimit
        _ = Self.removedAtExit
    }

    deinit {
        for entry in state.withLock({ Array($0.entries.values) }) {
            entry.task.cancel()
            if let made = entry.made { Self.remove(made.workDirectory) }
        }
    }

    /// The work directories of every share in the process, deleted at exit too: a command may end
    /// (`exit`) with its pipeline still referenced, and its deinit never runs.
    private static let live = LockedValue<Set<String>>([])
    private static let removedAtExit: Bool = {
        atexit {
            for directory in TransformShare.live.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: directory) }
        }
        return true
    }()

    private static func remove(_ directory: String) {
        try? FileManager.default.removeItem(atPath: directory)
        _ = live.withLock { $0.remove(directory) }
    }

    /// The transform of `key`: made now by `make` (in a work directory of the share's), or taken from the
    /// send that made or is making it. Nil when that send's transform failed: the caller then transforms on
    /// its own (the failure may be the other file's, and its error names that file).
    ///
    /// - Throws: what `make` throws, when this call made it; `CancellationError`.
    func lease(_ key: Key, make: @escaping @Sendable (_ workDirectory: String) async throws -> TransformOutput) async throws -> Lease? {
        let (task, isMaker) = state.withLock { state -> (Task<Made, any Error>, Bool) in
            state.clock += 1
            if var entry = state.entries[key] {
                entry.users += 1
                entry.lastUse = state.clock
                state.entries[key] = entry
                return (entry.task, false)
            }
            let task = Task<Made, any Error> {
                let workDirectory = try AttachmentPipeline.makeWorkDirectory()
                _ = Self.live.withLock { $0.insert(workDirectory) }
                do {
                    let output = try await make(workDirectory)
                    return Made(output: output, workDirectory: workDirectory, byteCount: Self.size(of: workDirectory))
                } catch {
                    Self.remove(workDirectory)
                    throw error
                }
            }
            state.entries[key] = Entry(task: task, users: 1, lastUse: state.clock)
            return (task, true)
        }
        do {
            let value = try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                if isMaker { task.cancel() }
            }
            state.withLock { state in
                if state.entries[key]?.task == task { state.entries[key]?.made = value }
            }
            return Lease(share: self, key: key, made: value, reused: !isMaker)
        } catch {
            state.withLock { state in
                if state.entries[key]?.task == task { state.entries[key] = nil }
            }
            try Task.checkCancellation()
            if isMaker { throw error }
            return nil
        }
    }

    /// A send is done with `key`'s output; outputs no send holds beyond the limits are deleted, least
    /// recently used first.
    private func release(_ key: Key) {
        let removed = state.withLock { state -> [String] in
            guard var entry = state.entries[key] else { return [] }
            entry.users -= 1
            state.entries[key] = entry
            var idle = state.entries.filter { $0.value.users <= 0 }.sorted { $0.value.lastUse < $1.value.lastUse }
            var keptBytes = idle.reduce(Int64(0)) { $0 + ($1.value.made?.byteCount ?? 0) }
            var directories: [String] = []
            while !idle.isEmpty && (keptBytes > keptByteLimit || idle.count > keptEntryLimit) {
                let (oldest, entry) = idle.removeFirst()
                state.entries[oldest] = nil
                keptBytes -= entry.made?.byteCount ?? 0
                if let made = entry.made { directories.append(made.workDirectory) }
            }
            return directories
        }
        for directory in removed { Self.remove(directory) }
    }

    private static func size(of directory: String) -> Int64 {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
        return names.reduce(Int64(0)) { total, name in
            var status = stat()
            return total + (stat(directory + "/" + name, &status) == 0 ? Int64(status.st_size) : 0)
        }
    }
}
