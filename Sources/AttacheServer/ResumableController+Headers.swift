import Attache
import Foundation
import HTTPTypes
import Glibc

/// The header names of both resumable protocols.
extension HTTPField.Name {
    static let tusResumable = HTTPField.Name("Tus-Resumable")!
    static let tusVersion = HTTPField.Name("Tus-Version")!
    static let tusExtension = HTTPField.Name("Tus-Extension")!
    static let tusMaxSize = HTTPField.Name("Tus-Max-Size")!
    static let tusChecksumAlgorithm = HTTPField.Name("Tus-Checksum-Algorithm")!
    static let uploadLength = HTTPField.Name("Upload-Length")!
    static let uploadDeferLength = HTTPField.Name("Upload-Defer-Length")!
    static let uploadMetadata = HTTPField.Name("Upload-Metadata")!
    static let uploadOffset = HTTPField.Name("Upload-Offset")!
    static let uploadExpires = HTTPField.Name("Upload-Expires")!
    static let uploadChecksum = HTTPField.Name("Upload-Checksum")!
    static let uploadComplete = HTTPField.Name("Upload-Complete")!
    static let uploadLimit = HTTPField.Name("Upload-Limit")!
    static let attacheFileId = HTTPField.Name("Attache-File-Id")!
    static let attacheReceipt = HTTPField.Name("Attache-Receipt")!
}

/// The header values both protocols share: RFC 8941 booleans, tus metadata, HTTP dates.
extension ResumableController {
    /// An RFC 8941 boolean: `?1` or `?0`.
    static func parseBoolean(_ text: String?) -> Bool? {
        switch text?.trimmingCharacters(in: .whitespaces) {
        case "?1": true
        case "?0": false
        default: nil
        }
    }

    /// tus `Upload-Metadata`: `key base64,key base64,key` (a key without a value has the empty value).
    /// nil when malformed; an absent header is no metadata.
    static func decodeMetadata(_ header: String?) -> [[String]]? {
        guard let header, !header.trimmingCharacters(in: .whitespaces).isEmpty else { return [] }
        var pairs: [[String]] = []
        for item in header.split(separator: ",") {
            let pieces = item.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1).map(String.init)
            guard let key = pieces.first, !key.isEmpty, !key.contains(where: { $0 == "," || $0 == " " }) else { return nil }
            if pieces.count == 1 {
                pairs.append([key, ""])
                continue
            }
            guard let bytes = try? Base64.decode(pieces[1].trimmingCharacters(in: .whitespaces)) else { return nil }
            pairs.append([key, String(decoding: bytes, as: UTF8.self)])
        }
        return pairs
    }

    static func encodeMetadata(_ pairs: [[String]]) -> String {
        pairs.filter { $0.count == 2 }.map { $0[0] + " " + Base64.encode(Array($0[1].utf8)) }.joined(separator: ",")
    }

    /// An RFC 9110 IMF-fixdate.
    static func httpDate(_ seconds: Double) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

/// The digests tus `Upload-Checksum` may name here (`Tus-Checksum-Algorithm`).
enum ChecksumHasher {
    static func isSupported(_ algorithm: String) -> Bool { ["sha1", "sha256", "sha512"].contains(algorithm) }
}

extension AppendFaultPlan.Kind {
    /// Whether the fault ends the append by resetting the connection (`drop`, `cut`).
    var resetsConnection: Bool {
        switch self {
        case .drop, .cut: true
        default: false
        }
    }
}
