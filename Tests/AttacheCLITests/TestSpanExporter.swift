import AttacheMetricsExport
import Synchronization

/// A span of its own id `index + 1`.
func testSpan(_ index: Int) -> FinishedSpan {
    FinishedSpan(
        context: SpanContext(traceID: TraceID(high: 1, low: 1), spanID: SpanID(UInt64(index + 1)), isSampled: true),
        parentSpanID: nil, name: "span \(index)", kind: .internal, startNanoseconds: 1, endNanoseconds: 2)
}

/// Warning lines, kept.
final class Warnings: Sendable {
    private let kept = Mutex<[String]>([])
    var lines: [String] { kept.withLock { $0 } }
    var add: @Sendable (String) -> Void { { line in self.kept.withLock { $0.append(line) } } }
}

/// An exporter that takes every batch (`.pass`), holds each until ``release()`` (`.hold`), or refuses
/// each (`.fail`); it reports each batch's size on ``arrivals`` as it comes.
final class TestExporter: SpanExporter {
    enum Mode { case pass, hold, fail }
    let mode: Mode
    let arrivals: AsyncStream<Int>
    private let arrival: AsyncStream<Int>.Continuation
    private let batches = Mutex<[[FinishedSpan]]>([])
    private let releases = Mutex<(granted: Int, waiting: [CheckedContinuation<Void, Never>])>((0, []))

    init(_ mode: Mode) {
        self.mode = mode
        (arrivals, arrival) = AsyncStream.makeStream()
    }

    var batchSizes: [Int] { batches.withLock { $0.map(\.count) } }
    var finished: [FinishedSpan] { batches.withLock { $0.flatMap { $0 } } }
    var spanIDs: [UInt64] { batches.withLock { $0.flatMap { $0.map(\.context.spanID.value) } } }

    func export(_ spans: [FinishedSpan]) async throws {
        batches.withLock { $0.append(spans) }
        arrival.yield(spans.count)
        switch mode {
        case .pass: return
        case .fail: throw SpanExportFailure("connection-failed")
        case .hold:
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let go = releases.withLock { releases in
                    if releases.granted > 0 {
                        releases.granted -= 1
                        return true
                    }
                    releases.waiting.append(continuation)
                    return false
                }
                if go { continuation.resume() }
            }
        }
    }

    /// Lets the held export (or the next one) return.
    func release() {
        releases.withLock { releases -> CheckedContinuation<Void, Never>? in
            guard !releases.waiting.isEmpty else {
                releases.granted += 1
                return nil
            }
            return releases.waiting.removeFirst()
        }?.resume()
    }
}
