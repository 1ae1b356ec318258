import Attache
import Foundation

/// Opens sealed uploads with the server's key and checks them, for `--key-file`.
///
/// The pipeline describes a sealed part with the form fields `scheme`, `encoding` and `plaintextSize`
/// (and a client may add `digest`, the lowercase hex SHA-256 of a `signal` blob). Every file part of
/// such an upload is decrypted as a stream into a SHA-256: authenticated schemes verify their tags
/// (`stream-gcm`: every segment; `signal`: the HMAC, then the digest when one was sent), the primary
/// part's plaintext length must equal `plaintextSize`. Nothing decrypted is written to disk: the
/// store keeps the sealed bytes as received (the server relays attachments it should not be able to
/// read in production), and the receipt reports what was verified.
struct SealVerifier: Sendable {
    /// The key as raw key bytes (`stream-gcm`, `signal`), when the file holds one.
    let key: AttachmentKey?
    /// The same file read as a passphrase (`legacy-*`).
    let passphrase: AttachmentKey?

    /// Reads the key file once, in both forms, so a bad file is reported at start-up.
    /// - Throws: ``AttacheError`` when the file can be read in neither form.
    init(keyFile path: String) throws {
        var firstError: AttacheError?
        do {
            key = try AttachmentKey(contentsOfFile: path)
        } catch let error as AttacheError {
            key = nil
            firstError = error
        }
        passphrase = try? AttachmentKey(passphraseFile: path)
        if key == nil, passphrase == nil, let firstError { throw firstError }
    }

    /// What a verified part looked like.
    struct Result: Sendable {
        var plaintextSize: Int64
        var plaintextSha256: String
        /// `signal` only: SHA-256 of the blob (after undoing the transfer encoding).
        var digest: String?
    }

    /// Why an upload failed verification; answered with 422.
    struct Failure: Error, Sendable {
        var message: String
        var code: String
    }

    /// The seal description in an upload's fields, or nil when the upload says it is not sealed.
    /// - Throws: ``Failure`` when the fields are present but unusable.
    static func description(of parts: [SpooledPart]) throws -> (scheme: SealScheme, encoding: TransferEncoding, plaintextSize: Int64?, digest: String?)? {
        func field(_ name: String) -> String? { parts.first { !$0.isFile && $0.name == name }?.value }
        guard let schemeName = field("scheme") else { return nil }
        guard let scheme = SealScheme(rawValue: schemeName) else {
            throw Failure(message: "unknown seal scheme '\(schemeName)'", code: "invalid-argument")
        }
        let encodingName = field("encoding") ?? TransferEncoding.binary.rawValue
        guard let encoding = TransferEncoding(rawValue: encodingName) else {
            throw Failure(message: "unknown transfer encoding '\(encodingName)'", code: "invalid-argument")
        }
        var plaintextSize: Int64?
        if let text = field("plaintextSize") {
            guard let value = Int64(text), value >= 0 else {
                throw Failure(message: "plaintextSize is not a byte count", code: "invalid-argument")
            }
            plaintextSize = value
        }
        if scheme == .none, encoding == .binary { return nil }
        // A matrix upload's IV and hash travel in the chat message, not in the form: nothing to check here.
        if scheme == .matrix { return nil }
        return (scheme, encoding, plaintextSize, field("digest")?.lowercased())
    }

    /// Decrypts and checks one spooled part. Blocking: call through `BlockingPool`.
    /// - Throws: ``Failure`` naming what did not verify.
    func verify(
        part: SpooledPart, scheme: SealScheme, encoding: TransferEncoding, expectedPlaintextSize: Int64?,
        expectedDigest: String?
    ) throws -> Result {
        guard let path = part.temporaryPath else { throw Failure(message: "no spooled body", code: "internal-error") }
        let chosen = scheme.usesPassphrase ? passphrase : (scheme == .none ? passphrase ?? key : key)
        guard let chosen else {
            throw Failure(message: "the server's key file does not hold a key for \(scheme)", code: "invalid-key")
        }
        do {
            let sealed = try FileSource(path: path)
            var digest: String?
            if scheme == .signal {
                // The digest covers the blob itself, so undo only the transfer encoding and hash that.
                let blob = try Unsealer(scheme: .none, key: chosen, transferEncoding: encoding).unseal(sealed)
                let (_, hash) = try SHA256Hasher.hexAndCount(of: blob)
                if let expectedDigest, expectedDigest != hash {
                    throw Failure(message: "the signal digest does not match the received blob", code: "digest-mismatch")
                }
                digest = hash
            }
            let unsealer = Unsealer(
                scheme: scheme, key: chosen, transferEncoding: encoding, plaintextByteCount: expectedPlaintextSize)
            let (count, hash) = try SHA256Hasher.hexAndCount(of: try unsealer.unseal(sealed))
            if let expectedPlaintextSize, count != expectedPlaintextSize {
                throw Failure(
                    message: "the plaintext has \(count) bytes, the form says \(expectedPlaintextSize)",
                    code: "plaintext-size-mismatch")
            }
            return Result(plaintextSize: count, plaintextSha256: hash, digest: digest)
        } catch let error as AttacheError {
            // The message describes the sealed data (never key or plaintext bytes); the file path
            // would be the spool's, which means nothing to the client, so it is left out.
            throw Failure(message: error.message, code: error.code.rawValue)
        }
    }
}

extension SealVerifier {
    /// Verifies every file part of a sealed upload; returns their checks by spool path (empty when
    /// the upload says it is not sealed). Blocking: call through `BlockingPool`.
    /// - Throws: ``Failure`` for the first part that does not verify.
    func check(_ parts: [SpooledPart]) throws -> [String: UploadReceipt.SealCheck] {
        guard let seal = try Self.description(of: parts) else { return [:] }
        let files = parts.filter(\.isFile)
        // The same rule as the store's: the part named `file`, else the first file part. Only its
        // plaintext length is in the form; thumbnails are sealed with the same key but other lengths.
        let primary = files.first { $0.name == "file" } ?? files.first
        var checks: [String: UploadReceipt.SealCheck] = [:]
        for part in files {
            let isPrimary = part.temporaryPath == primary?.temporaryPath
            let result = try verify(
                part: part, scheme: seal.scheme, encoding: seal.encoding,
                expectedPlaintextSize: isPrimary ? seal.plaintextSize : nil,
                expectedDigest: isPrimary ? seal.digest : nil)
            checks[part.temporaryPath ?? ""] = UploadReceipt.SealCheck(
                scheme: seal.scheme.rawValue, encoding: seal.encoding.rawValue, verified: true,
                plaintextSize: result.plaintextSize, plaintextSha256: result.plaintextSha256, digest: result.digest)
        }
        return checks
    }
}
