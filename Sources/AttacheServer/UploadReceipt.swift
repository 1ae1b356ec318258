import Foundation

/// The JSON answer to a successful `POST /upload`, also stored as `files/<fileId>.json` so that a
/// replay returns the very same bytes and `GET /files/{id}` knows each part's content type.
struct UploadReceipt: Codable, Sendable {
    var errorCode: Int = 0
    var message: String = "ok"
    var data: Payload

    struct Payload: Codable, Sendable {
        /// The primary file: the part named `file`, else the first part with a filename.
        var fileId: String
        var url: String
        var size: Int64
        var sha256: String
        var filename: String
        var contentType: String
        var fields: [String: FieldValue]
        var parts: [Part]
        /// The primary part's verification, when the server has a key and the upload was sealed.
        var sealed: SealCheck? = nil
    }

    struct Part: Codable, Sendable {
        var name: String
        var filename: String
        var contentType: String
        var size: Int64
        var sha256: String
        var fileId: String
        /// This part's verification, when the server has a key and the upload was sealed.
        var sealed: SealCheck? = nil
    }

    /// What the server found when it opened a sealed part with its key (`--key-file`). Only parts
    /// that verified are stored, so `verified` is always true in a stored receipt; `size` and
    /// `sha256` of the part still describe the sealed bytes, which is what the store keeps.
    struct SealCheck: Codable, Sendable {
        var scheme: String
        var encoding: String
        var verified: Bool
        var plaintextSize: Int64
        var plaintextSha256: String
        /// `signal`: SHA-256 of the blob, as Signal's attachment pointer carries it.
        var digest: String?
    }

    /// A text field: one value, or several when the name repeats or ends in `[]`.
    enum FieldValue: Codable, Sendable, Equatable {
        case single(String)
        case multiple([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .single(text)
            } else {
                self = .multiple(try container.decode([String].self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .single(let text): try container.encode(text)
            case .multiple(let texts): try container.encode(texts)
            }
        }
    }

    func encoded() throws -> [UInt8] {
        Array(try ServerJSON.encoder.encode(self))
    }
}

/// JSON encoding shared by every answer: sorted keys so bodies are stable, slashes unescaped so
/// URLs read naturally.
enum ServerJSON {
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// `{"errorCode":code,"message":message}`.
    static func error(code: Int, message: String) -> [UInt8] {
        struct Body: Encodable { var errorCode: Int; var message: String }
        return (try? Array(encoder.encode(Body(errorCode: code, message: message))))
            ?? Array("{\"errorCode\":\(code),\"message\":\"error\"}".utf8)
    }
}
