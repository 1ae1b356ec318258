import Foundation

/// A fresh temporary folder, removed by `remove()`.
package struct ScratchFolder: Sendable {
    package let path: String

    /// Creates the folder; `prefix` starts its name, so that a leftover says which tests made it.
    package init(prefix: String = "attache-test") throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `contents` to `name` (intermediate folders created) and returns the full path.
    @discardableResult
    package func write(_ name: String, _ contents: String) throws -> String {
        try write(name, Array(contents.utf8))
    }

    /// Writes `bytes` to `name` (intermediate folders created) and returns the full path.
    @discardableResult
    package func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let full = path + "/" + name
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: full))
        return full
    }

    /// Makes `name` a symbolic link to `target`.
    package func link(_ name: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path + "/" + name, withDestinationPath: target)
    }

    /// Removes the folder and everything in it.
    package func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A file in a fresh temporary directory, deleted with it.
package struct TemporaryFile {
    package let directory: String
    package let path: String

    package init(name: String = "file.bin", bytes: [UInt8]) throws {
        let folder = try ScratchFolder(prefix: "attache-tf")
        directory = folder.path
        path = try folder.write(name, bytes)
    }

    package func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
