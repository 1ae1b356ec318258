import Synchronization
internal import AttacheCore
internal import CCurl


/// The event loop: one thread running curl's multi interface for every transfer of a transport.
///
/// Other threads talk to it only through ``submit(_:)``, which queues a command and wakes the loop
/// (`curl_multi_wakeup`). The thread starts with the first transfer and ends after a while without
/// any; the multi handle, and with it the idle connections, stays.
final class CurlMultiLoop: @unchecked Sendable {
    enum Command {
        /// A transfer and the handle ``prepare(_:)`` set up for it.
        case add(CurlExchange, CurlEasy)
        case cancel(CurlExchange)
        case unpause(CurlExchange)
    }

    private struct Inbox {
        var commands: [Command] = []
        var threadRunning = false
        /// The loop is in (or about to enter) `curl_multi_poll` with no command waiting: a new command
        /// must wake it. While it is busy it picks commands up on its next turn without a wake-up, which
        /// saves a write and a wake per request when many small ones are in flight.
        var sleeping = false
    }

    private let maximumConnectionsPerHost: Int?
    private let inbox = LockedValue(Inbox())
    /// Created on the loop's first start; then owned by the loop thread (and by `submit` only for
    /// `curl_multi_wakeup`, which is thread-safe).
    private let handles = LockedValue(Handles())

    /// The multi and share handles: plain pointers, used on the loop thread (and `curl_multi_wakeup`,
    /// which is thread-safe, from any).
    private struct Handles: @unchecked Sendable {
        var multi: UnsafeMutableRawPointer?
        var share: OpaquePointer?
    }
    // Loop-thread state.
    private var active: [UnsafeMutableRawPointer: CurlExchange] = [:]
    /// Reset easy handles of finished transfers, for the next ones: making and freeing a handle per
    /// request was a tenth of a small request's cost. Taken by ``prepare(_:)`` on callers' threads,
    /// given back by the loop.
    private let idle = LockedValue<[CurlEasy]>([])
    private static let idleLimit = 32
    /// How long the thread waits with nothing to do before it ends.
    private let idleLifetime: Duration = .seconds(5)

    init(maximumConnectionsPerHost: Int?) {
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
    }

    /// Queues `command` for the loop and wakes it, starting its thread when it is not running.
    func submit(_ command: Command) {
        enum Action { case start, wake, none }
        let action = inbox.withLock { inbox -> Action in
            inbox.commands.append(command)
            if !inbox.threadRunning {
                inbox.threadRunning = true
                return .start
            }
            guard inbox.sleeping else { return .none }
            inbox.sleeping = false
            return .wake
        }
        switch action {
        case .start: startDetachedThread(name: "attache-transport", stackSize: 1 << 20) { [self] in run() }
        case .wake:
            // curl_multi_wakeup is sticky: sent before the loop reaches curl_multi_poll, it makes that
            // poll return at once.
            if let multi = handles.withLock({ $0 }).multi { _ = attache_curl_multi_wakeup(multi) }
        case .none: break
        }
    }

    /// Transfers running now (loop thread; for tests through ``activeCount``).
    private let activeGauge = Atomic<Int>(0)
    var activeCount: Int { activeGauge.load(ordering: .relaxed) }

    /// A handle with every option of `exchange` set (any thread): a reset one of an earlier transfer
    /// when there is one, else a new one.
    ///
    /// Connections live in the multi handle, not in easy handles, so a reused handle serves as well as a
    /// new one; except that curl refuses `CURLOPT_BUFFERSIZE` on a handle that has been used, so a
    /// transfer with a receive buffer of its own size gets a new handle (and it is not kept after).
    func prepare(_ exchange: CurlExchange) throws -> CurlEasy {
        let reused = exchange.request.receiveBufferSize == nil ? idle.withLock { $0.popLast() } : nil
        let easy = try reused ?? CurlEasy()
        try exchange.configure(easy)
        return easy
    }

    /// Gives a finished transfer's handle back for later transfers (loop thread).
    private func recycle(_ easy: CurlEasy) {
        guard !easy.receiveBufferSet else { return }
        easy.reset()
        idle.withLock { idle in
            if idle.count < Self.idleLimit { idle.append(easy) }
        }
    }

