import Glibc

/// Walks files and folders lazily, a page at a time, so that a batch over 100,000 files starts at once
/// and holds only the names of the directories it is inside (sorted, for a stable order).
///
/// Symbolic links inside a folder are followed only when their target stays inside the folder given on
/// the command line (a link to a folder is then skipped, since the folder itself is walked), unless
/// `followSymlinks` is set; a path named on the command line is always followed. Blocking: call
/// ``next(limit:)`` from a ``BlockingPool`` thread. The batch, the shared queue's enqueuer and `attache scan`
/// walk with it.
package final class FileWalker: Sendable {
    /// One thing the walk found.
    package enum Item: Sendable, Equatable {
        /// A regular file to send, with its size.
        case file(path: String, byteCount: Int64)
        /// A path that is not sent, and why.
        case skipped(path: String, reason: String)
        /// A path that could not be examined (a dangling link, an unreadable folder).
        case failed(path: String, code: AttacheError.Code, message: String)
        /// A file or folder the filter leaves out (``WalkFilter``); a folder is not entered.
        case filtered(path: String, reason: WalkFilter.Reason)
    }

    private struct Frame {
        var directory: String
        var names: [String]
        var index = 0
        /// The real path of the command-line folder this one is under.
        var rootReal: String
        /// That folder as given, without a trailing `/`: paths under it are matched relative to it.
        var root: String
        var node: FileNode
    }

    // The walk state is only touched under the lock; the lock makes the walker Sendable so that pages
    // can be fetched from pool threads one after another.
    private struct State {
        var roots: [String]
        var nextRoot = 0
        var stack: [Frame] = []
    }

    private let followSymlinks: Bool
    private let excluded: Set<String>
    private let filter: WalkFilter
    private let state: LockedValue<State>

    /// Creates a walker over `roots`, never yielding the absolute paths in `excluding`, taking what
    /// `filter` takes (everything by default).
    package init(roots: [String], followSymlinks: Bool, excluding: Set<String> = [], filter: WalkFilter = .everything) {
        self.followSymlinks = followSymlinks
        self.excluded = excluding
        self.filter = filter
        self.state = LockedValue(State(roots: roots))
    }

    /// Returns up to `limit` items; an empty array means the walk is over.
    package func next(limit: Int) -> [Item] {
        state.withLock { state in
            var items: [Item] = []
            while items.count < limit {
                if var frame = state.stack.popLast() {
                    guard frame.index < frame.names.count else { continue }
                    let name = frame.names[frame.index]
                    frame.index += 1
                    let path = frame.directory == "/" ? "/" + name : frame.directory + "/" + name
                    let rootReal = frame.rootReal
                    let relative = String(path.dropFirst(frame.root == "/" ? 1 : frame.root.count + 1))
                    state.stack.append(frame)
                    // The folders above `path` (a loop check needs them, for a link to a folder only):
                    // passed as the array it is, which a push below copies only when a folder is entered.
                    let ancestors = state.stack
                    if let item = visit(
                        path, relative: relative, rootReal: rootReal, root: frame.root, ancestors: ancestors,
                        push: { state.stack.append($0) })
                    {
                        items.append(item)
                    }
                } else if state.nextRoot < state.roots.count {
                    let root = state.roots[state.nextRoot]
                    state.nextRoot += 1
                    if let item = visitRoot(root, push: { state.stack.append($0) }) {
                        items.append(item)
                    }
                } else {
                    break
                }
            }
            return items
        }
    }

    private func visitRoot(_ path: String, push: (Frame) -> Void) -> Item? {
        var info = stat()
        guard PlatformPath.withCString(path, { stat($0, &info) }) == 0 else {
            let error = AttacheError.system("cannot look at it", stage: .batch, file: path, missing: "no such file or folder")
            return .failed(path: path, code: error.code, message: error.message)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            if isExcluded(path) { return nil }
            if let reason = filter.reason(forFile: PathText.lastComponent(path), byteCount: Int64(info.st_size), named: true) {
                return .filtered(path: path, reason: reason)
            }
            return .file(path: path, byteCount: Int64(info.st_size))
        case S_IFDIR:
            let real = Self.realPath(path) ?? path
            let root = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
            return enter(path, info: info, rootReal: real, root: root, push: push)
        default:
            return .skipped(path: path, reason: "not a regular file")
        }
    }

    private func visit(
        _ path: String, relative: String, rootReal: String, root: String, ancestors: [Frame], push: (Frame) -> Void
    ) -> Item? {
        var info = stat()
        guard PlatformPath.withCString(path, { lstat($0, &info) }) == 0 else {
            let code = errno
            // Gone between listing and looking: nothing to send, but counted and reported like every
            // other name the walk meets.
            if code == ENOENT { return .skipped(path: path, reason: "removed while the folder was being walked") }
            let error = AttacheError.system("cannot look at it", errno: code, stage: .batch, file: path)
            return .failed(path: path, code: error.code, message: error.message)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            if isExcluded(path) { return nil }
            if let reason = filter.reason(forFile: relative, byteCount: Int64(info.st_size), named: false) {
                return .filtered(path: path, reason: reason)
            }
            return .file(path: path, byteCount: Int64(info.st_size))
        case S_IFDIR:
            if let reason = filter.reason(forFolder: relative) { return .filtered(path: path, reason: reason) }
            return enter(path, info: info, rootReal: rootReal, root: root, push: push)
        case S_IFLNK:
            var target = stat()
            guard PlatformPath.withCString(path, { stat($0, &target) }) == 0, let real = Self.realPath(path) else {
                return .failed(path: path, code: .fileNotFound, message: "the symbolic link's target does not exist")
            }
            let inside = real == rootReal || real.hasPrefix(rootReal == "/" ? "/" : rootReal + "/")
            let isDirectory = (target.st_mode & S_IFMT) == S_IFDIR
            if !followSymlinks {
                guard inside else {
                    return .skipped(path: path, reason: "symbolic link leaves the folder (use --follow-symlinks)")
                }
                if isDirectory {
                    return .skipped(path: path, reason: "symbolic link to a folder inside the walk")
                }
            }
            if isDirectory {
                let node = FileNode(target)
                if ancestors.contains(where: { $0.node == node }) {
                    return .skipped(path: path, reason: "symbolic link loop")
                }
                if let reason = filter.reason(forFolder: relative) { return .filtered(path: path, reason: reason) }
                return enter(path, info: target, rootReal: rootReal, root: root, push: push)
            }
            guard (target.st_mode & S_IFMT) == S_IFREG else {
                return .skipped(path: path, reason: "not a regular file")
            }
            if isExcluded(real) || isExcluded(path) { return nil }
            if let reason = filter.reason(forFile: relative, byteCount: Int64(target.st_size), named: false) {
                return .filtered(path: path, reason: reason)
            }
            return .file(path: path, byteCount: Int64(target.st_size))
        default:
            return .skipped(path: path, reason: "not a regular file")
        }
    }

    private func enter(_ path: String, info: stat, rootReal: String, root: String, push: (Frame) -> Void) -> Item? {
        let names: [String]
        do {
            names = try Self.listNames(path)
        } catch {
            return .failed(path: path, code: .fileUnreadable, message: "cannot list the folder: \(error)")
        }
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        push(
            Frame(
                directory: trimmed, names: names, rootReal: rootReal, root: root, node: FileNode(info)))
        return nil
    }

    private func isExcluded(_ path: String) -> Bool {
        !excluded.isEmpty && excluded.contains(PathText.absolute(path))
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = PlatformPath.withCString(path, { realpath($0, nil) }) else { return nil }
        defer { free(resolved) }
        return PlatformPath.string(cString: resolved)
    }

    /// The names in a folder, sorted by their bytes, each kept exactly (names that are not UTF-8 too:
    /// ``PlatformPath``). Foundation's listing drops or alters such names, which would make their files
    /// vanish from the batch without a word.
    private static func listNames(_ path: String) throws -> [String] {
        guard let directory = PlatformPath.withCString(path, { opendir($0) }) else {
            throw NativeError.posix()
        }
        defer { closedir(directory) }
        var names: [(bytes: [UInt8], name: String)] = []
        errno = 0
        while let entry = readdir(directory) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix(while: { $0 != 0 }))
            }
            if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
            names.append((bytes, PlatformPath.string(fromBytes: bytes)))
        }
        if errno != 0 { throw NativeError.posix() }
        return names.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }.map(\.name)
    }
}
