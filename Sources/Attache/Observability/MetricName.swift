/// The names of every metric Attache records, in OpenTelemetry's dotted style, with their units.
///
/// `docs/OBSERVABILITY.md` has the table; a Prometheus exporter turns the dots into underscores and
/// appends the unit (`http.client.request.duration` → `http_client_request_duration_seconds`).
package enum MetricName: String, Sendable, CaseIterable {
    /// Duration of one HTTP exchange (a timer): OpenTelemetry's HTTP client metric.
    case httpClientRequestDuration = "http.client.request.duration"
    /// Attachments sent, by `attache.kind`, `attache.outcome` and `error.type`.
    case attachments = "attache.attachments"
    /// Duration of one pipeline stage (a timer), by `attache.stage`.
    case stageDuration = "attache.stage.duration"
    /// Bytes of the attachments as given (before transform and seal), by `attache.kind`.
    case bytesIn = "attache.bytes.in"
    /// Request body bytes handed to the transport, per attempt, by `attache.operation`.
    case bytesSent = "attache.bytes.sent"
    /// Retries, by `attache.operation` and `attache.retry.cause` (`http_503`, `timed-out`, ...).
    case retries = "attache.retries"
    /// Uploads the server answered with an earlier upload's receipt (`Idempotent-Replayed`).
    case replays = "attache.replays"
    /// Bytes that Transform saved (original minus recompressed, when smaller), by `attache.kind`.
    case transformSaved = "attache.transform.saved"
    /// Sends in progress (an up-down gauge).
    case sendsInFlight = "attache.sends.in_flight"
    /// Downloads, by `attache.outcome` and `error.type`.
    case downloads = "attache.downloads"
    /// Bytes downloaded (written to the destination).
    case downloadBytes = "attache.download.bytes"
    /// Downloads whose length or digest did not match.
    case downloadVerificationFailures = "attache.download.verification_failures"
    /// Queue jobs by `attache.queue.state` (a gauge).
    case queueJobs = "attache.queue.jobs"
    /// Time to claim one job from the queue (a timer).
    case queueClaimDuration = "attache.queue.claim.duration"
    /// Leases that ran out and were taken over.
    case queueLeaseExpiries = "attache.queue.lease_expiries"
    /// Writes the queue refused because a newer lease holder had the job (fencing).
    case queueFencingRefusals = "attache.queue.fencing_refusals"

    /// One line saying what the metric counts (Prometheus's `# HELP`).
    package var help: String {
        switch self {
        case .httpClientRequestDuration: "Duration of HTTP client exchanges."
        case .attachments: "Attachments sent, by kind, outcome and error type."
        case .stageDuration: "Duration of one pipeline stage of one attachment."
        case .bytesIn: "Bytes of the attachments as given, before transform and seal."
        case .bytesSent: "Request body bytes handed to the transport, per attempt."
        case .retries: "Retries, by operation and cause."
        case .replays: "Uploads answered with an earlier upload's receipt."
        case .transformSaved: "Bytes saved by recompression."
        case .sendsInFlight: "Sends in progress."
        case .downloads: "Downloads, by outcome and error type."
        case .downloadBytes: "Bytes downloaded."
        case .downloadVerificationFailures: "Downloads whose length or digest did not match."
        case .queueJobs: "Queue rows by state."
        case .queueClaimDuration: "Duration of one claim from the queue."
        case .queueLeaseExpiries: "Queue leases that ran out."
        case .queueFencingRefusals: "Commits refused because another worker holds the lease."
        }
    }

    /// The metric's unit, as OpenTelemetry writes it: `s`, `By` or `1` (a count).
    package var unit: String {
        switch self {
        case .httpClientRequestDuration, .stageDuration, .queueClaimDuration: "s"
        case .bytesIn, .bytesSent, .transformSaved, .downloadBytes: "By"
        default: "1"
        }
    }
}
