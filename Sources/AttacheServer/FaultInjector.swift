import HTTPTypes
import Hummingbird
import Logging
internal import NIOCore
import ServiceLifecycle
import Glibc

/// Carries out a ``FaultKind`` on one request, down to the connection when the fault needs it.
///
/// Hummingbird answers every request it is handed unless the connection is gone, so the faults that
/// must not answer (stall, drop, truncated) close the channel from the handler and then throw
/// ``ConnectionAbandoned``; the framework's attempt to write an error response then fails silently.
struct FaultInjector {
    let context: ServerRequestContext

    /// Thrown after the connection has been closed on purpose.
    struct ConnectionAbandoned: Error {}

    func inject(_ fault: FaultKind, into request: Request) async throws -> Response {
        let channel = context.channel
        switch fault {
        case .status(let status, let retryAfter):
            try await drain(request.body)
            var headers: HTTPFields = [:]
            if let retryAfter { headers[.retryAfter] = "\(retryAfter)" }
            return errorResponse(HTTPResponse.Status(code: status), "injected fault: \(status)", headers: headers)

        case .tooLargeEarly:
            return earlyRejection(status: .contentTooLarge, message: "injected fault: request body too large")

        case .stall(let seconds):
            // Ends early when the server shuts down, so a stalled request does not hold up a test.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(seconds)) }
            try? await channel.close().get()
            throw ConnectionAbandoned()

        case .drop(let after):
            var received = 0
            for try await buffer in request.body {
                received += buffer.readableBytes
                if received >= after { break }
            }
            // SO_LINGER 0 turns the close into a reset: the client sees the connection fail, not end.
            if let provider = channel as? any SocketOptionProvider {
                try? await provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
            }
            try? await channel.close().get()
            throw ConnectionAbandoned()

        case .garbage:
            try await drain(request.body)
            let page = "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>\n"
            return Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: page)))

        case .empty:
            try await drain(request.body)
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init())

        case .truncated:
            try await drain(request.body)
            let whole = Array(#"{"errorCode":0,"message":"ok","data":{"fileId":"truncatedresponse","size":0}}"#.utf8)
            let half = ByteBuffer(bytes: whole.prefix(whole.count / 2))
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(contentLength: whole.count) { writer in
                    try await writer.write(half)
                    try? await channel.close().get()
                })

        case .business(let code, let message):
            try await drain(request.body)
            return jsonResponse(.ok, ServerJSON.error(code: code, message: message))

        case .crash:
            // Carried out by the store during the commit (UploadController), never here.
            preconditionFailure("a crash fault is injected by the store's commit")
        }
    }

    /// Resets the connection without an answer (a fault inside a resumable append) and throws
    /// ``ConnectionAbandoned``.
    func abandon() async throws -> Response {
        let channel = context.channel
        if let provider = channel as? any SocketOptionProvider {
            try? await provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        }
        try? await channel.close().get()
        throw ConnectionAbandoned()
    }

    /// Answers without reading the body, then closes the connection.
    ///
    /// Only the sending side is closed at once: a full close with unread request bytes would reset
    /// the connection and could destroy the answer before the client reads it. The client (curl
    /// and libcurl stop sending on an early final answer) then closes its side; a full close two
    /// seconds later bounds clients that keep sending.
    func earlyRejection(status: HTTPResponse.Status, message: String) -> Response {
        let channel = context.channel
        let body = ByteBuffer(bytes: ServerJSON.error(code: status.code, message: message))
        return Response(
            status: status, headers: [.contentType: "application/json", .connection: "close"],
            body: ResponseBody(contentLength: body.readableBytes) { writer in
                try await writer.write(body)
                try await writer.finish(nil)
                channel.close(mode: .output, promise: nil)
                channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
            })
    }

    private func drain(_ body: RequestBody) async throws {
        for try await _ in body {}
    }
}
