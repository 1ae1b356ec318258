package import Attache
import FoundationEssentials

/// The receipt plus `"status":"ok"`, as one JSON line.
package struct ReceiptLine: Encodable {
    package let receipt: UploadReceipt
    package init(_ receipt: UploadReceipt) { self.receipt = receipt }

    package func encode(to encoder: any Encoder) throws {
        try receipt.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode("ok", forKey: Key(stringValue: "status")!)
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
