import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// Bytes `i mod 251`, as in the FORMAT.md vectors.
func modBytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8($0 % 251) } }

func hexBytes(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8)
    func value(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
    return stride(from: 0, to: digits.count, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
}

/// Reads a reader to the end, in small odd-sized reads to exercise the buffering.
func readAll(_ reader: any ByteReader, chunk: Int = 1 << 20) throws -> [UInt8] {
    var out = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: chunk)
    while true {
        let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
        if n == 0 { return out }
        out += buffer[..<n]
    }
}

func rawKey(_ bytes: [UInt8]) -> AttachmentKey { AttachmentKey(bytes: SecureBytes(bytes)) }

func seal(_ plaintext: [UInt8], _ sealer: Sealer) throws -> [UInt8] {
    try readAll(try sealer.seal(DataSource(plaintext)).makeReader())
}

func unseal(_ sealed: [UInt8], _ unsealer: Unsealer) throws -> [UInt8] {
    try readAll(try unsealer.unseal(DataSource(sealed)))
}

/// The code of the `AttacheError` that `body` throws, or nil when it does not throw one.
func sealErrorCode(_ body: () throws -> Void) -> AttacheError.Code? {
    do {
        try body()
        return nil
    } catch let error as AttacheError {
        return error.code
    } catch {
        return nil
    }
}

/// A temporary directory removed when the value is released.
final class TemporaryDirectory {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "attache-seal-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}
