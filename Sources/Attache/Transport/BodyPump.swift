internal import AttacheCore
import FoundationEssentials
import Glibc

/// Reads a request body ahead of the network, on the blocking pool, so that the transport's event
/// loop never waits for a disk or a cipher.
///
/// A producer task reads chunks of `chunkSize` bytes from the body's ``AttacheCore/ByteReader`` on a
/// ``AttacheCore/BlockingPool`` thread into a queue of at most `depth` chunks, and waits — holding no thread —
/// until the queue is down to `depth / 4` chunks (at least one, so that the network has a chunk while the
/// producer wakes), then refills it in one job (a hand-off per few chunks, not
/// per chunk). Consumed chunks are reused. curl's read callback copies from the queue on the loop's thread; when the
/// queue is empty it pauses the transfer, and the producer asks the loop to resume it when the next
/// chunk arrives. A body no longer than one chunk is read whole before the transfer starts and kept,
/// so curl can rewind it for free.
final class BodyPump: Sendable {
    enum Read {
        case bytes(Int)
        case pause
        case end
        case failed(AttacheError)
    }

    private struct State {
        var chunks: [[UInt8]] = []
        /// Bytes of `chunks[0]` already handed to curl.
        var offset = 0
        var finished = false
        var error: AttacheError?
        var consumerPaused = false
        var spaceWaiter: CheckedContinuation<Void, Never>?
        var readyWaiters: [CheckedContinuation<Void, Never>] = []
        var generation = 0
        var cancelled = false
        /// The whole body, when it fits one chunk: rewinding then needs no new reader.
        var whole: [UInt8]?
        var producer: Task<Void, Never>?
        /// Consumed full-size chunks, for the producer to fill again.
        var spare: [[UInt8]] = []
    }

    let source: any ByteSource
    private let chunkSize: Int
    private let depth: Int
    /// The producer is woken when the queue is down to this many chunks, and then refills it in one
    /// job: a hand-off per few chunks rather than per chunk.
    private let lowWater: Int
    private let pool: BlockingPool
    private let state = LockedValue(State())
    /// Called (from any thread) when data arrived for a consumer that paused.
    ///
    /// Held in a class, not as a bare closure: a closure stored in a generic container is kept in its
    /// most general form, and every `withLock` on it converts it there and back, each time wrapping it
    /// in two more thunks; read once per wake-up, the chain grew with the body and so did the cost of
    /// calling it.
    private let wake = LockedValue<Waker?>(nil)

    private final class Waker: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// The pool request bodies are read (and sealed) on: one thread per core, because reading a chunk
    /// is disk or cipher work that ends in microseconds, never a wait on the network. Thousands of
    /// transfers in flight therefore add no threads.
    static let readers = BlockingPool(maximumThreads: max(2, ProcessInfo.processInfo.activeProcessorCount))

    init(source: any ByteSource, chunkSize: Int, depth: Int = 4, pool: BlockingPool = BodyPump.readers) {
        self.source = source
        self.chunkSize = max(16 * 1024, chunkSize)
        self.depth = max(1, depth)
        self.lowWater = self.depth >= 2 ? max(1, self.depth / 4) : 0
        self.pool = pool
    }

    /// Sets what to call when a paused consumer has data again.
    func onWake(_ body: @escaping @Sendable () -> Void) {
        wake.withLock { $0 = Waker(body) }
    }

    /// Starts reading and returns once the first chunk (or the end, or an error) is there.
    func prime() async {
        if source.byteCount <= Int64(chunkSize) {
            await readWhole()
            return
        }
        startProducer()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if !state.chunks.isEmpty || state.finished || state.error != nil || state.cancelled { return true }
                state.readyWaiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Stops the producer; later reads fail.
    func cancel() {
        let (space, readers, producer) = state.withLock { state in
            state.cancelled = true
            defer {
                state.spaceWaiter = nil
                state.readyWaiters = []
            }
            return (state.spaceWaiter, state.readyWaiters, state.producer)
        }
        space?.resume()
        readers.forEach { $0.resume() }
        producer?.cancel()
    }

    /// Copies the next bytes into curl's buffer (loop thread).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Read {
        var resumeProducer: CheckedContinuation<Void, Never>?
        let result = state.withLock { state -> Read in
            if let error = state.error { return .failed(error) }
            if state.cancelled {
                return .failed(AttacheError(.cancelled, stage: .upload, "the upload was cancelled"))
            }
            guard !state.chunks.isEmpty else {
                if state.finished { return .end }
                state.consumerPaused = true
                return .pause
            }
            let count = state.chunks[0].withUnsafeBytes { chunk -> Int in
                let n = min(buffer.count, chunk.count - state.offset)
                buffer.baseAddress!.copyMemory(from: chunk.baseAddress! + state.offset, byteCount: n)
                return n
            }
            state.offset += count
            if state.offset == state.chunks[0].count {
                let consumed = state.chunks.removeFirst()
                if consumed.count == chunkSize, state.whole == nil, state.spare.count < depth {
                    state.spare.append(consumed)
                }
                state.offset = 0
                if state.chunks.count <= lowWater {
                    resumeProducer = state.spaceWaiter
                    state.spaceWaiter = nil
                }
            }
            return .bytes(count)
        }
        resumeProducer?.resume()
        return result
    }

    /// Starts the body over from its first byte (loop thread). False when it cannot.
    /// The whole body when it was read before the transfer (it fits one chunk), else nil.
    var wholeBody: [UInt8]? { state.withLock { $0.error == nil ? $0.whole : nil } }

