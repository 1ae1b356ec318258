import Attache
import AttacheCore
import Foundation

/// Copies of one content take turns (one holds a content key from its journal decision to its result, the
/// others wait in order of arrival, holding no thread), and the stored uploads this run checked are
/// checked once.
final class ContentGate: Sendable {
    let turns = ContentTurns()
    private let verified = LockedValue<Set<String>>([])

    /// Whether this run checked the stored upload with `idempotencyKey` already.
    func wasVerified(_ idempotencyKey: String) -> Bool { verified.withLock { $0.contains(idempotencyKey) } }

    /// Records a stored upload this run checked.
    func markVerified(_ idempotencyKey: String) { _ = verified.withLock { $0.insert(idempotencyKey) } }
}

extension BatchDriver {
    /// The index key of a content under this run's settings (``BatchConfiguration/contentReuse``).
    func contentKey(_ identity: FileIdentity) -> String {
        identity.sha256 + "/" + settingsFingerprint
    }

    /// A file whose content is stored: the stored upload's receipt stands for it once it is trusted. One
    /// that is not (a damaged receipt; with `verify`, bytes gone or not opening with its key) is taken out
    /// of the index, and the file goes on to the next stored upload of its content or is sent.
    func reuse(
        _ file: BatchFile, identity: FileIdentity, stored: UploadReceipt, from sourcePath: String,
        contentKey: String, journal: UploadJournal, runID: Int64
    ) async -> Outcome {
        let start = ContinuousClock.now
        let fixedKey = configuration.pipeline.configuration.seal.key != nil
        var stored = stored
        var sourcePath = sourcePath
        while true {
            var doubt = stored.reuseDoubt(
                sha256: identity.sha256, byteCount: identity.byteCount, fixedKey: fixedKey)
            if doubt == nil, configuration.contentReuse == .verify, let gate = contentGate,
                !gate.wasVerified(stored.idempotencyKey)
            {
                doubt = await configuration.pipeline.storedUploadDoubt(stored)
                if doubt == nil { gate.markVerified(stored.idempotencyKey) }
            }
            do {
                guard let doubt else {
                    let receipt = stored.reused(
                        forPath: file.path, sha256: identity.sha256, seconds: (ContinuousClock.now - start).seconds)
                    try await pool.run {
                        try journal.markReused(
                            path: file.path, identity: identity, contentKey: contentKey, receipt: receipt, runID: runID)
                    }
                    await events.send(.succeeded(file, receipt))
                    return .succeeded(receipt, resumed: false)
                }
                await events.send(.reuseRefused(file, reason: "\(doubt); stored for \(sourcePath)"))
                let (forgotten, forgottenPath) = (stored.idempotencyKey, sourcePath)
                let step = try await pool.run {
                    try journal.forgetStored(contentKey: contentKey, idempotencyKey: forgotten, path: forgottenPath)
                    return try decide(file, identity: identity, journal: journal, runID: runID, contentKey: contentKey)
                }
                if case .decided(_, .reuse(let nextPath, let next), _, _) = step {
                    (sourcePath, stored) = (nextPath, next)
                    continue
                }
                return await process(file, step: step, journal: journal, runID: runID, contentKey: contentKey)
            } catch {
                return .fatal(Self.attacheError(error, file: file.path))
            }
        }
    }
}
