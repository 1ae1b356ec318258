import AttacheMetricsExport
import AttacheCore
import ArgumentParser
import Attache
import AttacheBatch
import Foundation
import Logging

/// Prints a batch's events: a live progress line, plain lines, or JSON lines.
final class BatchOutput {
    enum Mode { case terminal, plain, json }

    private let mode: Mode
    private let dryRun: Bool
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private var lastDraw: ContinuousClock.Instant

    // Totals for the progress line.
    private var discoveredFiles = 0
    private var discoveredBytes: Int64 = 0
    private var discoveryDone = false
    private var finishedFiles = 0
    private var finishedBytes: Int64 = 0
    private var sentBytes: Int64 = 0
    private var failures = 0
    private var inFlight: [BatchFileID: (byteCount: Int64, fraction: Double)] = [:]
    private var waiting: Set<BatchFileID> = []

    init(mode: Mode, dryRun: Bool) {
        self.mode = mode
        self.dryRun = dryRun
        self.start = clock.now
        self.lastDraw = clock.now - .seconds(1)
    }

    func handle(_ event: BatchEvent) {
        track(event)
        switch mode {
        case .json:
            Console.outJSON(BatchEventLine(event))
        case .plain:
            if case .reuseRefused(let file, let reason) = event {
                Console.err("attache: warning: not reusing the stored upload for \(file.path): \(reason); sending it")
            } else if let line = line(for: event) {
                Console.out(line)
            }
            if case .finished(let summary) = event { printSummary(summary, to: Console.out) }
        case .terminal:
            if case .finished(let summary) = event {
                Console.clearStatus()
                printSummary(summary, to: Console.err)
                return
            }
            if case .reuseRefused(let file, let reason) = event {
                Console.clearStatus()
                Console.err("attache: warning: not reusing the stored upload for \(file.path): \(reason); sending it")
                draw(force: true)
            } else if case .failed = event, let line = line(for: event) {
                Console.clearStatus()
                Console.err(line)
                draw(force: true)
            } else {
                draw(force: false)
            }
        }
    }

    /// Clears the progress line before an error message.
    func abandon() {
        if mode == .terminal { Console.clearStatus() }
    }

    private func track(_ event: BatchEvent) {
        switch event {
        case .discovered(let file):
            discoveredFiles += 1
            discoveredBytes += file.byteCount
            waiting.insert(file.id)
        case .discoveryFinished:
            discoveryDone = true
        case .started(let file, _, _):
            inFlight[file.id] = (file.byteCount, 0)
        case .progress(let file, let progress):
            inFlight[file.id] = (file.byteCount, progress.fractionCompleted)
        case .succeeded(let file, let receipt):
            sentBytes += receipt.originalByteCount
            finish(file)
        case .skipped(let file, _), .wouldSend(let file, _):
            finish(file)
        case .failed(let file, _):
            failures += 1
            finish(file)
        case .retried, .finished, .reuseRefused:
            break
        }
    }

    /// Counts a file as done with, once; paths the walk reported without discovering them (a dangling
    /// link, a device) are not part of the totals.
    private func finish(_ file: BatchFile) {
        inFlight[file.id] = nil
        guard waiting.remove(file.id) != nil else { return }
        finishedFiles += 1
        finishedBytes += file.byteCount
    }

