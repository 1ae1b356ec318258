internal import AttacheCore
import FoundationEssentials
import Logging

/// What one pipeline knows of its homeserver's media repository, asked once and shared by its sends: the
/// upload limit, whether media ids are reserved first, and the gate that keeps the reservations without
/// content under the homeserver's limit.
final class MatrixMedia: Sendable {
    let endpoint: MatrixEndpoint
    private let limits = LockedValue<Task<Facts, any Error>?>(nil)
    /// Reserved ids without content, across the pipeline's sends.
    let pending: AsyncLimiter
    /// This pipeline's reservations in use (an id reserved or continued, its bytes not yet stored), and the
    /// sends waiting for one of them to end.
    private let holders = LockedValue<Holders>(Holders())

    private struct Holders {
        var count = 0
        var waiting: [CheckedContinuation<Bool, Never>] = []
    }

    /// How a reservation is asked for: attempts for up to 30 s, at the homeserver's `retry_after_ms` (its
    /// reservation rate). A refusal that asks for longer (its limit of ids without content) waits for one of
    /// ours to end (``waitsOutPendingLimit(_:)``), or ends at once when none is ours.
    static let reservationPolicy = RetryPolicy(maximumAttempts: .max, maximumDelay: .seconds(4), budget: .seconds(30))

    /// A send holds a reservation until its bytes are stored (or it fails).
    func hold() {
        holders.withLock { $0.count += 1 }
    }

    /// A send's reservation ended; the sends waiting for one try again.
    func release() {
        let waiting = holders.withLock { holders -> [CheckedContinuation<Bool, Never>] in
            holders.count -= 1
            defer { holders.waiting = [] }
            return holders.waiting
        }
        for continuation in waiting { continuation.resume(returning: true) }
    }

    /// For a refused reservation: when the refusal is the homeserver's limit of ids without content
    /// (`M_LIMIT_EXCEEDED` that asks for a longer wait than ``reservationPolicy`` takes between attempts,
    /// or for none), waits until one of this pipeline's reservations ends and returns true. False (the
    /// policy's clock decides) for a plain rate limit, or when this pipeline holds none: the ids are an
    /// earlier run's, and stay until they expire.
    @Sendable func waitsOutPendingLimit(_ advice: RetryAdvice) async -> Bool {
        guard advice.refusal?.businessCode == "M_LIMIT_EXCEEDED" else { return false }
        if let wait = advice.retryAfter, wait <= Self.reservationPolicy.maximumDelay { return false }
        return await awaitRelease()
    }

    /// Waits until one of the reservations held now ends and returns true; false at once when none is held.
    func awaitRelease() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let waits = holders.withLock { holders -> Bool in
                guard holders.count > 0 else { return false }
                holders.waiting.append(continuation)
                return true
            }
            if !waits { continuation.resume(returning: false) }
        }
    }

    /// The homeserver's answers about itself.
    struct Facts: Sendable {
        /// `m.upload.size`: the largest upload it takes; nil when it does not say.
        var uploadLimit: Int64?
        /// Whether ids are reserved before the bytes go.
        var reserves: Bool
    }

    init(endpoint: MatrixEndpoint) {
        self.endpoint = endpoint
        pending = AsyncLimiter(limit: max(1, endpoint.maximumPendingUploads))
    }

    /// The facts, asked on the first call (the calls meanwhile wait for the same answers); a failure is
    /// not kept, so a later send asks again.
    func facts(_ requester: ObjectRequester) async throws -> Facts {
        let task = limits.withLock { current -> Task<Facts, any Error> in
            if let current { return current }
            let started = Task { try await self.ask(requester) }
            current = started
            return started
        }
        do {
            return try await task.value
        } catch {
            limits.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    private func ask(_ requester: ObjectRequester) async throws -> Facts {
        let home = endpoint.homeserver
        var limit: Int64?
        // The authenticated endpoint (v1.11); older servers only have the media one.
        for path in ["/_matrix/client/v1/media/config", "/_matrix/media/v3/config"] {
            let answer = try await requester.send(ObjectRequest(method: "GET", target: .presigned(home + path)))
            if case .stored(let receipt) = answer.outcome {
                limit = receipt.data["m.upload.size"]?.intValue.map(Int64.init)
                break
            }
            if case .rejected(let rejection) = answer.outcome, rejection.status == 401 {
                throw AttacheError(refusal: rejection, "the homeserver refused the access token", file: nil)
            }
        }
        var reserves = endpoint.reservesMediaIDs ?? false
        if endpoint.reservesMediaIDs == nil {
            let answer = try await requester.send(ObjectRequest(method: "GET", target: .presigned(home + "/_matrix/client/versions")))
            if case .stored(let receipt) = answer.outcome, case .array(let versions)? = receipt.data["versions"] {
                reserves = versions.contains { Self.isAtLeast1_7($0.stringValue ?? "") }
            }
        }
        return Facts(uploadLimit: limit, reserves: reserves)
    }

    /// Whether a spec version string (`v1.7`, `r0.6.1`) is v1.7 or later.
    static func isAtLeast1_7(_ version: String) -> Bool {
        guard version.hasPrefix("v") else { return false }
        let numbers = version.dropFirst().split(separator: ".").map { Int($0) ?? 0 }
        guard let major = numbers.first else { return false }
        return major > 1 || (major == 1 && numbers.count > 1 && numbers[1] >= 7)
    }
}
