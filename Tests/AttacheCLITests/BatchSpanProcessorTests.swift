import AttacheMetricsExport
import Testing
import Tracing

/// The batch span processor driven in memory: an exporter of the test's own takes, holds or refuses
/// the batches.
@Suite struct BatchSpanProcessorTests {
    @Test func aFullBatchGoesAtOnceAndSpansBeyondTheQueueAreDroppedAndCounted() async {
        let exporter = TestExporter(.hold)
        let warnings = Warnings()
        let processor = BatchSpanProcessor(
            settings: .init(maximumQueueSize: 10, maximumExportBatchSize: 10, scheduleDelay: .seconds(3600)),
            exporter: exporter, warn: warnings.add)
        var arrivals = exporter.arrivals.makeAsyncIterator()
        for index in 0..<10 { processor.add(testSpan(index)) }
        // The tenth span filled a batch: it went without waiting for the hour's delay.
        #expect(await arrivals.next() == 10)
        // That export is held: ten more fill the queue, five more find it full.
        for index in 10..<25 { processor.add(testSpan(index)) }
        #expect(processor.tally.dropped == 5)
        #expect(warnings.lines.count == 1)
        #expect(warnings.lines.first?.contains("span queue is full (10 spans, OTEL_BSP_MAX_QUEUE_SIZE)") == true, "\(warnings.lines)")

        exporter.release()
        let flushed = Task { await processor.forceFlush() }
        #expect(await arrivals.next() == 10)
        exporter.release()
        await flushed.value
        var expected = BatchSpanProcessor.Tally()
        expected.exported = 20
        expected.dropped = 5
        #expect(processor.tally == expected)
        #expect(exporter.spanIDs == Array(0..<20).map { UInt64($0 + 1) }, "in the order they ended")
    }

    @Test func batchesAreNoLargerThanTheExportBatchSize() async {
        let exporter = TestExporter(.pass)
        let processor = BatchSpanProcessor(
            settings: .init(maximumQueueSize: 100, maximumExportBatchSize: 3, scheduleDelay: .seconds(3600)),
            exporter: exporter, warn: { _ in })
        for index in 0..<7 { processor.add(testSpan(index)) }
        await processor.forceFlush()
        #expect(exporter.batchSizes.reduce(0, +) == 7)
        #expect(exporter.batchSizes.allSatisfy { $0 <= 3 }, "\(exporter.batchSizes)")
        #expect(processor.tally.exported == 7)
    }

    @Test func aPartialBatchGoesAfterTheScheduleDelay() async {
        let exporter = TestExporter(.pass)
        let processor = BatchSpanProcessor(
            settings: .init(maximumQueueSize: 100, maximumExportBatchSize: 50, scheduleDelay: .milliseconds(20)),
            exporter: exporter, warn: { _ in })
        var arrivals = exporter.arrivals.makeAsyncIterator()
        processor.add(testSpan(0))
        #expect(await arrivals.next() == 1)
    }

    /// A collector that refuses: one warning for the run of failures, every span counted, no retry.
    @Test func failedExportsWarnOnceAndCountTheirSpans() async {
        let exporter = TestExporter(.fail)
        let warnings = Warnings()
        let processor = BatchSpanProcessor(
            settings: .init(maximumQueueSize: 100, maximumExportBatchSize: 50, scheduleDelay: .seconds(3600)),
            exporter: exporter, warn: warnings.add)
        for index in 0..<2 { processor.add(testSpan(index)) }
        await processor.forceFlush()
        for index in 2..<5 { processor.add(testSpan(index)) }
        await processor.forceFlush()
        #expect(exporter.batchSizes == [2, 3], "each batch tried once")
        #expect(warnings.lines.count == 1, "\(warnings.lines)")
        #expect(warnings.lines.first?.contains("did not take 2 spans (connection-failed)") == true, "\(warnings.lines)")

        let outcome = await processor.shutdown(within: .seconds(60))
        #expect(outcome.finishedInTime)
        #expect(outcome.tally.failed == 5 && outcome.tally.lastExportFailed && outcome.tally.lost == 5)
        let warning = OTLPExport.FlushOutcome(spans: outcome, metricsInTime: true).warning(seconds: "5")
        #expect(
            warning == "attache: the OTLP collector did not take the last spans within 5 s; what it had not taken is "
                + "dropped (--otlp-flush-timeout, OTEL_BSP_EXPORT_TIMEOUT); 5 spans of this run never reached the "
                + "collector (5 in exports that failed; 0 exported)")
    }

    /// A collector that never answers holds the shutdown no longer than its limit: the export is still held
    /// when the shutdown returns (so only the limit can have ended it), and what was held is counted as
    /// abandoned. No upper bound on the wall clock: on a loaded machine the limit's timer itself can wake late.
    @Test func shutdownIsBoundedByItsLimit() async {
        let exporter = TestExporter(.hold)
        let processor = BatchSpanProcessor(
            settings: .init(maximumQueueSize: 100, maximumExportBatchSize: 50, scheduleDelay: .seconds(3600)),
            exporter: exporter, warn: { _ in })
        var arrivals = exporter.arrivals.makeAsyncIterator()
        for index in 0..<3 { processor.add(testSpan(index)) }
        processor.requestFlush()
        #expect(await arrivals.next() == 3, "the export under way, held")
        let started = ContinuousClock.now
        let outcome = await processor.shutdown(within: .milliseconds(200))
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(exporter.batchSizes == [3], "the one export, still held")
        #expect(!outcome.finishedInTime)
        #expect(outcome.tally.abandoned == 3)
        let warning = OTLPExport.FlushOutcome(spans: outcome, metricsInTime: false).warning(seconds: "0.2")
        #expect(warning?.hasPrefix("attache: the OTLP collector did not take the last spans and metrics within 0.2 s;") == true)
        #expect(warning?.hasSuffix("3 spans of this run never reached the collector (3 still held at the end; 0 exported)") == true, "\(warning ?? "")")
        exporter.release()
    }

    @Test func nothingToSayWhenTheCollectorTookEverything() async {
        let exporter = TestExporter(.pass)
        let processor = BatchSpanProcessor(
            settings: .init(maximumQueueSize: 100, maximumExportBatchSize: 50, scheduleDelay: .seconds(3600)),
            exporter: exporter, warn: { _ in })
        for index in 0..<4 { processor.add(testSpan(index)) }
        let outcome = await processor.shutdown(within: .seconds(60))
        #expect(outcome.finishedInTime && outcome.tally.exported == 4)
        #expect(OTLPExport.FlushOutcome(spans: outcome, metricsInTime: true).warning(seconds: "5") == nil)
        processor.add(testSpan(4))
        #expect(processor.tally.dropped == 1, "a span ended after the stop is not kept")
    }
}