    private func line(for event: BatchEvent) -> String? {
        switch event {
        case .succeeded(let file, let receipt) where receipt.dedup != nil:
            var text = "reused \(receipt.url ?? receipt.fileId ?? "the stored upload") for \(file.path)"
            text += " (\(formatBytes(receipt.originalByteCount)), the same bytes as \(receipt.dedup!.reusedFrom))"
            return text
        case .succeeded(let file, let receipt):
            var text = "sent \(file.path)"
            if let fileId = receipt.fileId { text += " as \(fileId)" }
            text += " (\(formatBytes(receipt.originalByteCount))"
            if receipt.sentByteCount != receipt.originalByteCount { text += " → \(formatBytes(receipt.sentByteCount))" }
            if receipt.attempts > 1 { text += ", \(receipt.attempts) attempts" }
            if receipt.replayed { text += ", already on the server" }
            if let resumable = receipt.resumable {
                text += ", \(resumable.protocolName)"
                if resumable.resumedBytes > 0 { text += ", resumed after \(formatBytes(resumable.resumedBytes))" }
            }
            if let skipped = receipt.transform.skipped { text += ", sent as it is: \(skipped)" }
            return text + ")"
        case .skipped(let file, let reason):
            return "skipped \(file.path): \(reason)"
        case .wouldSend(let file, let resumed):
            return "\(resumed ? "would resume" : "would send") \(file.path) (\(formatBytes(file.byteCount)))"
        case .failed(let file, let error):
            return "failed \(file.path): \(error.stage): \(error.message) [\(error.code)]"
        default:
            return nil
        }
    }

    private func draw(force: Bool) {
        let now = clock.now
        guard force || now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        Console.status(progressLine(now: now))
    }

    private func progressLine(now: ContinuousClock.Instant) -> String {
        let partial = inFlight.values.reduce(0.0) { $0 + Double($1.byteCount) * $1.fraction }
        let doneBytes = Double(finishedBytes) + partial
        let share = discoveredBytes > 0 ? min(1, doneBytes / Double(discoveredBytes)) : 0
        let width = 20
        let filled = Int(share * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let seconds = (now - start).seconds
        let sentNow = Double(sentBytes) + partial
        let rate = seconds > 0.5 ? sentNow / seconds : 0
        var parts = [
            "\(finishedFiles)/\(discoveredFiles)\(discoveryDone ? "" : "+") files",
            "[\(bar)] \(Int(share * 100))%",
            "\(formatBytes(Int64(doneBytes)))/\(formatBytes(discoveredBytes))",
        ]
        if rate > 0 {
            parts.append("\(formatBytes(Int64(rate)))/s")
            if discoveryDone {
                let remaining = max(0, Double(discoveredBytes) - doneBytes)
                parts.append("ETA \(formatDuration(remaining / rate))")
            }
        }
        if !inFlight.isEmpty { parts.append("\(inFlight.count) active") }
        if failures > 0 { parts.append("\(failures) failed") }
        return fitted(parts.joined(separator: "  "))
    }

    /// Cuts the line to the terminal's width so that it never wraps (a wrapped line cannot be redrawn
    /// in place).
    private func fitted(_ line: String) -> String {
        var size = winsize()
        let columns = ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
        return line.count < columns ? line : String(line.prefix(max(0, columns - 1)))
    }

    private func printSummary(_ summary: BatchSummary, to write: (String) -> Void) {
        var head = dryRun ? "dry run: \(summary.wouldSend) to send" : "\(summary.succeeded - summary.reused) sent"
        if summary.reused > 0 { head += ", \(summary.reused) reused" }
        head += ", \(summary.alreadyDone) already done"
        if summary.skipped > 0 { head += ", \(summary.skipped) skipped" }
        head += ", \(summary.failed) failed"
        if summary.previouslyFailed > 0 { head += " (and \(summary.previouslyFailed) failed before; --retry-failed)" }
        head += " of \(summary.discovered) files in \(formatDuration(summary.seconds))"
        write(head)
        if summary.succeeded > summary.reused {
            var bytes = "bytes: \(formatBytes(summary.originalBytes)) read"
            if summary.sentBytes != summary.originalBytes { bytes += ", \(formatBytes(summary.sentBytes)) after recompression" }
            if summary.seconds > 0 {
                bytes += String(format: ", %.1f files/s", Double(summary.succeeded) / summary.seconds)
            }
            if summary.resumed > 0 { bytes += ", \(summary.resumed) resumed" }
            if summary.replayed > 0 { bytes += ", \(summary.replayed) already on the server" }
            write(bytes)
        }
        if !summary.filtered.isEmpty {
            let counts = WalkFilter.Reason.allCases.compactMap { reason in
                summary.filtered[reason.rawValue].map { "\($0) \(reason)" }
            }
            write("left out by the filter: " + counts.joined(separator: ", "))
        }
        if let previous = summary.previousFilter {
            write(
                "note: the journal's previous run walked with \(previous.isEmpty ? "the default filter" : previous); "
                    + "files it took that this filter leaves out keep their rows and were not sent again")
        }
        for failure in summary.failures {
            write("  failed \(failure.path): \(failure.stage): \(failure.message) [\(failure.code)]")
        }
        if summary.failed > summary.failures.count {
            write("  … and \(summary.failed - summary.failures.count) more (see the journal)")
        }
    }
}

/// One batch event as one JSON object: `{"event":"succeeded","id":3,"path":...,"receipt":{...}}`.
struct BatchEventLine: Encodable {
    let event: BatchEvent
    init(_ event: BatchEvent) { self.event = event }

