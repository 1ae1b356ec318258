import Attache
import AttacheCore

/// The readers of the request layer over an answer a hostile server could send: the XML property-list
/// reader, and the encrypted JSON form's layout detection, percent-decoding and opening (`legacy-cbc`
/// with a fixed passphrase, `stream-gcm` with a fixed key).
///
/// Invariant besides "no crash": a property list that reads is written back in a form that reads again
/// and is then written identically (writer and reader agree on every value they let through).
enum RequestsTarget {
    static let legacy = SealedJSONForm(scheme: .legacyCBC, key: AttachmentKey(passphrase: "attache-fuzz"))
    static let streamGCM = SealedJSONForm(
        scheme: .streamGCM, key: AttachmentKey(bytes: SecureBytes((0..<32).map { UInt8($0) })), field: "data")

    static func run(_ bytes: [UInt8]) {
        if let value = try? PropertyListValue(xml: bytes) {
            let written = value.xmlBytes()
            guard let again = try? PropertyListValue(xml: written) else {
                invariant(false, "a property list that was read does not read back after writing")
                return
            }
            invariant(again.xmlBytes() == written, "a property list is written differently after a round trip")
        }
        _ = SealedJSONForm.formFieldName(in: bytes)
        _ = try? legacy.openJSON(bytes)
        _ = try? streamGCM.open(bytes)
    }
}
