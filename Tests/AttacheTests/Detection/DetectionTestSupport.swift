import Foundation
import Testing

@testable import Attache
@testable import AttacheCore

/// A temporary folder holding the corpus files, written once per test process.
enum CorpusFolder {
    static let path: String = {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("attache-detect-\(getpid())-\(UInt64.random(in: 0...UInt64.max))").path
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for file in DetectionCorpus.files {
            let bytes = Data(base64Encoded: file.base64, options: .ignoreUnknownCharacters) ?? Data()
            _ = FileManager.default.createFile(atPath: folder + "/" + file.name, contents: bytes)
        }
        return folder
    }()

    static func file(_ name: String) -> String { path + "/" + name }

    static func bytes(_ name: String) throws -> [UInt8] {
        let file = try #require(DetectionCorpus.files.first { $0.name == name }, "no corpus file \(name)")
        return [UInt8](try #require(Data(base64Encoded: file.base64, options: .ignoreUnknownCharacters)))
    }

    static func detect(_ name: String, declaredKind: MessageKind? = nil, detector: MIMEDetector = MIMEDetector()) throws -> Detection {
        try detector.detect(fileAt: file(name), declaredKind: declaredKind)
    }

    /// Writes `bytes` to a new file named `name` and returns its path.
    static func write(_ bytes: [UInt8], name: String) -> String {
        let target = path + "/" + name
        _ = FileManager.default.createFile(atPath: target, contents: Data(bytes))
        return target
    }
}

/// Builds zip archives with stored entries, so tests control every offset.
struct ZipBuilder {
    private(set) var bytes: [UInt8] = []
    private var directory: [UInt8] = []
    private var count = 0

    private static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    private static func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> ($0 * 8) & 0xFF) } }

    mutating func add(_ name: String, _ data: [UInt8]) {
        let nameBytes = Array(name.utf8)
        let offset = bytes.count
        bytes += [0x50, 0x4B, 0x03, 0x04] + Self.le16(20) + Self.le16(0) + Self.le16(0) + Self.le32(0) + Self.le32(0)
        bytes += Self.le32(data.count) + Self.le32(data.count) + Self.le16(nameBytes.count) + Self.le16(0) + nameBytes + data
        directory += [0x50, 0x4B, 0x01, 0x02] + Self.le16(20) + Self.le16(20) + Self.le16(0) + Self.le16(0) + Self.le32(0)
        directory += Self.le32(0) + Self.le32(data.count) + Self.le32(data.count) + Self.le16(nameBytes.count)
        directory += Self.le16(0) + Self.le16(0) + Self.le16(0) + Self.le16(0) + Self.le32(0) + Self.le32(offset) + nameBytes
        count += 1
    }

    /// The archive with its central directory; `directoryOffset` overrides the recorded offset.
    func finished(directoryOffset: Int? = nil, directorySize: Int? = nil) -> [UInt8] {
        var result = bytes + directory
        result += [0x50, 0x4B, 0x05, 0x06] + Self.le16(0) + Self.le16(0) + Self.le16(count) + Self.le16(count)
        result += Self.le32(directorySize ?? directory.count) + Self.le32(directoryOffset ?? bytes.count) + Self.le16(0)
        return result
    }
}
