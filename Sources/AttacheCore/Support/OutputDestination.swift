import Glibc

/// Where a command writes its result (`-o`), and the one way each kind of destination is opened.
///
/// - `-` is standard output, written as a stream.
/// - An existing file that is not a regular file (a FIFO, a character device such as `/dev/null`,
///   or a symbolic link to one, such as `/dev/stdout`) is opened and written in place. It is never
///   replaced: renaming a new file over `/dev/stdout` would swap the link for a plain file, and
///   whatever reads the FIFO would never see the bytes.
/// - Anything else (a regular file, or a name that does not exist yet) is written to a temporary file
///   beside it, which is renamed over it only on success: the file appears complete or not at all,
///   and a failure leaves the old one untouched.
///
/// A stream (the first two) cannot be taken back: a failure half-way leaves what was written so far,
/// and the exit status is what tells the reader. Positioned writes (`pwrite`) are possible only on the
/// temporary file (``allowsPositionedWrites``), so parallel writers fall back to a sequential one.
///
/// ```swift
/// try OutputDestination(path: "-", stage: .seal).write(reader)
/// ```
package struct OutputDestination: Sendable {
    /// How the destination is opened.
    package enum Kind: Sendable, Equatable {
        /// `-`: the process's standard output.
        case standardOutput
        /// An existing file that is not a regular file, written in place.
        case inPlace
        /// A regular file or a new name: a temporary file beside it, renamed over it on success.
        case replaced
    }

    /// The path as given (`-` for standard output).
    package let path: String
    /// How it is opened, decided once, when the destination is made.
    package let kind: Kind
    /// The stage named by write errors.
    package let stage: AttacheError.Stage

    /// Looks at what is at `path` now (following symbolic links) and decides how to write it.
    package init(path: String, stage: AttacheError.Stage) {
        self.path = path
        self.stage = stage
        if path == "-" {
            kind = .standardOutput
            return
        }
        var info = stat()
        let exists = PlatformPath.withCString(path) { stat($0, &info) } == 0
        let type = info.st_mode & S_IFMT
        // A directory stays `.replaced`: the rename then fails with the system's own reason.
        kind = exists && type != S_IFREG && type != S_IFDIR ? .inPlace : .replaced
    }

    /// Whether the writer may write at any offset (`pwrite`), in any order: only into the temporary
    /// file of a `.replaced` destination.
    package var allowsPositionedWrites: Bool { kind == .replaced }

    /// The destination for people: `standard output` or the path.
    package var displayName: String { kind == .standardOutput ? "standard output" : path }

    /// Copies everything `reader` produces to the destination.
    /// - Throws: ``AttacheError`` `.fileUnwritable` naming the destination, or whatever the reader throws.
    package func write(_ reader: any ByteReader, mode: UInt32 = 0o644) throws {
        try write(mode: mode) { descriptor in
            if let code = try WriteBehind.copy(reader, to: descriptor) {
                throw unwritable("write failed", errno: code)
            }
        }
    }

    /// Writes `bytes` to the destination.
    /// - Throws: ``AttacheError`` `.fileUnwritable` naming the destination.
    package func write(_ bytes: [UInt8], mode: UInt32 = 0o644) throws {
        try write(mode: mode) { descriptor in
            let code = bytes.withUnsafeBytes { buffer in
                FileDescriptor.writeAll(descriptor, buffer)
            }
            if let code { throw unwritable("write failed", errno: code) }
        }
    }

    /// Runs `body` on a descriptor open for writing the destination, as ``Kind`` says: for `.replaced`,
    /// a new temporary file beside it (given `mode`) that is renamed over it when `body` returns, or
    /// removed when `body` throws; otherwise the stream itself, whose mode is left alone.
    /// - Throws: ``AttacheError`` `.fileUnwritable` naming the destination, or whatever `body` throws.
    package func write(mode: UInt32 = 0o644, _ body: (Int32) throws -> Void) throws {
        switch kind {
        case .standardOutput:
            try body(STDOUT_FILENO)
        case .inPlace:
            // No O_CREAT, no O_TRUNC: the file exists and is not regular. A FIFO blocks here until it
            // has a reader.
            let descriptor = FileDescriptor.open(path, O_WRONLY)
            guard descriptor >= 0 else { throw unwritable("cannot open it for writing") }
            defer { close(descriptor) }
            try body(descriptor)
        case .replaced:
            try replace(mode: mode, body)
        }
    }

    private func replace(mode: UInt32, _ body: (Int32) throws -> Void) throws {
        // Split by hand: the temporary file must be in the same directory so that rename is atomic.
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? "./"
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var template = PlatformPath.bytes(of: directory + ".\(name).XXXXXX").map { CChar(bitPattern: $0) } + [0]
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw unwritable("cannot create a temporary file beside it") }
        let temporary = template.withUnsafeBufferPointer { PlatformPath.string(cString: $0.baseAddress!) }
        var renamed = false
        defer {
            if !renamed { _ = PlatformPath.withCString(temporary) { unlink($0) } }
        }
        do {
            defer { close(descriptor) }
            try body(descriptor)
            guard fchmod(descriptor, mode_t(mode)) == 0 else { throw unwritable("cannot set the file mode") }
        }
        let moved = PlatformPath.withCString(temporary) { from in PlatformPath.withCString(path) { rename(from, $0) } }
        guard moved == 0 else { throw unwritable("cannot rename the temporary file into place") }
        renamed = true
    }

    /// The error for the system call that just failed; call it before anything else can change `errno`.
    private func unwritable(_ action: String, errno code: Int32 = errno) -> AttacheError {
        AttacheError.system(action, errno: code, .fileUnwritable, stage: stage, file: displayName)
    }
}
