import Glibc
import Testing
@testable import Attache
@testable import AttacheCore

/// The one `System` place: the lock, the locked value, the file-descriptor calls with their errors,
/// the trim, the credential header names, the duration units and the percent-decoding (the URL rule
/// has its own table, `URLRedactionTests`).
@Suite("System")
struct SystemTests {
    @Test("LockedValue keeps every increment of threads racing on it")
    func lockedValueCounts() async {
        let count = LockedValue(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<10_000 { count.withLock { $0 += 1 } } }
            }
        }
        #expect(count.withLock { $0 } == 80_000)
    }

    /// State guarded by a ``Lock`` by hand, as the write-behind writer keeps its own.
    final class Handover: @unchecked Sendable {
        let lock = Lock()
        var ready = false
        var seen = false
    }

    @Test("a thread waiting on the Lock's condition wakes when another signals it")
    func conditionHandsOver() async {
        let handover = Handover()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            startDetachedThread(name: "system-test") {
                handover.lock.lock()
                while !handover.ready { handover.lock.wait() }
                handover.seen = true
                handover.lock.unlock()
                continuation.resume()
            }
            handover.lock.withLock {
                handover.ready = true
                handover.lock.signal()
            }
        }
        #expect(handover.lock.withLock { handover.seen })
    }

    @Test("a missing file is fileNotFound, other failures keep the system's text and errno")
    func errnoMapping() throws {
        let missing = "/nonexistent-\(UInt64.random(in: 0...UInt64.max))/file"
        #expect(FileDescriptor.open(missing, O_RDONLY) == -1)
        let error = AttacheError.system("cannot open the file", stage: .read, file: missing, missing: "no such file")
        #expect(error.code == .fileNotFound)
        #expect(error.message == "no such file")
        #expect((error.cause as? NativeError)?.code == Int(ENOENT))

        let denied = AttacheError.system("write failed", errno: EACCES, .fileUnwritable, stage: .seal, file: "x")
        #expect(denied.code == .fileUnwritable)
        #expect(denied.message == "write failed: " + String(cString: strerror(EACCES)))
        #expect((denied.cause as? NativeError)?.library == "posix")

        // Without `missing`, ENOENT is no different from any other failure (a write into a missing folder).
        let write = AttacheError.system("cannot create", errno: ENOENT, .fileUnwritable, stage: .seal, file: "x")
        #expect(write.code == .fileUnwritable)

        #expect(throws: AttacheError.self) { try FileDescriptor.openForReading(missing, stage: .detect) }
    }

    @Test("writeAll writes everything and read reads it back; a bad descriptor gives its errno")
    func writeAndRead() throws {
        var template = Array("/tmp/attache-system-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        try #require(fd >= 0)
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { close(fd); unlink(path) }
        let bytes: [UInt8] = (0..<100_000).map { (i: Int) in UInt8(truncatingIfNeeded: i &* 7) }
        #expect(bytes.withUnsafeBytes { FileDescriptor.writeAll(fd, $0) } == nil)
        #expect(bytes.withUnsafeBytes { FileDescriptor.writeAll(fd, UnsafeRawBufferPointer(rebasing: $0[..<10]), at: 5) } == nil)
        var back = [UInt8](repeating: 0, count: 20)
        let n = back.withUnsafeMutableBytes { FileDescriptor.read(fd, into: $0, at: 0) }
        #expect(n == 20)
        #expect(Array(back[0..<5]) == Array(bytes[0..<5]))
        #expect(Array(back[5..<15]) == Array(bytes[0..<10]))
        #expect(bytes.withUnsafeBytes { FileDescriptor.writeAll(-1, $0) } == EBADF)
    }

    @Test("one trim: blanks are spaces and tabs, white space is every kind")
    func trims() {
        #expect(" \tname \t".trimmingBlanks == "name")
        #expect(" name\n".trimmingBlanks == "name\n")
        #expect("\u{A0} soun \r\n".trimmingWhiteSpace == "soun")
        #expect("  ".trimmingWhiteSpace == "")
        #expect("xxaxx".trimming(where: { $0 == "x" }) == "a")
    }

    @Test("one list of credential headers, the same for logs, redirects and the command line",
          arguments: ["Authorization", "proxy-authorization", "COOKIE", "Set-Cookie", "X-Api-Key", "x-auth-token", "X-Amz-Security-Token"])
    func credentialHeaders(name: String) {
        #expect(CredentialHeaders.contains(name))
        #expect(LogRedaction().isSecret(header: name))
    }

    @Test("a redirect to another host sends none of the credential headers, and keeps the others")
    func redirectDropsCredentials() {
        let credentials = CredentialHeaders.names.sorted().map { HeaderField(name: $0, value: "secret-\($0)") }
        let request = TransportRequest(
            method: "GET", url: "http://127.0.0.1/", headers: credentials + [HeaderField(name: "X-Tenant", value: "acme")])
        let sameHost = request.headerLines(withCredentials: true)
        #expect(sameHost.filter { $0.contains("secret-") }.count == credentials.count)
        let elsewhere = request.headerLines(withCredentials: false)
        #expect(elsewhere.contains("X-Tenant: acme"))
        #expect(!elsewhere.contains { $0.contains("secret-") })
    }

    @Test("a duration in seconds, and in whole milli-, micro- and nanoseconds rounded toward zero")
    func durationUnits() {
        let duration = Duration.seconds(2) + .nanoseconds(345_678_901)
        #expect(abs(duration.seconds - 2.345678901) < 1e-12)
        #expect(duration.milliseconds == 2_345)
        #expect(duration.microseconds == 2_345_678)
        #expect(duration.nanoseconds == 2_345_678_901)
        #expect(Duration.milliseconds(-1500).milliseconds == -1_500)
        #expect(Duration.zero.seconds == 0)
    }

    @Test("percent-decoding: strict gives nil for a malformed escape or bytes that are not UTF-8", arguments: [
        ("a%20b", false, "a b"),
        ("a+b%3D", true, "a b="),
        ("a+b", false, "a+b"),
        ("%C3%A9t%C3%A9", false, "été"),
        ("plain", false, "plain"),
        ("100%", false, nil),
        ("%4", false, nil),
        ("%zz", false, nil),
        ("%FF", false, nil),
    ] as [(String, Bool, String?)])
    func percentDecoding(encoded: String, plusAsSpace: Bool, decoded: String?) {
        #expect(encoded.percentDecoded(plusAsSpace: plusAsSpace) == decoded)
    }

    @Test("percent-decoding bytes: any byte comes back, a malformed escape gives nil")
    func percentDecodingBytes() {
        #expect(PercentDecoding.decoding("%FF%00a".utf8) == [0xFF, 0x00, UInt8(ascii: "a")])
        #expect(PercentDecoding.decoding("a=%".utf8) == nil)
        #expect(PercentDecoding.decoding("a+b".utf8, plusAsSpace: true) == Array("a b".utf8))
    }

    @Test("lenient percent-decoding keeps a malformed escape as written and decodes the rest")
    func lenientPercentDecoding() {
        #expect(String(decoding: PercentDecoding.decodingLeniently("user[%70assword]%".utf8), as: UTF8.self) == "user[password]%")
        #expect(String(decoding: PercentDecoding.decodingLeniently("%zz+%41".utf8, plusAsSpace: true), as: UTF8.self) == "%zz A")
        #expect(LogRedaction().isSecret(field: "user[%70assword]%"))
    }

    @Test("ordinary headers are not credentials")
    func ordinaryHeaders() {
        #expect(!CredentialHeaders.contains("Content-Type"))
        #expect(!CredentialHeaders.contains("X-Tenant"))
        #expect(LogRedaction.defaultHeaderNames == CredentialHeaders.names)
    }
}
