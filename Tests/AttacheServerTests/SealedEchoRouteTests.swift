import Attache
import AttacheCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
@testable import AttacheServer

/// `POST /echo-sealed` in memory (the live suite sends real requests with the transport).
@Suite("Reference server: encrypted JSON form echo")
struct SealedEchoRouteTests {
    @Test func opensABareLegacyFormAndAnswersItSealedTheSameWay() async throws {
        let store = try TemporaryStore()
        let keyFile = store.path + "/passphrase"
        #expect(FileManager.default.createFile(atPath: keyFile, contents: Data("route passphrase\n".utf8)))
        var configuration = store.configuration()
        configuration.keyFile = keyFile
        let form = SealedJSONForm(scheme: .legacyECB, key: AttachmentKey(passphrase: "route passphrase"))
        let body = try form.body(json: .object(["q": .string("ping")]))
        let app = try await buildApplication(configuration: configuration)
        try await app.test(.router) { client in
            let answer = try await client.execute(
                uri: "/echo-sealed?scheme=legacy-ecb", method: .post,
                headers: [.contentType: SealedJSONForm.contentType], body: ByteBuffer(bytes: body.inMemoryBytes ?? [])
            ) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/x-www-form-urlencoded; charset=utf-8")
                return Array(response.body.readableBytesView)
            }
            #expect(SealedJSONForm.formFieldName(in: answer) == nil)
            #expect(try form.openJSON(answer) == .object(["q": .string("ping")]))

            try await client.execute(
                uri: "/echo-sealed?scheme=legacy-cbc", method: .post, body: ByteBuffer(bytes: body.inMemoryBytes ?? [])
            ) { response in
                // The other legacy scheme reads these bytes as garbage: bad padding, or not JSON.
                #expect(response.status == .badRequest)
            }
        }
    }

    @Test func withoutAKeyTheRouteAnswers501() async throws {
        let store = try TemporaryStore()
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            try await client.execute(uri: "/echo-sealed", method: .post, body: ByteBuffer(string: "abc=")) { response in
                #expect(response.status == .notImplemented)
                let json = try JSONValue.parse(Array(response.body.readableBytesView))
                #expect(json["message"]?.stringValue?.contains("--key-file") == true)
            }
        }
    }
}
