import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where ``RequestClient`` puts one attempt's answer: in memory up to a cap, or streamed into a file;
/// progress forwarded to the caller.
///
/// `@unchecked Sendable` without a lock: the transport calls a sink from one thread at a time
/// (``ResponseSink``), and the caller reads it only after the transport has returned, which the
/// transport's hand-over lock orders after the last call.
final class RequestSink: ResponseSink, @unchecked Sendable {
    private let limit: Int
    private let destination: String?
    private let attempt: Int
    private let bytesToSend: Int64
    private let onProgress: (@Sendable (RequestClient.Progress) -> Void)?
    private var descriptor: Int32 = -1
    private(set) var collectedBody: [UInt8] = []
    private(set) var bodyExceededCap = false
    private(set) var failure: AttacheError?
    /// Bytes of body delivered to the sink (after decompression), kept or written.
    private(set) var deliveredBytes: Int64 = 0

    init(
        limit: Int, destination: String?, attempt: Int, bytesToSend: Int64,
        progress: (@Sendable (RequestClient.Progress) -> Void)?
    ) {
        self.limit = limit
        self.destination = destination
        self.attempt = attempt
        self.bytesToSend = bytesToSend
        self.onProgress = progress
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    func begin(status: Int, headers: [HeaderField]) -> Bool {
        collectedBody.removeAll(keepingCapacity: true)
        bodyExceededCap = false
        deliveredBytes = 0
        guard let destination else { return true }
        if descriptor >= 0 { close(descriptor) }
        descriptor = PlatformPath.withCString(destination) { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        guard descriptor >= 0 else {
            failure = AttacheError.system("cannot create the output file", .fileUnwritable, stage: .request, file: destination)
            return false
        }
        return true
    }

    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        deliveredBytes += Int64(bytes.count)
        if descriptor >= 0 {
            if let code = FileDescriptor.writeAll(descriptor, bytes) {
                failure = AttacheError.system(
                    "cannot write the output file", errno: code, .fileUnwritable, stage: .request, file: destination)
                return false
            }
            return true
        }
        if collectedBody.count + bytes.count > limit {
            collectedBody.append(contentsOf: bytes.prefix(limit - collectedBody.count))
            bodyExceededCap = true
            return false
        }
        collectedBody.append(contentsOf: bytes)
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
