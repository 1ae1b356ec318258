internal import AttacheCore
import Glibc

extension DownloadManager {
    // MARK: State

    struct Transfer {
        var item: DownloadItem
        let host: String
        var phase: Phase = .queued
        var intent: Operation?
        var task: Task<Void, Never>?
        var generation = 0
        var resume: Bool
        var validator: String?
        var received: Int64 = 0
        var total: Int64?
        var rate: Double = 0
        var rateMark: (instant: ContinuousClock.Instant, bytes: Int64)?
        var lastEvent: ContinuousClock.Instant?
        var alreadyDone = false

        init(item: DownloadItem, host: String, resume: Bool, validator: String?) {
            self.item = item
            self.host = host
            self.resume = resume
            self.validator = validator
        }

        var figures: DownloadFigures { DownloadFigures(receivedBytes: received, totalBytes: total, bytesPerSecond: rate) }

        func status(_ id: DownloadID) -> Status {
            Status(id: id, group: item.group, phase: phase, figures: figures)
        }

        func record(_ state: DownloadRecord.State) -> DownloadRecord {
            DownloadRecord(
                destination: item.destination, url: item.url, group: item.group, state: state,
                validator: validator, expectedSHA256: item.expectedSHA256, totalBytes: total)
        }
    }

    struct State {
        var transfers: [DownloadID: Transfer] = [:]
        /// Transfers waiting for a slot, oldest first; entries no longer queued are skipped.
        var order: [DownloadID] = []
        var head = 0
        var running = 0
        var perHost: [String: Int] = [:]
        var counts: [Phase: Int] = [:]
        var alreadyDone = 0
        var transferred: Int64 = 0
        var receivedSum: Int64 = 0
        var totalSum: Int64 = 0
        var rateSum: Double = 0
        var waiters: [CheckedContinuation<DownloadSummary, Never>] = []

        var aggregate: DownloadFigures {
            DownloadFigures(receivedBytes: receivedSum, totalBytes: totalSum > 0 ? totalSum : nil, bytesPerSecond: rateSum)
        }

        var isSettled: Bool { running == 0 && (counts[.queued] ?? 0) == 0 }

        var summary: DownloadSummary {
            var summary = DownloadSummary()
            summary.alreadyDone = alreadyDone
            summary.completed = (counts[.completed] ?? 0) - alreadyDone
            summary.failed = counts[.failed] ?? 0
            summary.paused = counts[.paused] ?? 0
            summary.cancelled = counts[.cancelled] ?? 0
            summary.transferredBytes = transferred
            return summary
        }

        mutating func move(_ id: DownloadID, to phase: Phase) {
            guard let old = transfers[id]?.phase, old != phase else { return }
            if old == .completed, transfers[id]?.alreadyDone == true {
                alreadyDone -= 1
                transfers[id]?.alreadyDone = false
            }
            counts[old, default: 0] -= 1
            counts[phase, default: 0] += 1
            transfers[id]?.phase = phase
        }

        mutating func settleIfIdle() {
            guard isSettled, !waiters.isEmpty else { return }
            let summary = self.summary
            for waiter in waiters { waiter.resume(returning: summary) }
            waiters = []
        }

        /// Back in the queue from byte 0, under no validator.
        mutating func requeueFresh(
            _ id: DownloadID, writer: JournalWriter?, events: AsyncStream<DownloadEvent>.Continuation
        ) {
            guard var transfer = transfers[id] else { return }
            receivedSum -= transfer.received
            if let total = transfer.total { totalSum -= total }
            transfer.received = 0
            transfer.total = nil
            transfer.resume = false
            transfer.validator = nil
            transfers[id] = transfer
            move(id, to: .queued)
            order.append(id)
            writer?.enqueue(transfer.record(.queued))
            events.yield(.queued(id))
        }

        /// Applies a caller's operation; returns the task to cancel when the transfer is running.
        mutating func change(
            _ id: DownloadID, _ operation: Operation, writer: JournalWriter?,
            events: AsyncStream<DownloadEvent>.Continuation
        ) -> Task<Void, Never>? {
            guard let transfer = transfers[id] else { return nil }
            switch (operation, transfer.phase) {
            case (.pause, .running), (.cancel, .running), (.restart, .running):
                // The task's end carries the operation out (finished(_:generation:_:)).
                transfers[id]?.intent = operation
                return transfer.task
            case (.pause, .queued):
                move(id, to: .paused)
                writer?.enqueue(transfer.record(.paused))
                events.yield(.paused(id, bytes: transfer.received))
            case (.resume, .paused), (.resume, .failed):
                transfers[id]?.resume = true
                move(id, to: .queued)
                order.append(id)
                writer?.enqueue(transfer.record(.queued))
                events.yield(.queued(id))
            case (.cancel, .queued), (.cancel, .paused), (.cancel, .failed):
                unlink(id.path + ".part")
                move(id, to: .cancelled)
                writer?.enqueue(transfer.record(.cancelled))
                events.yield(.cancelled(id))
            case (.restart, _):
                unlink(id.path + ".part")
                requeueFresh(id, writer: writer, events: events)
            default:
                break
            }
            return nil
        }

        /// Marks the queued transfers that fit the limits as running and returns them.
        mutating func pickStarts(limits: Configuration) -> [(DownloadID, Int)] {
            var picked: [(DownloadID, Int)] = []
            var index = head
            while running < limits.maximumConcurrentTransfers, index < order.count {
                let id = order[index]
                guard let transfer = transfers[id], transfer.phase == .queued else {
                    if index == head { head += 1 }
                    index += 1
                    continue
                }
                if perHost[transfer.host, default: 0] >= limits.maximumTransfersPerHost {
                    index += 1
                    continue
                }
                move(id, to: .running)
                transfers[id]?.generation += 1
                running += 1
                perHost[transfer.host, default: 0] += 1
                picked.append((id, transfers[id]?.generation ?? 0))
                if index == head { head += 1 }
                index += 1
            }
            if head > 4096, head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
            return picked
        }
    }
}
