internal import AttacheCore

/// What one send learned that its metrics need even when it fails: the kind Detect found.
final class SendFacts: Sendable {
    private let detected = LockedValue<Detection?>(nil)

    func detected(_ detection: Detection) { detected.withLock { $0 = detection } }
    var detection: Detection? { detected.withLock { $0 } }
}

extension AttachmentPipeline {
    /// Runs `send` inside the send span, counting it in flight, and records how it ended: the
    /// `attache.attachments` counter, bytes in, transform savings and replays, and the span's `attache.*`
    /// attributes. Called only when telemetry is on.
    func traced(
        _ attachment: Attachment, _ send: (SendFacts) async throws -> UploadReceipt
    ) async throws -> UploadReceipt {
        let facts = SendFacts()
        return try await telemetry.withSpan("attache.send") { span in
            telemetry.add(1, to: .sendsInFlight)
            defer { telemetry.add(-1, to: .sendsInFlight) }
            do {
                // With TraceDetail.send, the stages (and the reading of each answer) record themselves on
                // this span rather than start spans of their own.
                let receipt =
                    if configuration.traceDetail == .send, let span {
                        try await Telemetry.$stageRecorder.withValue(span) { try await send(facts) }
                    } else {
                        try await send(facts)
                    }
                record(receipt, span: span)
                return receipt
            } catch {
                recordFailure(error, attachment: attachment, facts: facts, span: span)
                throw error
            }
        }
    }

    /// One stage of the data path, timed in `attache.stage.duration`; with `traced`, also in the trace
    /// (``Telemetry/stage(_:isolation:_:)``: an event of the send, or a span of its own with
    /// ``TraceDetail/stages``). Prepare and Upload are not traced: Prepare only makes the bytes ready, and
    /// Upload's work is its attempts, each a client span of its own under the send.
    func stage<T>(_ name: String, traced: Bool, _ body: () async throws -> T) async rethrows -> T {
        guard telemetry.isOn else { return try await body() }
        let start = ContinuousClock.now
        defer { telemetry.record(ContinuousClock.now - start, .stageDuration, [("attache.stage", name)]) }
        guard traced else { return try await body() }
        return try await telemetry.stage(name) { try await body() }
    }

    private func record(_ receipt: UploadReceipt, span: TelemetrySpan?) {
        let kind = receipt.kind.rawValue
        telemetry.count(.attachments, [("attache.kind", kind), ("attache.outcome", "stored"), ("error.type", "none")])
        telemetry.count(.bytesIn, by: receipt.originalByteCount, [("attache.kind", kind)])
        if receipt.transform.recompressed, receipt.transform.byteCount < receipt.originalByteCount {
            telemetry.count(
                .transformSaved, by: receipt.originalByteCount - receipt.transform.byteCount, [("attache.kind", kind)])
        }
        if receipt.replayed { telemetry.count(.replays) }
        guard let span, span.isRecording else { return }
        let profile = configuration.answers.profile.rawValue
        span.update { attributes in
            attributes.reserveCapacity(9)
            attributes.put("attache.kind", kind)
            attributes.put("attache.mime_type", receipt.mimeType)
            attributes.put("attache.size.in", receipt.originalByteCount)
            attributes.put("attache.size.out", receipt.sentByteCount)
            attributes.put("attache.seal.scheme", receipt.seal.scheme.rawValue)
            attributes.put("attache.answer_profile", profile)
            attributes.put("attache.replayed", receipt.replayed)
            attributes.put("attache.attempts", receipt.attempts)
            attributes.put("attache.transform.plan", Self.plan(receipt.transform))
        }
    }

    private func recordFailure(_ error: any Error, attachment: Attachment, facts: SendFacts, span: TelemetrySpan?) {
        let detection = facts.detection
        let kind = detection?.kind.rawValue ?? attachment.declaredKind?.rawValue ?? "unknown"
        let code = TelemetrySpan.errorType(error)
        let outcome: String
        // A give-up after answers also carries the last one's refusal: it is a failure, not a rejection.
        if let error = error as? AttacheError, error.rejection != nil, error.code != .retriesExhausted {
            outcome = "rejected"
        } else if code == AttacheError.Code.cancelled.rawValue {
            outcome = "cancelled"
        } else {
            outcome = "failed"
        }
        telemetry.count(.attachments, [("attache.kind", kind), ("attache.outcome", outcome), ("error.type", code)])
        guard let span, span.isRecording else { return }
        let profile = configuration.answers.profile.rawValue
        span.update { attributes in
            attributes.put("attache.kind", kind)
            if let detection { attributes.put("attache.mime_type", detection.mimeType) }
            attributes.put("attache.answer_profile", profile)
            if let error = error as? AttacheError { attributes.put("attache.stage", error.stage.rawValue) }
        }
    }

    /// What Transform did, in one word.
    private static func plan(_ transform: TransformReceipt) -> String {
        if transform.recompressed { return transform.media == nil ? "recompress" : "convert" }
        return transform.skipped == nil ? "pass-through" : "skipped"
    }
}