    func rewind() -> Bool {
        let restart = state.withLock { state -> Bool in
            if let whole = state.whole {
                state.chunks = whole.isEmpty ? [] : [whole]
                state.offset = 0
                state.finished = true
                return false
            }
            state.generation += 1
            state.chunks = []
            state.offset = 0
            state.finished = false
            state.error = nil
            state.producer?.cancel()
            return true
        }
        if restart { startProducer() }
        return true
    }

    /// Bodies up to this size are read on the calling task rather than handed to the pool: a small file
    /// from the page cache, or sealing a few kilobytes, takes microseconds, less than the two thread
    /// hand-offs a pool job costs (a batch of small files is bound by those hand-offs).
    static let inlineReadLimit: Int64 = 64 * 1024

    /// Reads a body of at most one chunk in one go: no producer task, and the bytes are kept for rewinds.
    private func readWhole() async {
        let source = source
        let read = { @Sendable () throws -> [UInt8] in
            let reader = try source.makeReader()
            let count = Int(source.byteCount)
            var bytes = [UInt8](repeating: 0, count: count)
            let n = try bytes.withUnsafeMutableBytes { try reader.readFully(into: $0) }
            guard n == count else {
                throw AttacheError(.fileChanged, stage: .read, "the body ended after \(n) of \(count) bytes")
            }
            return bytes
        }
        do {
            let bytes = source.byteCount <= Self.inlineReadLimit ? try read() : try await pool.run(read)
            state.withLock { state in
                state.whole = bytes
                state.chunks = bytes.isEmpty ? [] : [bytes]
                state.finished = true
            }
        } catch {
            let failure = (error as? AttacheError) ?? AttacheError(.fileUnreadable, stage: .read, "\(error)")
            state.withLock { $0.error = failure }
        }
    }

    private func startProducer() {
        let generation = state.withLock { $0.generation }
        let task = Task { [self] in await produce(generation: generation) }
        state.withLock { state in
            if state.generation == generation { state.producer = task }
        }
    }

    /// The producer's reader, opened in its first read job; used by one job at a time.
    private final class ReaderBox: @unchecked Sendable {
        var reader: (any ByteReader)?
        /// Bytes read so far.
        var produced: Int64 = 0
    }

    /// A buffer of `count` bytes for the next chunk: a consumed chunk of that size when there is one
    /// (no allocation, no page faults), else a new one whose bytes are not cleared first (the read
    /// overwrites them).
    private func takeBuffer(count: Int) -> [UInt8] {
        if let spare = state.withLock({ $0.spare.popLast() }), spare.count == count { return spare }
        return [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }

    private func produce(generation: Int) async {
        let box = ReaderBox()
        do {
            while true {
                guard await waitForSpace(generation: generation) else { return }
                let finished = try await pool.run { [self] in try fill(box, generation: generation) }
                if finished { return }
            }
        } catch {
            let failure =
                (error as? AttacheError) ?? AttacheError(.fileUnreadable, stage: .read, "\(error)")
            fail(failure, generation: generation)
        }
    }

    /// On a pool thread: reads chunks while the queue has room, handing each to the queue as soon as it
    /// is read. True when the body is complete or no longer wanted.
    private func fill(_ box: ReaderBox, generation: Int) throws -> Bool {
        let total = source.byteCount
        if box.reader == nil { box.reader = try source.makeReader() }
        while true {
            let room = state.withLock { state -> Bool? in
                state.cancelled || state.generation != generation ? nil : state.chunks.count < depth
            }
            guard let room else { return true }
            guard room else { return false }
            let want = Int(min(Int64(chunkSize), max(0, total - box.produced)))
            var chunk: [UInt8] = []
            if want > 0 {
                chunk = takeBuffer(count: want)
                let n = try chunk.withUnsafeMutableBytes { try box.reader!.readFully(into: $0) }
                if n < want { chunk.removeLast(want - n) }
            }
            box.produced += Int64(chunk.count)
            let done = chunk.count < want || want == 0 || box.produced >= total
            if done, box.produced < total {
                throw AttacheError(.fileChanged, stage: .read, "the body ended after \(box.produced) of \(total) bytes")
            }
            let first = box.produced == Int64(chunk.count)
            guard push(chunk, finished: done, generation: generation, firstAndLast: done && first) else { return true }
            if done { return true }
        }
    }

    /// Waits until the queue has room; false when this producer is no longer wanted.
    private func waitForSpace(generation: Int) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.cancelled || state.generation != generation || state.chunks.count <= lowWater { return true }
                state.spaceWaiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        return state.withLock { !$0.cancelled && $0.generation == generation }
    }

    private func push(_ chunk: [UInt8], finished: Bool, generation: Int, firstAndLast: Bool) -> Bool {
        let (accepted, wakeConsumer, readers) = state.withLock { state -> (Bool, Bool, [CheckedContinuation<Void, Never>]) in
            guard !state.cancelled, state.generation == generation else { return (false, false, []) }
            if !chunk.isEmpty { state.chunks.append(chunk) }
            if firstAndLast { state.whole = chunk }
            state.finished = finished
            let paused = state.consumerPaused
            state.consumerPaused = false
            let readers = state.readyWaiters
            state.readyWaiters = []
            return (true, paused, readers)
        }
        readers.forEach { $0.resume() }
        if wakeConsumer { wake.withLock { $0 }?.body() }
        return accepted
    }

    private func fail(_ error: AttacheError, generation: Int) {
        let (wakeConsumer, readers) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
            guard state.generation == generation else { return (false, []) }
            state.error = error
            let paused = state.consumerPaused
            state.consumerPaused = false
            let readers = state.readyWaiters
            state.readyWaiters = []
            return (paused, readers)
        }
        readers.forEach { $0.resume() }
        if wakeConsumer { wake.withLock { $0 }?.body() }
    }
}
