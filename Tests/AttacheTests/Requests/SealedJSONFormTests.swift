import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// The encrypted JSON form POST: the vectors of docs/FORMAT.md, round trips, and every way a body
/// can be wrong.
@Suite struct SealedJSONFormTests {
    static let json = Array(#"{"text":"hi","userId":7}"#.utf8)
    static let passphrase = AttachmentKey(passphrase: "attache-legacy-passphrase")
    static let gcmKey = AttachmentKey(bytes: SecureBytes((0..<32).map { UInt8($0) }))
    static func gcmMaterial() throws -> SealMaterial {
        try SealMaterial(key: gcmKey, nonceSeed: SecureBytes((0..<32).map { UInt8(0x20 + $0) }))
    }

    /// docs/FORMAT.md, "The encrypted JSON form POST", test vectors (legacy ones checked with `openssl enc`).
    static let vectors: [(scheme: SealScheme, bare: String, field: String)] = [
        (
            .legacyCBC, "gEKuQTSj76vPwOIyZZucsge1R43r/unAFzz0aZLVxL4=",
            "data=gEKuQTSj76vPwOIyZZucsge1R43r%2FunAFzz0aZLVxL4%3D"
        ),
        (
            .legacyECB, "8U7cepTZ8ryDOsBFQllu0h/IwIB874CsV9BMK/FGOr0=",
            "data=8U7cepTZ8ryDOsBFQllu0h%2FIwIB874CsV9BMK%2FFGOr0%3D"
        ),
        (
            .streamGCM,
            "QVRTRwE0AzVlAbMna7PWpNwcbGN9X7g5nSKDm+LzzdItMiZ5YvPt4j4z+8L/wxtMihURTZNW/vkGONgvCRh2NwQTbFGxCZ7Zdfs8/0vuPXdnSnw75IiDOG6KashruniS91Gkvw==",
            "data=QVRTRwE0AzVlAbMna7PWpNwcbGN9X7g5nSKDm%2BLzzdItMiZ5YvPt4j4z%2B8L%2FwxtMihURTZNW%2FvkGONgvCRh2NwQTbFGxCZ7Zdfs8%2F0vuPXdnSnw75IiDOG6KashruniS91Gkvw%3D%3D"
        ),
    ]

    static func form(_ scheme: SealScheme, field: String? = nil) throws -> SealedJSONForm {
        scheme == .streamGCM
            ? SealedJSONForm(scheme: scheme, key: gcmKey, field: field, material: try gcmMaterial())
            : SealedJSONForm(scheme: scheme, key: passphrase, field: field)
    }

    @Test(arguments: [SealScheme.legacyCBC, .legacyECB, .streamGCM])
    func producesTheDocumentedVectors(_ scheme: SealScheme) throws {
        let vector = try #require(Self.vectors.first { $0.scheme == scheme })
        let bare = try Self.form(scheme).body(jsonBytes: Self.json)
        #expect(String(decoding: bare.inMemoryBytes ?? [], as: UTF8.self) == vector.bare)
        #expect(bare.contentType == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(bare.isSensitive)
        let field = try Self.form(scheme, field: "data").body(jsonBytes: Self.json)
        #expect(String(decoding: field.inMemoryBytes ?? [], as: UTF8.self) == vector.field)
        // Both layouts open with or without the field name configured.
        for body in [vector.bare, vector.field] {
            #expect(try Self.form(scheme).open(Array(body.utf8)) == Self.json)
            #expect(try Self.form(scheme, field: "data").open(Array(body.utf8)) == Self.json)
        }
    }

    @Test func streamGCMDrawsFreshHeaderValuesWithoutMaterial() throws {
        let form = SealedJSONForm(scheme: .streamGCM, key: Self.gcmKey)
        let a = try form.body(json: .object(["a": .number(1)])).inMemoryBytes
        let b = try form.body(json: .object(["a": .number(1)])).inMemoryBytes
        #expect(a != b)
        #expect(try form.openJSON(a ?? []) == .object(["a": .number(1)]))
        #expect(try form.openJSON(b ?? []) == .object(["a": .number(1)]))
    }

    struct Message: Encodable { let userId: Int; let text: String }

    @Test func encodablesAreSealedAsSortedJSON() throws {
        let form = try Self.form(.legacyCBC)
        let body = try form.body(encoding: Message(userId: 7, text: "hi"))
        #expect(String(decoding: body.inMemoryBytes ?? [], as: UTF8.self) == Self.vectors[0].bare)
    }

    @Test func opensBodiesAsOldServersWriteThem() throws {
        let form = try Self.form(.legacyCBC)
        let bare = Self.vectors[0].bare
        // Line-wrapped base64 with CRLF, surrounding white space, an unescaped `+`/`/` in a field, other
        // fields around it.
        let wrapped = String(bare.prefix(20)) + "\r\n" + String(bare.dropFirst(20)) + "\r\n"
        #expect(try form.open(Array(wrapped.utf8)) == Self.json)
        let withOthers = "sign=abc&data=\(bare)&ts=1"
        #expect(try Self.form(.legacyCBC, field: "data").open(Array(withOthers.utf8)) == Self.json)
        let error = #expect(throws: AttacheError.self) { try form.open(Array(withOthers.utf8)) }
        #expect(error?.code == .corruptInput)
        let missing = #expect(throws: AttacheError.self) {
            try Self.form(.legacyCBC, field: "payload").open(Array(Self.vectors[0].field.utf8))
        }
        #expect(missing?.code == .corruptInput)
        #expect(SealedJSONForm.formFieldName(in: Array(Self.vectors[0].field.utf8)) == "data")
        #expect(SealedJSONForm.formFieldName(in: Array(bare.utf8)) == nil)
    }

