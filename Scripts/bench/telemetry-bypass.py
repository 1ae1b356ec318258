#!/usr/bin/env python3
"""Takes Attache's telemetry hooks out of a checkout, for the baseline of Scripts/bench/observability.sh's
"no backend bootstrapped" comparison (BASELINE_BIN): the per-file and per-request hooks (the send's,
the stages', the client's attempt and retry hooks, the answer's reading, the batch's trace per file)
become the plain calls they wrap, so that a release build of the edited checkout is what the library
would cost without instrumentation. Edit a copy, never a checkout to commit:

    git worktree add ../attache-bypass HEAD && Scripts/bench/telemetry-bypass.py ../attache-bypass

Each edit checks that its text is still there once, so the script fails rather than builds a baseline
with hooks left in when the code moves.
"""
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
def edit(path, pairs):
    p = root + '/' + path
    s = open(p).read()
    for a, b in pairs:
        assert s.count(a) == 1, (path, a)
        s = s.replace(a, b)
    open(p, 'w').write(s)
edit('Sources/Attache/Pipeline/AttachmentPipeline.swift', [
  ('''        guard telemetry.isOn else { return try await send(attachment, options: options, facts: nil, progress: progress) }
        return try await traced(attachment) { facts in
            try await send(attachment, options: options, facts: facts, progress: progress)
        }''', '''        return try await send(attachment, options: options, facts: nil, progress: progress)'''),
])
edit('Sources/Attache/Observability/AttachmentPipeline+Telemetry.swift', [
  ('''        guard telemetry.isOn else { return try await body() }
        let start = ContinuousClock.now''', '''        return try await body()
        let start = ContinuousClock.now'''),
])
edit('Sources/Attache/Upload/Uploader.swift', [
  ('''client.telemetry.stage("interpret", { interpreter.interpret(response) })''', '''interpreter.interpret(response)'''),
])
edit('Sources/Attache/Client/AttacheClient.swift', [
  ('''        if telemetry.tracer != nil {
            return try await tracedExchange(request, sink: sink, operation: operation, attempt: attempt)
        }
''', ''),
  ('''        guard interceptors.logger != nil || telemetry.metrics != nil else {''',
   '''        guard interceptors.logger != nil else {'''),
  ('''        recordAttempt(request, operation: operation, status: status, failure: failure, duration: duration)
''', ''),
])
edit('Sources/Attache/Client/AttacheClient+Execute.swift', [
  ('''        recordRetry(series.operation, cause: Self.retryCause(status: advice.status, failure: failure))
''', ''),
])
edit('Sources/AttacheBatch/BatchUploader.swift', [
  ('''        let ending = telemetry.tracer == nil
            ? await run(paths) : await telemetry.withSpan("attache.batch") { _ in await run(paths) }''',
   '''        _ = telemetry
        let ending = await run(paths)'''),
  ('''            try await pipeline.telemetry.startingTraces {
                try await pipeline.send(attachment, options: options) { update in
                    guard case .upload(let progress) = update else { return }
                    let (emit, retry) = throttle.filter(progress)
                    if let retry { events.force(.retried(file, attempt: retry)) }
                    if emit { events.offer(.progress(file, progress)) }
                }
            }''', '''            try await pipeline.send(attachment, options: options) { update in
                guard case .upload(let progress) = update else { return }
                let (emit, retry) = throttle.filter(progress)
                if let retry { events.force(.retried(file, attempt: retry)) }
                if emit { events.offer(.progress(file, progress)) }
            }'''),
])
