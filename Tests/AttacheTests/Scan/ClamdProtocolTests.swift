import Testing
@testable import Attache
@testable import AttacheCore

/// clamd's answers and addresses as the client reads them, without a daemon.
@Suite("clamd protocol text")
struct ClamdProtocolTests {
    @Test(arguments: [
        ("stream: OK", ClamdReply.clean),
        ("fd[12]: OK", .clean),
        ("stream: Win.Test.EICAR_HDB-1 FOUND", .infected(signature: "Win.Test.EICAR_HDB-1")),
        ("fd[7]: Attache.Test.ClamExe.UNOFFICIAL FOUND", .infected(signature: "Attache.Test.ClamExe.UNOFFICIAL")),
        ("INSTREAM size limit exceeded. ERROR", .error("INSTREAM size limit exceeded.")),
        ("stream: Can't allocate memory ERROR", .error("stream: Can't allocate memory")),
        ("UNKNOWN COMMAND", .error("UNKNOWN COMMAND")),
    ])
    func replies(text: String, expected: ClamdReply) {
        #expect(ClamdReply(parsing: text) == expected)
    }

    @Test(arguments: [
        ("1: OK", 1 as Int?),
        ("42: fd[12]: Eicar FOUND", 42),
        ("123456789012345678: OK", 123_456_789_012_345_678),
        ("1234567890123456789: OK", nil),
        ("7:OK", nil),
        (": OK", nil),
        ("x1: OK", nil),
        ("1 : OK", nil),
        ("12", nil),
        ("", nil),
    ])
    func requestNumbers(answer: String, expected: Int?) {
        #expect(ClamdConnection.requestNumber(of: answer) == expected)
    }

    @Test func versions() {
        let full = ClamdConnection.parseVersion("ClamAV 1.4.6/27470/Thu Nov 26 09:29:01 2026")
        #expect(full == ScanEngineVersion(engine: "ClamAV 1.4.6", signatures: "27470"))
        // A database without a daily part: no signature version.
        #expect(ClamdConnection.parseVersion("ClamAV 1.4.6") == ScanEngineVersion(engine: "ClamAV 1.4.6"))
    }

    @Test func addresses() throws {
        #expect(try ClamdAddress(parsing: "unix:/run/clamav/clamd.ctl") == .unix(path: "/run/clamav/clamd.ctl"))
        #expect(try ClamdAddress(parsing: "tcp:127.0.0.1:3310") == .tcp(host: "127.0.0.1", port: 3310))
        #expect(try ClamdAddress(parsing: "tcp:[::1]:3310") == .tcp(host: "::1", port: 3310))
        #expect(try ClamdAddress(parsing: "tcp:[::1]:3310").description == "tcp:[::1]:3310")
        for bad in ["", "clamd.ctl", "unix:", "tcp:host", "tcp::3310", "tcp:host:0", "tcp:host:99999", "http://x"] {
            #expect(throws: AttacheError.self, "\(bad)") { try ClamdAddress(parsing: bad) }
        }
        let long = "unix:/" + String(repeating: "a", count: 120)
        #expect(throws: AttacheError.self) { try ClamdAddress(parsing: long) }
    }
}
