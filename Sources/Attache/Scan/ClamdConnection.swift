import Glibc
internal import CLibc

/// One connection to clamd, in a session (`zIDSESSION`) from the start: its engine and signature
/// versions are read once (`zVERSION`), then any number of `zINSTREAM` or `zFILDES` scans follow, one
/// at a time, each answered `N: …` with the number of the request (clamd(8), "IDSESSION").
///
/// Blocking, on a non-blocking socket: every wait is a `poll(2)` with a timeout, so a clamd that stops
/// reading or answering fails the scan with `.timedOut` instead of hanging it. Used by one thread at
/// a time (``ClamdSessionPool`` hands it out).
final class ClamdConnection {
    /// How long to wait, each.
    struct Timeouts: Sendable {
        /// For the connection to be accepted.
        var connect: Duration
        /// For clamd to take the next chunk of a stream (a stalled clamd).
        var stall: Duration
        /// For the verdict once everything was sent (the scan itself).
        var reply: Duration
    }

    /// Where it is connected.
    let address: ClamdAddress
    /// The engine and signature versions, read when the session began.
    private(set) var version = ScanEngineVersion(engine: "ClamAV")
    /// When it was last used; idle sessions are closed before clamd's `IdleTimeout` would.
    var lastUsed = ContinuousClock.now
    /// False once anything failed: the session's state is unknown and it is not reused.
    private(set) var isReusable = true
    /// Scans answered on this connection.
    private(set) var scans = 0

    private let descriptor: Int32
    private let timeouts: Timeouts
    private var nextRequest = 1
    private var pending: [UInt8] = []

    /// Connects, begins a session and reads the version.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `scan`): `.connectionFailed` (retryable) when clamd is not
    ///   there, `.timedOut`, `.connectionLost`, `.badResponse` for an answer that is not clamd's.
    init(address: ClamdAddress, timeouts: Timeouts) throws {
        self.address = address
        self.timeouts = timeouts
        self.descriptor = try Self.connect(address, timeout: timeouts.connect)
        do {
            try write(command: "zIDSESSION")
            let answer = try request("zVERSION", timeout: timeouts.stall)
            version = Self.parseVersion(answer)
        } catch {
            close()
            throw error
        }
    }

    deinit { if descriptor >= 0 { Glibc.close(descriptor) } }

    /// Ends the session (`zEND`, best effort) and closes the socket.
    func close() {
        guard !closed else { return }
        closed = true
        if isReusable { _ = "zEND\0".utf8CString.withUnsafeBytes { send(descriptor, $0.baseAddress, 5, Int32(MSG_NOSIGNAL)) } }
        shutdown(descriptor, Int32(SHUT_RDWR))
    }

    private var closed = false

