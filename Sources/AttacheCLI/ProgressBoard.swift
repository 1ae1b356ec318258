package import Attache
import AttacheCore
import FoundationEssentials

/// A one-line live view of the uploads in flight, redrawn in place on a terminal.
package final class ProgressBoard: Sendable {
    private struct Entry {
        var path: String
        var progress: UploadProgress
    }
    private struct State {
        var entries: [Int: Entry] = [:]
        var lastDraw = ContinuousClock.now - .seconds(1)
    }

    private let enabled: Bool
    private let state = LockedValue(State())

    package init(enabled: Bool) { self.enabled = enabled }

    package func update(index: Int, path: String, _ progress: UploadProgress) {
        guard enabled else { return }
        let line = state.withLock { state -> String? in
            state.entries[index] = Entry(path: path, progress: progress)
            let now = ContinuousClock.now
            guard now - state.lastDraw > .milliseconds(100) || progress.fractionCompleted >= 1 else { return nil }
            state.lastDraw = now
            return Self.render(state.entries)
        }
        if let line { Console.status(line) }
    }

    package func done(index: Int) {
        guard enabled else { return }
        _ = state.withLock { $0.entries.removeValue(forKey: index) }
    }

    package func finish() {
        if enabled { Console.clearStatus() }
    }

    private static func render(_ entries: [Int: Entry]) -> String {
        entries.sorted { $0.key < $1.key }.prefix(3).map { _, entry in
            let name = PathText.lastComponent(entry.path)
            let percent = Int(entry.progress.fractionCompleted * 100)
            let retry = entry.progress.attempt > 1 ? " try \(entry.progress.attempt)" : ""
            let resumed =
                entry.progress.resumedBytes > 0 ? " (\(formatBytes(entry.progress.resumedBytes)) already there)" : ""
            return "\(name.prefix(24)) \(percent)% of \(formatBytes(entry.progress.totalBytes))\(resumed)\(retry)"
        }.joined(separator: " | ")
    }
}