    private enum Key: String, CodingKey {
        case event, id, path, bytes, files, reason, code, stage, message, retryable, idempotencyKey, resumed
        case bytesSent, totalBytes, attempt, fraction, receipt, summary, resumedBytes
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        func file(_ file: BatchFile) throws {
            try c.encode(file.id.rawValue, forKey: .id)
            try c.encode(file.path, forKey: .path)
            try c.encode(file.byteCount, forKey: .bytes)
        }
        switch event {
        case .discovered(let f):
            try c.encode("discovered", forKey: .event)
            try file(f)
        case .discoveryFinished(let files, let bytes):
            try c.encode("discoveryFinished", forKey: .event)
            try c.encode(files, forKey: .files)
            try c.encode(bytes, forKey: .bytes)
        case .skipped(let f, let reason):
            try c.encode("skipped", forKey: .event)
            try file(f)
            try c.encode(reason.code, forKey: .reason)
            try c.encode(reason.description, forKey: .message)
        case .wouldSend(let f, let resumed):
            try c.encode("wouldSend", forKey: .event)
            try file(f)
            try c.encode(resumed, forKey: .resumed)
        case .started(let f, let key, let resumed):
            try c.encode("started", forKey: .event)
            try file(f)
            try c.encode(key, forKey: .idempotencyKey)
            try c.encode(resumed, forKey: .resumed)
        case .progress(let f, let progress):
            try c.encode("progress", forKey: .event)
            try file(f)
            try c.encode(progress.bytesSent, forKey: .bytesSent)
            try c.encode(progress.totalBytes, forKey: .totalBytes)
            try c.encode(progress.attempt, forKey: .attempt)
            try c.encode((progress.fractionCompleted * 1000).rounded() / 1000, forKey: .fraction)
            if progress.resumedBytes > 0 { try c.encode(progress.resumedBytes, forKey: .resumedBytes) }
        case .retried(let f, let attempt):
            try c.encode("retried", forKey: .event)
            try file(f)
            try c.encode(attempt, forKey: .attempt)
        case .succeeded(let f, let receipt):
            try c.encode("succeeded", forKey: .event)
            try file(f)
            try c.encode(receipt, forKey: .receipt)
        case .reuseRefused(let f, let reason):
            try c.encode("reuseRefused", forKey: .event)
            try file(f)
            try c.encode(reason, forKey: .message)
        case .failed(let f, let error):
            try c.encode("failed", forKey: .event)
            try file(f)
            try c.encode(error.code.rawValue, forKey: .code)
            try c.encode(error.stage.rawValue, forKey: .stage)
            try c.encode(error.message, forKey: .message)
            try c.encode(error.isRetryable, forKey: .retryable)
        case .finished(let summary):
            try c.encode("finished", forKey: .event)
            try c.encode(summary, forKey: .summary)
        }
    }
}
