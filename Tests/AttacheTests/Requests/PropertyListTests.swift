import Foundation
import Testing
@testable import Attache

@Suite struct PropertyListTests {
    static let sample: PropertyListValue = .dictionary([
        "name": .string("bang & <co>"),
        "count": .integer(-3),
        "ratio": .real(0.1),
        "whole": .real(2),
        "ok": .bool(true),
        "no": .bool(false),
        "when": .date(Date(timeIntervalSince1970: 1_700_000_000)),
        "blob": .data(Array(0..<100)),
        "list": .array([.string("a"), .array([]), .dictionary([:])]),
        "nested": .dictionary(["k": .string("v")]),
    ])

    @Test func writesApplesXMLLayout() {
        let xml = PropertyListValue.dictionary(["b": .integer(1), "a": .array([.bool(true)])]).xmlString
        #expect(
            xml == """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0">
                <dict>
                \t<key>a</key>
                \t<array>
                \t\t<true/>
                \t</array>
                \t<key>b</key>
                \t<integer>1</integer>
                </dict>
                </plist>

                """)
    }

    @Test func escapesTextAndWrapsData() {
        let xml = Self.sample.xmlString
        #expect(xml.contains("<string>bang &amp; &lt;co&gt;</string>"))
        #expect(xml.contains("<date>2023-11-14T22:13:20Z</date>"))
        #expect(xml.contains("<real>0.1</real>") && xml.contains("<real>2</real>"))
        #expect(xml.contains("<array/>") && xml.contains("<dict/>"))
        // 100 bytes at depth 1: lines of 68 base64 characters (76 less one tab counted as 8), 51 bytes each.
        let dataLines = xml.components(separatedBy: "\n").filter { $0.hasPrefix("\t") && !$0.contains("<") }
        #expect(dataLines.map { $0.count - 1 } == [68, 68])
    }

    @Test func readsBackWhatItWrites() throws {
        #expect(try PropertyListValue(xml: Self.sample.xmlBytes()) == Self.sample)
    }

    @Test func readsWhatOtherWritersProduce() throws {
        // Python plistlib's layout: `<real>2.0</real>`, data wrapped, a comment, CDATA, entities.
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <!-- answer -->
            <dict>
              <key>errorCode</key><integer>0</integer>
              <key>message</key><string><![CDATA[a <b>]]> &amp; &#233;&#x263A;</string>
              <key>real</key><real>2.0</real>
              <key>data</key><data>
              AAEC
              Aw==
              </data>
              <key>empty</key><string/>
            </dict>
            </plist>
            """
        let value = try PropertyListValue(xml: Array(text.utf8))
        #expect(value["errorCode"] == .integer(0))
        #expect(value["message"] == .string("a <b> & é☺"))
        #expect(value["real"] == .real(2))
        #expect(value["data"] == .data([0, 1, 2, 3]))
        #expect(value["empty"] == .string(""))
        #expect(value.jsonValue["errorCode"] == .number(0))
    }

    @Test(arguments: [
        "", "<plist>", "<plist><dict><key>a</key></dict></plist>", "<plist><integer>x</integer></plist>",
        "<plist><string>a</plist>", "<plist><dict><string>a</string></dict></plist>", "<plist><foo/></plist>",
        "<plist><true/></plist>trailing", "<plist><data>!!</data></plist>", "<plist><string>&bogus;</string></plist>",
        "<plist><date>yesterday</date></plist>",
    ])
    func refusesMalformedInput(_ text: String) {
        let error = #expect(throws: AttacheError.self) { try PropertyListValue(xml: Array(text.utf8)) }
        #expect(error?.code == .corruptInput)
        #expect(error?.stage == .interpret)
    }

    /// The property lists of the fuzz seed corpus (written by Python's plistlib, and by hand) all read,
    /// so the fuzzer starts past the reader's front door.
    @Test func readsTheFuzzSeeds() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("FuzzCorpus/requests")
        let seeds = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".plist") }
        #expect(seeds.count >= 6)
        for seed in seeds {
            let bytes = Array(try Data(contentsOf: folder.appendingPathComponent(seed)))
            #expect(throws: Never.self, "\(seed)") { _ = try PropertyListValue(xml: bytes) }
        }
        let forms = try PropertyListValue(xml: Array(try Data(contentsOf: folder.appendingPathComponent("real-forms.plist"))))
        #expect(forms.xmlString.contains("<integer>16</integer>") && forms.xmlString.contains("<real>+infinity</real>"))
    }

    @Test func refusesDeepNestingWithoutCrashing() {
        let text = "<plist>" + String(repeating: "<array>", count: 10_000) + "</plist>"
        #expect(throws: AttacheError.self) { try PropertyListValue(xml: Array(text.utf8)) }
    }

    @Test func convertsParametersAndJSON() throws {
        let parameters: Parameters = ["a": 1, "b": 1.5, "c": .set(["y", "x"]), "d": ["e": true]]
        #expect(
            try PropertyListValue(parameters)
                == .dictionary([
                    "a": .integer(1), "b": .real(1.5), "c": .array([.string("x"), .string("y")]),
                    "d": .dictionary(["e": .bool(true)]),
                ]))
        #expect(throws: AttacheError.self) { try PropertyListValue(["a": nil] as Parameters) }
        #expect(try PropertyListValue(JSONValue.array([.number(3), .number(0.5)])) == .array([.integer(3), .real(0.5)]))
        #expect(throws: AttacheError.self) { try PropertyListValue(JSONValue.null) }
    }
}
