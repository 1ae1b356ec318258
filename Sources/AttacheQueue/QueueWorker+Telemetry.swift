import Attache
import AttacheCore

extension QueueWorker {
    /// Sends `job` inside its job span: the root of the file's trace, linked to the span that enqueued it
    /// when the row carries that span's context.
    func traced(_ job: QueueJob) async throws -> UploadReceipt {
        guard telemetry.tracer != nil else { return try await sender.send(job) }
        let enqueued = job.traceContext.flatMap { telemetry.extract(from: QueueTraceContext.decode($0)) }
        return try await telemetry.withLinkedRoot(enqueued) {
            try await telemetry.withSpan("attache.queue.job") { span in
                span?.set("attache.queue.attempt", job.attempt)
                return try await sender.send(job)
            }
        }
    }

    /// Sets the `attache.queue.jobs` gauge for each state from one count of the table.
    func recordDepth() async throws {
        let rows = try await database.run(
            "SELECT state, count(*)::bigint FROM attache_file GROUP BY state", "count files by state")
        var counts: [String: Int64] = ["pending": 0, "claimed": 0, "done": 0, "failed": 0]
        for try await (state, count) in rows.decode((String, Int64).self) { counts[state] = count }
        for (state, count) in counts { telemetry.set(count, .queueJobs, [("attache.queue.state", state)]) }
    }
}

/// The propagation fields stored with a queue row: `name: value` lines.
enum QueueTraceContext {
    static func encode(_ fields: [HeaderField]) -> String? {
        fields.isEmpty ? nil : fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    static func decode(_ text: String) -> [HeaderField] {
        text.split(separator: "\n").compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return HeaderField(
                name: String(line[..<colon]), value: String(line[line.index(after: colon)...].drop { $0 == " " }))
        }
    }
}
