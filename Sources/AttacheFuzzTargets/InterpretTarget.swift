import Attache
import Foundation

/// `ResponseInterpreter` (and through it `JSONValue`) over an answer a hostile or broken server could
/// send.
///
/// Input layout: two bytes of status (big-endian, folded into 100–599), one flag byte (0x01: no
/// business error-code member, 0x02: codes `1` and `busy` are retryable, 0x04: the body exceeded the
/// cap, 0x08: the body was cut short, 0x30: the answer profile, 0x40: an id pointer `/result/0/id`), then
/// header lines `Name: value` separated by `\n`, an empty
/// line, and the body.
///
/// Invariant besides "no crash": a receipt survives the JSON round trip the batch journal puts it
/// through (encoded, decoded, equal), so no field the server sent is lost or turned into an error.
enum InterpretTarget {
    static func run(_ bytes: [UInt8]) {
        guard bytes.count >= 3 else { return }
        let status = 100 + (Int(bytes[0]) << 8 | Int(bytes[1])) % 500
        let flags = bytes[2]
        let rest = bytes[3...]
        var headerBytes = rest[...]
        var body = ArraySlice<UInt8>()
        if let blank = blankLine(in: rest) {
            headerBytes = rest[..<blank]
            body = rest[(blank + 2)...]
        }
        var headers: [HeaderField] = []
        for line in headerBytes.split(separator: 0x0A) {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            headers.append(HeaderField(name: name, value: value))
        }
        let profiles: [AnswerProfile] = [.errorCode, .status, .s3Post, .telegram]
        var configuration = ResponseInterpreter.Configuration(profile: profiles[Int(flags >> 4) & 0x03])
        if flags & 0x40 != 0 { configuration.idPointer = JSONPointer(tokens: ["result", "0", "id"]) }
        if flags & 0x01 != 0 { configuration.errorCodeField = nil }
        if flags & 0x02 != 0 { configuration.retryableBusinessCodes = ["1", "busy"] }
        let response = ServerResponse(
            status: status, headers: headers, body: Array(body),
            bodyExceededCap: flags & 0x04 != 0, bodyIncomplete: flags & 0x08 != 0)
        let outcome = ResponseInterpreter(configuration: configuration).interpret(response)
        switch outcome {
        case .success(let receipt):
            _ = receipt.data.description
            let copy: ServerReceipt? = (try? JSONEncoder().encode(receipt)).flatMap {
                try? JSONDecoder().decode(ServerReceipt.self, from: $0)
            }
            invariant(copy == receipt, "a receipt does not survive the JSON round trip: \(receipt.data)")
        case .rejection(let rejection):
            _ = rejection.description
        case .retry(let advice):
            _ = advice.description
        }
    }

    /// The index of the first `\n\n` in `bytes`.
    static func blankLine(in bytes: ArraySlice<UInt8>) -> Int? {
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            if bytes[index] == 0x0A, bytes[index + 1] == 0x0A { return index }
            index += 1
        }
        return nil
    }
}
