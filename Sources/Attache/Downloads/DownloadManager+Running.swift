internal import AttacheCore
import FoundationEssentials
import Glibc

extension DownloadManager {
    // MARK: Running

    enum Operation { case pause, resume, cancel, restart }

    func apply(_ operation: Operation, where matches: (DownloadID, Transfer) -> Bool) {
        var toCancel: [Task<Void, Never>] = []
        state.withLock { state in
            for (id, transfer) in state.transfers where matches(id, transfer) {
                if let task = state.change(id, operation, writer: writer, events: continuation) { toCancel.append(task) }
            }
            state.settleIfIdle()
        }
        for task in toCancel { task.cancel() }
        if operation == .resume || operation == .restart { pump() }
    }

    /// Starts queued transfers while slots are free.
    func pump() {
        let limits = configuration
        let starts = state.withLock { state in state.pickStarts(limits: limits) }
        for (id, generation) in starts {
            let task = Task { await self.execute(id, generation: generation) }
            let cancelNow = state.withLock { state -> Bool in
                guard state.transfers[id]?.generation == generation else { return false }
                state.transfers[id]?.task = task
                return state.transfers[id]?.intent != nil
            }
            if cancelNow { task.cancel() }
        }
    }

    func execute(_ id: DownloadID, generation: Int) async {
        let request: DownloadRequest? = state.withLock { state in
            guard var transfer = state.transfers[id], transfer.generation == generation else { return nil }
            let item = transfer.item
            var request = DownloadRequest(
                url: item.url, destination: item.destination, resume: transfer.resume, headers: item.headers,
                unsealing: item.unsealing, validator: transfer.validator, expectedSHA256: item.expectedSHA256)
            request.partialPath = item.destination + ".part"
            request.digest = item.digest
            request.objectStore = item.objectStore
            transfer.received = transfer.resume ? Self.size(of: request.partialPath) ?? 0 : 0
            state.receivedSum += transfer.received - (state.transfers[id]?.received ?? 0)
            state.transfers[id] = transfer
            writer?.enqueue(transfer.record(.active))
            continuation.yield(.started(id, offset: transfer.received))
            return request
        }
        guard let request else { return }
        let result: Result<DownloadReceipt, AttacheError>
        do {
            let receipt = try await downloader.download(request) { [weak self] progress in
                self?.progressed(id, generation: generation, progress)
            }
            result = .success(receipt)
        } catch let error as AttacheError {
            result = .failure(error)
        } catch {
            result = .failure(AttacheError(.cancelled, stage: .download, "the transfer was cancelled", file: id.path))
        }
        finished(id, generation: generation, result)
    }

    func progressed(_ id: DownloadID, generation: Int, _ progress: DownloadProgress) {
        let interval = configuration.progressInterval
        state.withLock { state in
            guard var transfer = state.transfers[id], transfer.generation == generation, transfer.phase == .running
            else { return }
            let now = ContinuousClock.now
            state.receivedSum += progress.receivedBytes - transfer.received
            transfer.received = progress.receivedBytes
            if let total = progress.totalBytes, total != transfer.total {
                state.totalSum += total - (transfer.total ?? 0)
                transfer.total = total
            }
            if let mark = transfer.rateMark {
                let elapsed = now - mark.instant
                if elapsed >= .milliseconds(500) {
                    let instant = max(0, Double(transfer.received - mark.bytes) / elapsed.seconds)
                    let rate = transfer.rate == 0 ? instant : transfer.rate * 0.6 + instant * 0.4
                    state.rateSum += rate - transfer.rate
                    transfer.rate = rate
                    transfer.rateMark = (now, transfer.received)
                }
            } else {
                transfer.rateMark = (now, transfer.received)
            }
            if let validator = progress.validator, validator != transfer.validator {
                transfer.validator = validator
                writer?.enqueue(transfer.record(.active))
            }
            var emit = false
            if transfer.lastEvent.map({ now - $0 >= interval }) ?? true {
                transfer.lastEvent = now
                emit = true
            }
            state.transfers[id] = transfer
            if emit { continuation.yield(.progress(id, transfer.figures, aggregate: state.aggregate)) }
        }
    }

    func finished(_ id: DownloadID, generation: Int, _ result: Result<DownloadReceipt, AttacheError>) {
        // Files are unlinked under the lock, before the transfer's new phase is visible: a caller that
        // sees it cancelled (its event, `status(_:)`, `waitUntilSettled()`) finds its bytes gone.
        state.withLock { state in
            guard var transfer = state.transfers[id], transfer.generation == generation, transfer.phase == .running
            else { return }
            state.running -= 1
            state.perHost[transfer.host, default: 1] -= 1
            state.rateSum -= transfer.rate
            transfer.rate = 0
            transfer.rateMark = nil
            transfer.task = nil
            let intent = transfer.intent
            transfer.intent = nil
            state.transfers[id] = transfer
            switch (result, intent) {
            case (.success, .cancel?):
                // Finished just as it was cancelled: a cancelled transfer leaves nothing.
                unlink(id.path)
                state.move(id, to: .cancelled)
                writer?.enqueue(transfer.record(.cancelled))
                continuation.yield(.cancelled(id))
            case (.success(let receipt), _):
                state.transferred += receipt.transferredByteCount
                state.receivedSum += receipt.byteCount - transfer.received
                if transfer.total == nil { state.totalSum += receipt.byteCount }
                state.transfers[id]?.received = receipt.byteCount
                state.transfers[id]?.total = receipt.byteCount
                state.move(id, to: .completed)
                var record = transfer.record(.done)
                record.totalBytes = receipt.byteCount
                record.sha256 = receipt.sha256
                writer?.enqueue(record)
                continuation.yield(.completed(id, receipt))
            case (.failure, .restart?):
                unlink(id.path + ".part")
                state.requeueFresh(id, writer: writer, events: continuation)
            case (.failure, .cancel?):
                unlink(id.path + ".part")
                state.move(id, to: .cancelled)
                writer?.enqueue(transfer.record(.cancelled))
                continuation.yield(.cancelled(id))
            case (.failure(let error), let intent):
                if intent == .pause || error.code == .cancelled {
                    let bytes = Self.size(of: id.path + ".part") ?? 0
                    state.transfers[id]?.resume = true
                    state.move(id, to: .paused)
                    writer?.enqueue(transfer.record(.paused))
                    continuation.yield(.paused(id, bytes: bytes))
                } else {
                    // The .part file stays (the downloader removes it only when its bytes are wrong):
                    // resume(_:) or a later run continues it.
                    state.transfers[id]?.resume = true
                    state.move(id, to: .failed)
                    var record = transfer.record(.failed)
                    record.errorCode = error.code.rawValue
                    record.errorMessage = error.message
                    writer?.enqueue(record)
                    continuation.yield(.failed(id, error))
                }
            }
        }
        state.withLock { $0.settleIfIdle() }
        pump()
    }

    static func size(of path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }
}
