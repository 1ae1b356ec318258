// The library side of Scripts/bench/requests.sh: N small JSON POSTs through one RequestClient from C tasks,
// so at most C in flight, over the transport's reused connections. Prints one line:
//   requests N concurrency C seconds S rps R
// and exits 1 if any answer is not a 200 with the expected body length.
//
//   attache-request-bench URL [COUNT] [CONCURRENCY] [ANSWER_BYTES]
//
// With ATTACHE_BENCH_EXPORT=COLLECTOR_URL it first bootstraps what `attache batch --metrics-listen
// 127.0.0.1:0 --otlp-endpoint COLLECTOR_URL` does, through the library's TelemetryExport (a Prometheus
// registry served on /metrics and swift-otel's OTLP/HTTP metrics under one multiplexer, Attache's OTLP
// tracer), and flushes at the end, so the library's instrumentation records every request
// (Scripts/bench/observability.sh).
import Attache
import AttacheMetricsExport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import Synchronization

@main
enum RequestBench {
    static func main() async {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2 else {
            printError("usage: attache-request-bench URL [COUNT] [CONCURRENCY] [ANSWER_BYTES]")
            exit(64)
        }
        let url = arguments[1]
        let count = arguments.count > 2 ? Int(arguments[2]) ?? 5000 : 5000
        let concurrency = arguments.count > 3 ? Int(arguments[3]) ?? 8 : 8
        let answerBytes = arguments.count > 4 ? Int(arguments[4]) ?? 200 : 200

        var export: TelemetryExport?
        if let collector = getenv("ATTACHE_BENCH_EXPORT").map({ String(cString: $0) }), !collector.isEmpty {
            do {
                export = try TelemetryExport.bootstrap(
                    serviceName: "attache-request-bench", otlpEndpoint: collector, metricsListen: "127.0.0.1:0")
            } catch {
                printError("attache-request-bench: \(error)")
                exit(70)
            }
        }
        var configuration = RequestClient.Configuration()
        configuration.logger.logLevel = .warning
        configuration.connection.retry = .never
        let client = RequestClient(configuration: configuration)
        guard let body = try? RequestBody.json(.object(["text": .string("hello"), "to": .string("ann"), "n": .number(1)]))
        else { exit(70) }

        // CONCURRENCY long-lived workers take the next request number from a shared counter, as the tasks of
        // a backend would: no task is created per request.
        let counter = Counter()
        let start = ContinuousClock.now
        let failures = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<min(concurrency, count) {
                group.addTask {
                    var failed = 0
                    while true {
                        let index = counter.next()
                        guard index < count else { return failed }
                        failed += await send(client, url, body, index, answerBytes)
                    }
                }
            }
            var failures = 0
            for await failed in group { failures += failed }
            return failures
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if let warning = await export?.shutdown() { printError(warning) }
        print("requests \(count) concurrency \(concurrency) seconds \(seconds) rps \(Double(count) / seconds)")
        if failures > 0 {
            printError("\(failures) of \(count) requests failed")
            exit(1)
        }
    }

    static func send(_ client: RequestClient, _ url: String, _ body: RequestBody, _ index: Int, _ answerBytes: Int) async -> Int {
        do {
            let response = try await client.post(url, body: body)
            return response.status == 200 && response.body.count == answerBytes ? 0 : 1
        } catch {
            printError("request \(index): \(error)")
            return 1
        }
    }
}

/// Writes `line` and a newline to standard error. (The driver imports no Foundation: like a backend
/// built on Attache alone, it does not load ICU's data at start-up.)
func printError(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
}

/// The next request number, shared by the workers.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func next() -> Int { value.add(1, ordering: .relaxed).oldValue }
}
