internal import AttacheCore

extension ClamAVScanner {
    /// One file's result from ``scanFiles(_:)``.
    public struct FileVerdict: Sendable {
        /// The file's path, as given.
        public var path: String
        /// Its verdict, or why it was not scanned (stage `scan`; the error names the file).
        public var result: Result<ScanVerdict, AttacheError>
    }

    /// Scans the files at `paths` the way `attache scan` does, and hands each result over as clamd gives it.
    ///
    /// Over a UNIX socket the files go by descriptor in one session, with up to 16 requests unanswered at a
    /// time, as `clamdscan --fdpass --multiscan` does; otherwise (TCP, or a stream transfer) each is
    /// streamed in turn. Either way the work runs on one thread of its own for the whole list, so that
    /// many files cost no thread hand-off each, as ``scan(_:file:)`` does per call. Results come in the
    /// order clamd answers; a file that fails carries its error and the others go on. Ending the iteration
    /// early stops taking files.
    ///
    /// ```swift
    /// for await file in scanner.scanFiles(paths) {
    ///     if case .success(let verdict) = file.result, verdict.outcome == .infected { print(file.path) }
    /// }
    /// ```
    public func scanFiles(_ paths: [String]) -> AsyncStream<FileVerdict> {
        let (stream, continuation) = AsyncStream<FileVerdict>.makeStream()
        let stopped = LockedValue(false)
        continuation.onTermination = { _ in stopped.withLock { $0 = true } }
        let scanner = self
        Task {
            _ = try? await BlockingPool.shared.run {
                var index = 0
                scanner.scanFilesBlocking(
                    next: {
                        guard index < paths.count, !stopped.withLock({ $0 }) else { return nil }
                        defer { index += 1 }
                        return paths[index]
                    },
                    deliver: { path, result in continuation.yield(FileVerdict(path: path, result: result)) })
            }
            continuation.finish()
        }
        return stream
    }

    /// Scans the files `next` gives until it gives nil, on the calling thread, which blocks: by descriptor
    /// with up to 16 requests unanswered in one session (``passesDescriptors``), else streamed one after
    /// another. Each result goes to `deliver` when clamd answers, in any order; a session that cannot be
    /// opened fails the file taken first, and the next file gets a new session. `idle` is called when
    /// results may wait a while: no answer for 50 ms, or after each streamed file.
    package func scanFilesBlocking(
        next: () -> String?, deliver: (String, Result<ScanVerdict, AttacheError>) -> Void, idle: () -> Void = {}
    ) {
        func failure(_ error: any Error, _ path: String) -> Result<ScanVerdict, AttacheError> {
            .failure((error as? AttacheError)?.concerning(path) ?? AttacheError(.internalError, stage: .scan, "\(error)", file: path))
        }
        guard passesDescriptors else {
            while let path = next() {
                do {
                    deliver(path, .success(try scanBlocking(try FileSource(path: path), file: path)))
                } catch {
                    deliver(path, failure(error, path))
                }
                idle()
            }
            return
        }
        // The connection opens each file without blocking and checks it again, so that one replaced by a
        // FIFO since it was listed is refused, not waited on.
        while let first = next() {
            var pending: String? = first
            do {
                try scanFilesBlocking(
                    window: 16,
                    next: {
                        defer { pending = nil }
                        return pending ?? next()
                    },
                    deliver: { path, result in deliver(path, result.mapError { $0.concerning(path) }) },
                    idle: idle)
            } catch {
                // No session: the file taken first fails with the reason, and the next gets a new try.
                if let pending { deliver(pending, failure(error, pending)) }
            }
        }
    }
}
