import Glibc

/// The file-descriptor calls the package makes, each retrying `EINTR` in one place, and the one
/// mapping from a failed call's `errno` to an ``AttacheError`` (``AttacheError/system(_:errno:_:stage:file:missing:)``).
///
/// The calls return what the system returns (a descriptor, a count, or -1 with `errno` set) rather
/// than throwing, because their callers differ in what a failure means (a C callback returns 0, a
/// writer thread hands the `errno` back to its owner); the callers that throw turn `errno` into an
/// error with ``AttacheError/system(_:errno:_:stage:file:missing:)``.
package enum FileDescriptor {
    /// `open(2)` of `path` with `O_CLOEXEC` added, retried on `EINTR`: a descriptor, or -1 with `errno` set.
    package static func open(_ path: String, _ flags: Int32, mode: UInt32 = 0) -> Int32 {
        PlatformPath.withCString(path) { name in
            retryingInterrupts { Glibc.open(name, flags | O_CLOEXEC, mode_t(mode)) }
        }
    }

    /// Opens `path` for reading, or throws the error that says why not.
    /// - Throws: ``AttacheError`` with `.fileNotFound` (no such file or folder) or `.fileUnreadable`.
    package static func openForReading(_ path: String, stage: AttacheError.Stage, missing: String = "no such file") throws -> Int32 {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            throw AttacheError.system("cannot open the file", stage: stage, file: path, missing: missing)
        }
        return descriptor
    }

    /// `read(2)`, or `pread(2)` when `offset` is given, retried on `EINTR`: the count, 0 at the end,
    /// or -1 with `errno` set.
    package static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64? = nil) -> Int {
        retryingInterrupts {
            if let offset { return pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset)) }
            return Glibc.read(descriptor, buffer.baseAddress, buffer.count)
        }
    }

    /// Writes all of `bytes` (at `offset` with `pwrite(2)` when it is given), retrying short writes
    /// and `EINTR`. Returns nil when everything was written, else the `errno` of the failure (`EIO`
    /// when the system wrote nothing and said nothing).
    package static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil) -> Int32? {
        var done = 0
        while done < bytes.count {
            let start = bytes.baseAddress! + done, count = bytes.count - done
            let written = retryingInterrupts {
                if let offset { return pwrite(descriptor, start, count, off_t(offset + Int64(done))) }
                return Glibc.write(descriptor, start, count)
            }
            guard written > 0 else { return written < 0 ? errno : EIO }
            done += written
        }
        return nil
    }

    /// Runs `call` again for as long as it fails with `EINTR`.
    package static func retryingInterrupts<Count: BinaryInteger>(_ call: () -> Count) -> Count {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }
}

extension AttacheError {
    /// The error of a failed system call on `file`, from its `errno`: the one place that maps one to the other.
    ///
    /// With `missing` given, a path that does not exist (`ENOENT`, or `ENOTDIR` for a file where a
    /// folder should be) is `.fileNotFound` with `missing` as its message; anything else is `failure`
    /// with "`action`: the system's text". The `errno` is kept as the cause.
    package static func system(
        _ action: String, errno code: Int32 = errno, _ failure: Code = .fileUnreadable, stage: Stage, file: String?,
        missing: String? = nil
    ) -> AttacheError {
        if let missing, code == ENOENT || code == ENOTDIR {
            return AttacheError(.fileNotFound, stage: stage, missing, file: file, cause: NativeError.posix(code))
        }
        return AttacheError(
            failure, stage: stage, "\(action): \(String(cString: strerror(code)))", file: file, cause: NativeError.posix(code))
    }
}

extension NativeError {
    /// `errno` (or `code`) as a native error, with the system's text for it.
    package static func posix(_ code: Int32 = errno) -> NativeError {
        NativeError(library: "posix", code: Int(code), text: String(cString: strerror(code)))
    }
}