    /// Streams `source` as `zINSTREAM`: chunks of at most `chunkSize` bytes, each after its length as a
    /// 4-byte big-endian number, then a zero length; one buffer of `chunkSize` bytes whatever the size.
    /// - Throws: ``AttacheCore/AttacheError`` as ``ClamAVScanner``'s scans; reading the source's own errors.
    func scanStream(_ source: any ByteSource, chunkSize: Int, file: String) throws -> ClamdReply {
        let id = try begin("zINSTREAM")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize + 4, alignment: 16)
        defer { buffer.deallocate() }
        do {
            let reader = try source.makeReader()
            while true {
                let count = try reader.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer[4...]))
                Self.putLength(UInt32(count), into: buffer)
                try write(UnsafeRawBufferPointer(rebasing: buffer[..<(4 + count)]), timeout: timeouts.stall)
                if count == 0 { break }
            }
        } catch let error as AttacheError where error.stage == .scan && error.code == .connectionLost {
            // clamd closes the stream when it is over StreamMaxLength, after saying so: read what it said.
            if let answer = try? readAnswer(timeout: .seconds(2)) { return try finish(answer, id: id) }
            throw error
        } catch {
            isReusable = false
            throw error
        }
        return try finish(try readAnswer(timeout: timeouts.reply), id: id)
    }

    /// Sends the open file `path` as `zFILDES` (UNIX sockets only): clamd reads the file itself through
    /// the descriptor, and no byte is copied through the socket.
    /// - Throws: ``AttacheCore/AttacheError``: opening the file (`.fileNotFound`, `.fileUnreadable`), and as
    ///   ``scanStream(_:chunkSize:file:)``.
    func scanDescriptor(path: String, file: String) throws -> ClamdReply {
        let fileDescriptor = try FileDescriptor.openForReading(path, stage: .scan)
        defer { Glibc.close(fileDescriptor) }
        let id = try begin("zFILDES")
        try pass(fileDescriptor)
        return try finish(try readAnswer(timeout: timeouts.reply), id: id)
    }

    /// Scans `paths` by descriptor with every request sent before the first answer is read, as
    /// `clamdscan --fdpass --multiscan` does: clamd scans them on its threads and answers each `N: …`
    /// when done, in any order. Keep `paths` short (clamd's `MaxQueue` is 100 by default). A file that
    /// cannot be opened, or is not a regular file, gets its error and no request.
    /// - Throws: ``AttacheCore/AttacheError`` as ``scanStream(_:chunkSize:file:)`` when the connection fails; then no
    ///   result stands.
    func scanDescriptors(_ paths: [String]) throws -> [Result<ClamdReply, AttacheError>] {
        var results = [Result<ClamdReply, AttacheError>?](repeating: nil, count: paths.count)
        var remaining = paths.makeIterator()
        try scanDescriptors(
            window: max(1, paths.count), next: { remaining.next() }, deliver: { index, _, result in results[index] = result })
        return results.map { $0! }
    }

    /// Scans by descriptor the files `next` gives until it gives nil, with up to `window` requests sent
    /// and not yet answered: a new request goes out as soon as an answer frees a place, so clamd's
    /// threads never wait for the client between files. Each result goes to `deliver`, with the file's
    /// place in the order `next` gave it, when its answer arrives (in any order); a file that cannot be
    /// opened, or is not a regular file, gets its error and no request. `idle` is called when no answer
    /// came for 50 ms (a caller that buffers results hands them on then).
    /// - Throws: ``AttacheCore/AttacheError`` as ``scanStream(_:chunkSize:file:)`` when the connection fails, after
    ///   every file taken and not answered was delivered with that error.
    func scanDescriptors(
        window: Int, next: () -> String?, deliver: (Int, String, Result<ClamdReply, AttacheError>) -> Void,
        idle: () -> Void = {}
    ) throws {
        var waiting: [Int: (index: Int, path: String)] = [:]
        var inHand: (index: Int, path: String)?
        var taken = 0
        var exhausted = false
        do {
            while true {
                while !exhausted, waiting.count < window {
                    guard let path = next() else {
                        exhausted = true
                        break
                    }
                    let file = (index: taken, path: path)
                    taken += 1
                    let fileDescriptor: Int32
                    do {
                        fileDescriptor = try Self.openRegularFile(path)
                    } catch let error as AttacheError {
                        deliver(file.index, path, .failure(error))
                        continue
                    }
                    inHand = file
                    // The kernel holds the file once it is sent: closing this end at once is safe.
                    defer { Glibc.close(fileDescriptor) }
                    let id = try begin("zFILDES")
                    try pass(fileDescriptor)
                    waiting[id] = file
                    inHand = nil
                }
                if waiting.isEmpty { return }
                // Wait for an answer only when nothing more can be sent; else take what has come.
                var answer = takeAnswer()
                if answer == nil, exhausted || waiting.count >= window {
                    if !readable(within: .milliseconds(50)) { idle() }
                    answer = try readAnswer(timeout: timeouts.reply)
                } else if answer == nil {
                    answer = try availableAnswer()
                }
                while let text = answer {
                    answer = takeAnswer()
                    guard let (id, body) = Self.numbered(text), let file = waiting.removeValue(forKey: id) else {
                        isReusable = false
                        throw AttacheError(
                            .badResponse, stage: .scan, "clamd at \(address) answered out of turn: \(Self.excerpt(text))")
                    }
                    deliver(file.index, file.path, .success(record(ClamdReply(parsing: String(body)))))
                }
            }
        } catch let error as AttacheError {
            isReusable = false
            if let inHand { deliver(inHand.index, inHand.path, .failure(error)) }
            for file in waiting.values { deliver(file.index, file.path, .failure(error)) }
            throw error
        }
    }

    /// Whether an answer can be read within `timeout` (false also when waiting failed: the read that
    /// follows reports it).
    private func readable(within timeout: Duration) -> Bool {
        if pending.contains(0) { return true }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: timeout.milliseconds)
        return FileDescriptor.retryingInterrupts { poll(&entry, 1, milliseconds) } != 0
    }

    /// Opens `path` for clamd to read, only when it is a regular file: `O_NONBLOCK` (which changes
    /// nothing for a regular file) so that a FIFO put in a file's place is refused rather than waited on.
    /// - Throws: ``AttacheCore/AttacheError``: `.fileNotFound`, `.fileUnreadable`.
    private static func openRegularFile(_ path: String) throws -> Int32 {
        let fileDescriptor = FileDescriptor.open(path, O_RDONLY | O_NONBLOCK)
        guard fileDescriptor >= 0 else {
            throw AttacheError.system("cannot open the file", stage: .scan, file: path, missing: "no such file")
        }
        var info = stat()
        guard fstat(fileDescriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fileDescriptor)
            throw AttacheError(.fileUnreadable, stage: .scan, "not a regular file", file: path)
        }
        return fileDescriptor
    }

    /// Passes `fileDescriptor` over the session's UNIX socket (`SCM_RIGHTS`).
    private func pass(_ fileDescriptor: Int32) throws {
        while true {
            let sent = attache_send_descriptor(descriptor, fileDescriptor)
            if sent == 1 { return }
            if sent < 0, errno == EINTR { continue }
            if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                try wait(for: Int16(POLLOUT), timeout: timeouts.stall, doing: "take the file descriptor")
                continue
            }
            throw lost(errno, "passing the file descriptor")
        }
    }

    // MARK: - Requests and answers

    /// Sends `command` and returns the request's number.
    private func begin(_ command: String) throws -> Int {
        let id = nextRequest
        nextRequest += 1
        try write(command: command)
        return id
    }

    /// Sends `command` and reads its answer, without the `N: ` prefix.
    private func request(_ command: String, timeout: Duration) throws -> String {
        let id = try begin(command)
        return try strip(try readAnswer(timeout: timeout), id: id)
    }

    /// The answer's text after its `N: ` prefix, checked against the request's number.
    private func strip(_ answer: String, id: Int) throws -> String {
        guard let (number, body) = Self.numbered(answer), number == id else {
            isReusable = false
            throw AttacheError(
                .badResponse, stage: .scan, "clamd at \(address) answered out of turn: \(Self.excerpt(answer))")
        }
        return String(body)
    }

    /// The reply to scan `id`; the connection stays reusable only after a verdict.
    private func finish(_ answer: String, id: Int) throws -> ClamdReply {
        record(ClamdReply(parsing: try strip(answer, id: id)))
    }

    /// Counts a scan's reply; the connection stays reusable only after a verdict.
    private func record(_ reply: ClamdReply) -> ClamdReply {
        if case .error = reply { isReusable = false }
        scans += 1
        lastUsed = .now
        return reply
    }

    /// Reads up to the next NUL (the `z` commands' delimiter).
    private func readAnswer(timeout: Duration) throws -> String {
        try readAnswer(waitingUpTo: timeout)!
    }

    /// The next answer already received or waiting in the socket, nil when there is none yet.
    private func availableAnswer() throws -> String? {
        try readAnswer(waitingUpTo: nil)
    }

    /// The next answer, waiting for it up to `timeout` (without one, not at all: nil when none came).
    private func readAnswer(waitingUpTo timeout: Duration?) throws -> String? {
        if let answer = takeAnswer() { return answer }
        return try withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 1) { buffer in
            try readAnswer(waitingUpTo: timeout, into: buffer)
        }
    }

    /// The next whole answer already received, if there is one.
    private func takeAnswer() -> String? {
        guard let end = pending.firstIndex(of: 0) else { return nil }
        let answer = String(decoding: pending[..<end], as: UTF8.self)
        pending.removeSubrange(...end)
        return answer
    }

    /// Receives into `buffer` until an answer is whole (without `timeout`, until the socket is empty).
    private func readAnswer(waitingUpTo timeout: Duration?, into buffer: UnsafeMutableRawBufferPointer) throws -> String? {
        while true {
            if let answer = takeAnswer() { return answer }
            guard pending.count < 64 * 1024 else {
                isReusable = false
                throw AttacheError(.badResponse, stage: .scan, "clamd at \(address) sent an answer without an end")
            }
            let count = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if count > 0 {
                pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            } else if count == 0 {
                isReusable = false
                throw AttacheError(
                    .connectionLost, stage: .scan, "clamd at \(address) closed the connection before answering",
                    isRetryable: true)
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                guard let timeout else { return nil }
                try wait(for: Int16(POLLIN), timeout: timeout, doing: "answer")
            } else if errno != EINTR {
                throw lost(errno, "reading the answer")
            }
        }
    }

    // MARK: - Socket

    private func write(command: String) throws {
        try command.withCString { text in
            // The `z` form: the command ends with its NUL.
            try write(UnsafeRawBufferPointer(start: text, count: command.utf8.count + 1), timeout: timeouts.stall)
        }
    }

    private func write(_ bytes: UnsafeRawBufferPointer, timeout: Duration) throws {
        var done = 0
        while done < bytes.count {
            let count = send(descriptor, bytes.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL))
            if count > 0 {
                done += count
            } else if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                try wait(for: Int16(POLLOUT), timeout: timeout, doing: "take more of the file")
            } else if count < 0, errno == EINTR {
                continue
            } else {
                throw lost(count < 0 ? errno : EPIPE, "sending")
            }
        }
    }

    /// Waits until the socket is ready for `events`; past `timeout`, the scan fails.
    private func wait(for events: Int16, timeout: Duration, doing what: String) throws {
        var entry = pollfd(fd: descriptor, events: events, revents: 0)
        let milliseconds = Int32(clamping: timeout.milliseconds)
        let ready = FileDescriptor.retryingInterrupts { poll(&entry, 1, milliseconds) }
        if ready == 0 {
            isReusable = false
            throw AttacheError(
                .timedOut, stage: .scan,
                "clamd at \(address) did not \(what) within \(Self.seconds(timeout)) s: it stopped answering",
                isRetryable: true)
        }
        if ready < 0 { throw lost(errno, "waiting") }
    }

    private func lost(_ code: Int32, _ doing: String) -> AttacheError {
        isReusable = false
        return AttacheError(
            .connectionLost, stage: .scan,
            "the connection to clamd at \(address) broke while \(doing): \(String(cString: strerror(code)))",
            isRetryable: true, cause: NativeError.posix(code))
    }

    /// A connected, non-blocking socket.
    private static func connect(_ address: ClamdAddress, timeout: Duration) throws -> Int32 {
        switch address {
        case .unix(let path):
            let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socket >= 0 else { throw unreachable(address, errno) }
            var name = sockaddr_un()
            name.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &name.sun_path) { target in
                for (index, byte) in path.utf8.prefix(target.count - 1).enumerated() { target[index] = byte }
            }
            let result = withUnsafePointer(to: &name) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard result == 0 else {
                let code = errno
                Glibc.close(socket)
                throw unreachable(address, code)
            }
            _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
            return socket
        case .tcp(let host, let port):
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            hints.ai_flags = AI_ADDRCONFIG
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, String(port), &hints, &list)
            guard status == 0, let first = list else {
                throw AttacheError(
                    .connectionFailed, stage: .scan,
                    "cannot resolve clamd's host \(host): \(String(cString: gai_strerror(status)))", isRetryable: true)
            }
            defer { freeaddrinfo(list) }
            var lastError = ECONNREFUSED
            var entry: UnsafeMutablePointer<addrinfo>? = first
            while let current = entry {
                entry = current.pointee.ai_next
                let socket = Glibc.socket(
                    current.pointee.ai_family,
                    Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                guard socket >= 0 else {
                    lastError = errno
                    continue
                }
                if Glibc.connect(socket, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0
                    || (errno == EINPROGRESS && awaitConnection(socket, timeout: timeout, error: &lastError))
                {
                    var yes: Int32 = 1
                    setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
                    return socket
                }
                if errno != EINPROGRESS { lastError = errno }
                Glibc.close(socket)
            }
            throw unreachable(address, lastError)
        }
    }

    /// Waits for a non-blocking `connect` to finish; false with `error` set when it failed.
    private static func awaitConnection(_ socket: Int32, timeout: Duration, error: inout Int32) -> Bool {
        var entry = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
        let milliseconds = Int32(clamping: timeout.milliseconds)
        guard FileDescriptor.retryingInterrupts({ poll(&entry, 1, milliseconds) }) == 1 else {
            error = ETIMEDOUT
            return false
        }
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(socket, SOL_SOCKET, SO_ERROR, &code, &length)
        error = code
        return code == 0
    }

    private static func unreachable(_ address: ClamdAddress, _ code: Int32) -> AttacheError {
        AttacheError(
            .connectionFailed, stage: .scan, "clamd at \(address) is not reachable: \(String(cString: strerror(code)))",
            isRetryable: true, cause: NativeError.posix(code))
    }

    private static func putLength(_ length: UInt32, into buffer: UnsafeMutableRawBufferPointer) {
        buffer[0] = UInt8(truncatingIfNeeded: length >> 24)
        buffer[1] = UInt8(truncatingIfNeeded: length >> 16)
        buffer[2] = UInt8(truncatingIfNeeded: length >> 8)
        buffer[3] = UInt8(truncatingIfNeeded: length)
    }
}
