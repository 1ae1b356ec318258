import FoundationEssentials

/// The scan stage's hand-off: the transformed attachment, and what the scan found (nil when no scanner
/// is configured). An infected attachment never gets here.
struct ScannedAttachment: Sendable {
    /// What came in.
    let transformed: TransformedAttachment
    /// The receipt's `scan`, when a scanner is configured.
    let receipt: ScanReceipt?
}

extension AttachmentPipeline {
    /// scan: TransformedAttachment → ScannedAttachment. The bytes about to be sealed (and the original
    /// too, when Transform changed them and ``ScanConfiguration/scansOriginal`` says so) go to the
    /// scanner; an infected one fails with `.infected` naming the signature, and nothing is sent. When
    /// the scanner gives no verdict, ``ScanConfiguration/failurePolicy`` decides: fail (the default), or
    /// send with the receipt saying `unscanned`. Under `refuse`, a scanner that cannot be reached is
    /// waited for up to ``ScanConfiguration/unreachableWait``.
    func scan(_ transformed: TransformedAttachment) async throws -> ScannedAttachment {
        let settings = configuration.scan
        guard let scanner = settings.scanner else { return ScannedAttachment(transformed: transformed, receipt: nil) }
        let start = ContinuousClock.now
        let path = transformed.prepared.path
        let alsoOriginal = settings.scansOriginal && transformed.output.didTransform
        if let ahead = scannedAhead(transformed) {
            if ahead.verdict.outcome == .infected {
                throw AttacheError(.infected, stage: .scan, "infected: \(ahead.verdict.signature ?? "unnamed signature")", file: path)
            }
            return ScannedAttachment(
                transformed: transformed,
                receipt: ScanReceipt(
                    engine: ahead.verdict.version.engine, signatures: ahead.verdict.version.signatures, verdict: .clean,
                    seconds: ahead.seconds))
        }
        var sources: [any ByteSource] = [transformed.payload]
        if alsoOriginal { sources.append(transformed.prepared.original) }
        var version: ScanEngineVersion?
        var cached = true
        do {
            for (index, source) in sources.enumerated() {
                let (verdict, fromCache) = try await waitingForScanner(settings) {
                    try await self.scan(source, file: path, scanner: scanner, cache: settings.cache)
                }
                version = verdict.version
                cached = cached && fromCache
                if verdict.outcome == .infected {
                    throw AttacheError(
                        .infected, stage: .scan,
                        "infected: \(verdict.signature ?? "unnamed signature")" + (index > 0 ? " (in the original)" : ""),
                        file: path)
                }
            }
        } catch let error as AttacheError where error.code != .infected && error.code != .cancelled {
            guard settings.failurePolicy == .send, !Task.isCancelled else { throw error }
            logger.warning(
                "sending unscanned: the scanner gave no verdict",
                metadata: ["file": "\(path)", "reason": "\(error.message)"])
            return ScannedAttachment(
                transformed: transformed,
                receipt: ScanReceipt(
                    engine: version?.engine, signatures: version?.signatures, verdict: .unscanned,
                    seconds: (ContinuousClock.now - start).seconds, reason: error.message,
                    original: alsoOriginal ? true : nil))
        }
        return ScannedAttachment(
            transformed: transformed,
            receipt: ScanReceipt(
                engine: version?.engine, signatures: version?.signatures, verdict: .clean,
                seconds: (ContinuousClock.now - start).seconds, cached: settings.cache == nil ? nil : cached,
                original: alsoOriginal ? true : nil))
    }

    /// The verdict found ahead for this payload: only when the payload is the attachment's own file,
    /// unchanged, as it was scanned.
    private func scannedAhead(_ transformed: TransformedAttachment) -> ScannedAhead? {
        guard let ahead = knownScan, !transformed.output.didTransform,
              case .file(let path) = transformed.prepared.input.content, path == ahead.path
        else { return nil }
        return ahead
    }

    /// The Scan stage's verdict on the file at `path`, found now on the calling thread, for a caller that
    /// already reads the file in a blocking job of its own (the batch, with the file's identity): one
    /// hand-off between threads fewer a file, and a content seen before in this process is not sent to
    /// clamd again (`sha256` and the signature version find its verdict). Put the result in
    /// ``SendOptions/scannedAhead``.
    ///
    /// Nil when the stage must scan by itself: no ClamAV scanner, a verdict cache, a file that Transform
    /// may change (the stage scans what will be sealed), or a scan that failed (the stage scans again
    /// and applies ``ScanConfiguration/failurePolicy``).
    public func scanAhead(fileAt path: String, detection: Detection, sha256: String) -> ScannedAhead? {
        let settings = configuration.scan
        guard let scanner = settings.scanner as? ClamAVScanner, settings.cache == nil,
              !transformer.configuration.transforms(
                  mimeType: detection.mimeType, kind: detection.kind, isAnimated: detection.metadata.isAnimated == true)
        else { return nil }
        let start = ContinuousClock.now
        guard let source = try? FileSource(path: path),
              let verdict = try? scanner.scanBlocking(source, file: path, contentDigest: sha256)
        else { return nil }
        return ScannedAhead(path: path, verdict: verdict, seconds: (ContinuousClock.now - start).seconds)
    }

    /// One scan, through the cache when there is one: the content's SHA-256 and the engine's current
    /// versions find a verdict known before; a new verdict is kept.
    private func scan(
        _ source: any ByteSource, file: String, scanner: any MalwareScanner, cache: ScanCache?
    ) async throws -> (ScanVerdict, cached: Bool) {
        guard let cache else { return (try await scanner.scan(source, file: file), false) }
        let version = try await scanner.engineVersion()
        let digest = try await BlockingPool.shared.run { try ContentDigest.sha256Hex(of: source) }
        if let known = cache.verdict(digest: digest, version: version) { return (known, true) }
        let verdict = try await scanner.scan(source, file: file)
        cache.store(verdict, digest: digest)
        return (verdict, false)
    }

    /// Runs `body`, and while it fails because the scanner cannot be reached, runs it again with backoff
    /// (0.25 s doubling to 5 s) until ``ScanConfiguration/unreachableWait`` has passed.
    private func waitingForScanner<T>(
        _ settings: ScanConfiguration, _ body: () async throws -> T
    ) async throws -> T {
        // With `send`, an unreachable scanner sends the file unscanned at once: nothing to wait for.
        guard let wait = settings.unreachableWait, settings.failurePolicy == .refuse else { return try await body() }
        let deadline = ContinuousClock.now + wait
        var pause = Duration.milliseconds(250)
        while true {
            do {
                return try await body()
            } catch let error as AttacheError
                where (error.code == .connectionFailed || error.code == .connectionLost) && ContinuousClock.now < deadline
            {
                logger.debug("waiting for the scanner", metadata: ["reason": "\(error.message)"])
                try await Task.sleep(for: min(pause, deadline - ContinuousClock.now))
                pause = min(pause * 2, .seconds(5))
            }
        }
    }
}
