internal import AttacheCore
import Glibc

/// Where ``RequestClient`` puts one attempt's answer: in memory up to a cap, or streamed into a file;
/// progress forwarded to the caller.
///
/// `@unchecked Sendable` without a lock: the transport calls a sink from one thread at a time
/// (``ResponseSink``), and the caller reads it only after the transport has returned, which the
/// transport's hand-over lock orders after the last call.
final class RequestSink: ResponseSink, @unchecked Sendable {
    private let destination: String?
    private let attempt: Int
    private let bytesToSend: Int64
    private let onProgress: (@Sendable (RequestClient.Progress) -> Void)?
    private var file = ResponseBodyFile()
    private var body: CappedBody
    var collectedBody: [UInt8] { body.bytes }
    var bodyExceededCap: Bool { body.exceededCap }
    private(set) var failure: AttacheError?
    /// Bytes of body delivered to the sink (after decompression), kept or written.
    private(set) var deliveredBytes: Int64 = 0

    init(
        limit: Int, destination: String?, attempt: Int, bytesToSend: Int64,
        progress: (@Sendable (RequestClient.Progress) -> Void)?
    ) {
        self.body = CappedBody(limit: limit)
        self.destination = destination
        self.attempt = attempt
        self.bytesToSend = bytesToSend
        self.onProgress = progress
    }

    func begin(status: Int, headers: [HeaderField]) -> Bool {
        body.reset()
        deliveredBytes = 0
        guard let destination else { return true }
        if let code = file.open(destination) {
            failure = AttacheError.system("cannot create the output file", errno: code, .fileUnwritable, stage: .request, file: destination)
            return false
        }
        return true
    }

    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        deliveredBytes += Int64(bytes.count)
        guard file.isOpen else { return body.append(bytes) }
        if let code = file.write(bytes) {
            failure = AttacheError.system("cannot write the output file", errno: code, .fileUnwritable, stage: .request, file: destination)
            return false
        }
        return true
    }

    var wantsProgress: Bool { onProgress != nil }

    func progress(sent: Int64, received: Int64, expectedReceive: Int64?) {
        onProgress?(
            RequestClient.Progress(
                attempt: attempt, bytesSent: sent, bytesToSend: bytesToSend, bytesReceived: received,
                bytesToReceive: expectedReceive))
    }
}