    @Test func aWrongLegacyKeyOrDamagedTextIsAnError() throws {
        let wrong = SealedJSONForm(scheme: .legacyCBC, key: AttachmentKey(passphrase: "another passphrase"))
        // A wrong legacy key shows as bad padding or, by chance, as bytes that are not JSON.
        #expect(throws: AttacheError.self) { try wrong.openJSON(Array(Self.vectors[0].bare.utf8)) }
        let notBase64 = #expect(throws: AttacheError.self) { try Self.form(.legacyCBC).open(Array("%%%".utf8)) }
        #expect(notBase64?.stage == .seal)
        let cut = #expect(throws: AttacheError.self) {
            try Self.form(.legacyCBC).open(Array(Self.vectors[0].bare.prefix(20).utf8))
        }
        #expect(cut?.stage == .seal)
    }

    @Test func streamGCMRejectsTamperingAndAWrongKey() throws {
        var sealed = try Base64.decode(Self.vectors[2].bare)
        sealed[70] ^= 1
        let tampered = Array(Base64.encode(sealed).utf8)
        let error = #expect(throws: AttacheError.self) { try Self.form(.streamGCM).open(tampered) }
        #expect(error?.code == .authenticationFailed)
        let wrongKey = SealedJSONForm(scheme: .streamGCM, key: AttachmentKey(bytes: SecureBytes(randomCount: 32)))
        let keyError = #expect(throws: AttacheError.self) { try wrongKey.open(Array(Self.vectors[2].bare.utf8)) }
        #expect(keyError?.code == .invalidKey)
    }

    @Test func refusesSchemesTheFormDoesNotUse() {
        for scheme in [SealScheme.signal, .none] {
            let form = SealedJSONForm(scheme: scheme, key: Self.gcmKey)
            let error = #expect(throws: AttacheError.self) { try form.body(json: .null) }
            #expect(error?.code == .invalidArgument)
        }
    }

    @Test func theDecryptedAnswerMustBeJSON() throws {
        let form = try Self.form(.legacyECB)
        let text = try form.sealedText(Array("not json".utf8))
        let error = #expect(throws: AttacheError.self) { try form.openJSON(text) }
        #expect(error?.code == .badResponse)
    }
}