    private func makeHandles() -> UnsafeMutableRawPointer? {
        handles.withLock { handles -> UnsafeMutableRawPointer? in
            if let multi = handles.multi { return multi }
            guard (try? CurlGlobal.ensureInitialized()) != nil, let multi = attache_curl_multi_init() else { return nil }
            if let limit = maximumConnectionsPerHost {
                _ = attache_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limit)
            }
            _ = attache_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
            // Keep idle connections for later transfers: curl's default cache is four per transfer in
            // the handle, so a batch whose transfers dip for a moment closed connections it needed again.
            _ = attache_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 64)
            if let share = attache_curl_share_init() {
                _ = attache_curl_share_data(share, CURL_LOCK_DATA_SSL_SESSION)
                _ = attache_curl_share_data(share, CURL_LOCK_DATA_DNS)
                handles.share = OpaquePointer(share)
            }
            handles.multi = multi
            return multi
        }
    }

    private func run() {
        guard let multi = makeHandles() else {
            failEverything(TransportError(.nativeLibrary, "cannot start curl's multi interface"))
            return
        }
        let share = handles.withLock { $0 }.share
        let clock = ContinuousClock()
        var idleSince = clock.now
        while true {
            let commands = inbox.withLock { inbox -> [Command]? in
                if inbox.commands.isEmpty, active.isEmpty, clock.now - idleSince > idleLifetime {
                    inbox.threadRunning = false
                    return nil
                }
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return inbox.commands
            }
            guard let commands else { return }
            for command in commands { handle(command, multi: multi, share: share) }

            var running: Int32 = 0
            _ = attache_curl_multi_perform(multi, &running)
            var code = CURLE_OK
            while let done = attache_curl_multi_next_done(multi, &code) {
                complete(done, code: code, multi: multi)
            }
            activeGauge.store(active.count, ordering: .relaxed)
            if !active.isEmpty { idleSince = clock.now }
            // Sleep only when no command came in during this turn (checked under the inbox's lock, the
            // same one submit takes, so a command is either seen here or followed by a wake-up).
            let mayPoll = inbox.withLock { inbox -> Bool in
                guard inbox.commands.isEmpty else { return false }
                inbox.sleeping = true
                return true
            }
            if mayPoll {
                _ = attache_curl_multi_poll(multi, 1000)
                inbox.withLock { $0.sleeping = false }
            }
        }
    }

    private func handle(_ command: Command, multi: UnsafeMutableRawPointer, share: OpaquePointer?) {
        switch command {
        case .add(let exchange, let easy):
            if exchange.cancelledBeforeAdd {
                recycle(easy)
                return
            }
            if let share {
                do {
                    try easy.set(CURLOPT_SHARE, pointer: UnsafeMutableRawPointer(share))
                } catch {
                    exchange.finish(.failure(error))
                    return
                }
            }
            exchange.easy = easy
            let added = attache_curl_multi_add_handle(multi, easy.handle)
            guard added == CURLM_OK else {
                exchange.easy = nil
                exchange.finish(
                    .failure(
                        TransportError(
                            .nativeLibrary,
                            "curl_multi_add_handle failed: \(String(cString: attache_curl_multi_strerror(added)))")))
                return
            }
            active[easy.handle] = exchange
        case .cancel(let exchange):
            guard let easy = exchange.easy, active.removeValue(forKey: easy.handle) != nil else {
                // Not added yet (or finished already, when marking it changes nothing): its add is refused.
                exchange.cancelledBeforeAdd = true
                exchange.finish(.failure(TransportError.cancelled))
                return
            }
            _ = attache_curl_multi_remove_handle(multi, easy.handle)
            exchange.easy = nil
            exchange.finish(.failure(TransportError.cancelled))
        case .unpause(let exchange):
            guard let easy = exchange.easy, active[easy.handle] != nil else { return }
            _ = attache_curl_easy_pause(easy.handle, attache_curl_pause_cont())
        }
    }

    private func complete(_ handle: UnsafeMutableRawPointer, code: CURLcode, multi: UnsafeMutableRawPointer) {
        guard let exchange = active.removeValue(forKey: handle), let easy = exchange.easy else {
            _ = attache_curl_multi_remove_handle(multi, handle)
            return
        }
        let text = easy.errorText(for: code)
        let result = exchange.result(code: code, text: text, easy: easy)
        _ = attache_curl_multi_remove_handle(multi, handle)
        exchange.easy = nil
        exchange.finish(result)
        // Only a handle whose transfer ended cleanly is kept: one that failed (a refused connection, a
        // cut) may carry state of that failure that `curl_easy_reset` does not clear.
        if code == CURLE_OK { recycle(easy) }
    }

    private func failEverything(_ error: TransportError) {
        let commands = inbox.withLock { inbox -> [Command] in
            inbox.threadRunning = false
            defer { inbox.commands.removeAll() }
            return inbox.commands
        }
        for case .add(let exchange, _) in commands { exchange.finish(.failure(error)) }
    }
}
