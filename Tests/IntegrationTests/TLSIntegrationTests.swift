import Attache
import AttacheServer
import Foundation
import AttacheTestSupport
import Testing

/// TLS against the reference server serving HTTPS with a throwaway self-signed certificate for
/// 127.0.0.1: verification is on unless the certificate is trusted through `caFile`, and a pinned
/// public key must match.
@Suite("TLS verification and pinning")
struct TLSIntegrationTests {
    /// A self-signed certificate for IP 127.0.0.1, its key, and the curl pin of its public key.
    struct Certificate {
        let directory: String
        let files: ReferenceServerConfiguration.TLSFiles
        let pin: String

        init() async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-tls-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let cert = directory + "/cert.pem"
            let key = directory + "/key.pem"
            try await run("openssl", [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                "-keyout", key, "-out", cert,
            ])
            files = .init(certificateChain: cert, privateKey: key)
            let publicKey = try await run("openssl", ["x509", "-in", cert, "-pubkey", "-noout"])
            let der = try await run("openssl", ["pkey", "-pubin", "-outform", "DER"], input: publicKey)
            let digest = try await run("openssl", ["dgst", "-sha256", "-binary"], input: der)
            pin = "sha256//" + digest.base64EncodedString()
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }
    }

    @Test("an untrusted certificate fails at once, without retries")
    func untrustedCertificateIsRefused() async throws {
        let certificate = try await Certificate()
        let file = try TemporaryFile(bytes: [1, 2, 3])
        defer { certificate.remove(); file.remove() }
        try await LiveServer.with(tls: certificate.files) { server in
            let error = await #expect(throws: AttacheError.self) {
                try await server.pipeline().send(Attachment(path: file.path))
            }
            #expect(error?.code == .tlsFailure)
            #expect(error?.isRetryable == false)
        }
    }

    @Test("a private CA given as caFile is trusted")
    func caFileIsTrusted() async throws {
        let certificate = try await Certificate()
        let content = randomBytes(200_000)
        let file = try TemporaryFile(bytes: content)
        defer { certificate.remove(); file.remove() }
        try await LiveServer.with(tls: certificate.files) { server in
            #expect(server.uploadURL.hasPrefix("https://"))
            let receipt = try await server.pipeline { $0.connection.caFile = certificate.files.certificateChain }
                .send(Attachment(path: file.path))
            #expect(receipt.server["sha256"]?.stringValue == (try await sha256Hex(content)))
        }
    }

    @Test("a matching public-key pin passes and a wrong one fails")
    func publicKeyPinning() async throws {
        let certificate = try await Certificate()
        let other = try await Certificate()
        let file = try TemporaryFile(bytes: [9])
        defer { certificate.remove(); other.remove(); file.remove() }
        try await LiveServer.with(tls: certificate.files) { server in
            let receipt = try await server.pipeline {
                $0.connection.caFile = certificate.files.certificateChain
                $0.connection.pinnedPublicKey = certificate.pin
            }.send(Attachment(path: file.path))
            #expect(receipt.fileId != nil)

            let error = await #expect(throws: AttacheError.self) {
                try await server.pipeline {
                    $0.connection.caFile = certificate.files.certificateChain
                    $0.connection.pinnedPublicKey = other.pin
                }.send(Attachment(path: file.path))
            }
            #expect(error?.code == .tlsFailure)
        }
    }
}
