import ArgumentParser
import Attache
import Foundation
import Testing
@testable import AttacheCLI

/// Commands parsed by the root command and run in this process, as `attache` runs them.
@Suite struct InProcessCommandTests {
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func run(_ arguments: [String]) async throws {
        var command = try #require(try RootCommand.parseAsRoot(arguments) as? any AsyncParsableCommand)
        try await command.run()
    }

    @Test(arguments: [SealScheme.streamGCM, .signal, .legacyCBC])
    func encryptThenDecryptGivesTheFileBack(_ scheme: SealScheme) async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let plain = folder.appendingPathComponent("plain.bin").path
        let bytes = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 7) })
        try bytes.write(to: URL(fileURLWithPath: plain))
        let key = folder.appendingPathComponent("key").path, sealed = folder.appendingPathComponent("sealed").path
        let opened = folder.appendingPathComponent("opened").path

        try await Self.run(["encrypt", plain, "-o", sealed, "--key-file", key, "--new-key", "--scheme", scheme.rawValue])
        // Signal pads to a bucket size: the receiver strips the padding with the length it was told.
        let length = scheme == .signal ? ["--plaintext-length", "\(bytes.count)"] : []
        try await Self.run(["decrypt", sealed, "-o", opened, "--key-file", key, "--scheme", scheme.rawValue] + length)
        #expect(try Data(contentsOf: URL(fileURLWithPath: opened)) == bytes)
        #expect(try Data(contentsOf: URL(fileURLWithPath: sealed)) != bytes)
    }

    @Test func aWrongKeyEndsWithTheStatusOfItsCode() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let plain = folder.appendingPathComponent("plain.bin").path
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: plain))
        let key = folder.appendingPathComponent("key").path, other = folder.appendingPathComponent("other").path
        let sealed = folder.appendingPathComponent("sealed").path
        try await Self.run(["encrypt", plain, "-o", sealed, "--key-file", key, "--new-key"])
        try await Self.run(["encrypt", plain, "-o", sealed + "2", "--key-file", other, "--new-key"])
        do {
            try await Self.run(["decrypt", sealed, "-o", folder.appendingPathComponent("opened").path, "--key-file", other])
            Issue.record("decrypted with the wrong key")
        } catch {
            // authentication-failed: 65 (docs/EXIT-STATUS.md).
            #expect(RootCommand.exitCode(for: error).rawValue == 65)
        }
    }

    /// A `--from` list entry's own key wins over the flags', and the flags' over the endpoint's, each as a
    /// pair (a flag's --key-env is not mixed with the endpoint's key-file).
    @Test func aDownloadsKeyComesFromTheEntryThenTheFlagsThenTheEndpoint() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let keys = try ["entry", "flag", "endpoint"].map { name in
            let path = folder.appendingPathComponent(name).path
            let key = AttachmentKey.random(for: .streamGCM)
            try key.write(toNewFile: path)
            return (path, key.base64)
        }
        var endpoint = Endpoint(name: "files")
        endpoint.seal = .init(scheme: .signal, keyFile: keys[2].0, base64: true)

        let flags = try DownloadKeyOptions.parse(["--key-file", keys[1].0, "--scheme", "stream-gcm"])
        let fromEntry = try #require(try flags.unsealing(endpoint: endpoint, entryKeyFile: keys[0].0))
        #expect(fromEntry.key.base64 == keys[0].1)
        #expect(fromEntry.scheme == .streamGCM)
        #expect(fromEntry.transferEncoding == .base64)
        let fromFlags = try #require(try flags.unsealing(endpoint: endpoint))
        #expect(fromFlags.key.base64 == keys[1].1)

        let none = try DownloadKeyOptions.parse([])
        #expect(try #require(try none.unsealing(endpoint: endpoint)).key.base64 == keys[2].1)
        #expect(try none.unsealing(endpoint: .none) == nil)

        #expect(throws: (any Error).self) { try DownloadKeyOptions.parse(["--key-file", "a", "--key-env", "B"]) }
    }
}
