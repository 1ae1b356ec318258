
/// Body bytes handed to the network, summed over a session's requests from the transport's thread.
final class ByteCounter: Sendable {
    private let total = LockedValue<Int64>(0)
    func add(_ count: Int64) { total.withLock { $0 += count } }
    var value: Int64 { total.withLock { $0 } }
}
