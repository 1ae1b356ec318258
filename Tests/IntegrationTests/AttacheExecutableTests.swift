import Foundation
import AttacheTestSupport
import Testing

/// The built `attache` executable, run as a user runs it: one executable for every command, its help,
/// its usage errors and the portable code paths.
@Suite("attache executable")
struct AttacheExecutableTests {
    func samples() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples")
    }

    @Test func detectReportsTheContentType() async throws {
        let child = try ChildProcess(
            executable: try attacheBinary(),
            arguments: ["detect", "--json", samples().appendingPathComponent("photo.jpg").path])
        #expect(try await child.wait(upTo: 30) == 0)
        let line = try JSONSerialization.jsonObject(with: Data(child.standardOutput.utf8)) as? [String: Any]
        #expect(line?["mime"] as? String == "image/jpeg")
        #expect(line?["kind"] as? String == "image")
    }

    /// File names are bytes: a name that is not UTF-8 given on the command line names that very file.
    @Test func aFileNameThatIsNotUTF8IsFoundByItsBytes() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-bytes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The shell makes the name (caf, then the Latin-1 byte 0xE9) and passes its bytes as they are.
        let script = """
            cd "$1" && name=$(printf 'caf\\351.jpg') && cp "$2" "$name" \
              && "$0" detect --json "$name" && "$0" encrypt "$name" -o "$name.sealed" --key-file key --new-key \
              && "$0" decrypt "$name.sealed" -o "$name.opened" --key-file key && cmp "$name" "$name.opened"
            """
        let child = try ChildProcess(
            executable: "/bin/sh",
            arguments: ["-c", script, try attacheBinary(), folder.path, samples().appendingPathComponent("photo.jpg").path])
        #expect(try await child.wait(upTo: 60) == 0, "\(child.standardError)")
        #expect(child.standardOutput.contains("\"mime\":\"image/jpeg\""))
    }

    @Test func helpListsEveryCommandAndTheVersionIsPrinted() async throws {
        let help = try ChildProcess(executable: try attacheBinary(), arguments: ["upload", "--help"])
        #expect(try await help.wait(upTo: 30) == 0)
        #expect(help.standardOutput.contains("USAGE: attache upload"))

        let top = try ChildProcess(executable: try attacheBinary(), arguments: ["--help"])
        #expect(try await top.wait(upTo: 30) == 0)
        for command in ["upload", "batch", "enqueue", "worker", "queue", "detect", "recompress", "download", "request",
                        "encrypt", "decrypt"] {
            #expect(top.standardOutput.contains("  \(command) "), "`attache --help` lists \(command)")
        }

        let version = try ChildProcess(executable: try attacheBinary(), arguments: ["--version"])
        #expect(try await version.wait(upTo: 30) == 0)
        #expect(!version.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
    }

    @Test func encryptAndDecryptRoundTrip() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-front-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plain = folder.appendingPathComponent("plain.bin")
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        try Data(bytes).write(to: plain)
        let key = folder.appendingPathComponent("key").path
        let sealed = folder.appendingPathComponent("sealed").path
        let opened = folder.appendingPathComponent("opened").path

        let encrypt = try ChildProcess(
            executable: try attacheBinary(),
            arguments: ["encrypt", plain.path, "-o", sealed, "--key-file", key, "--new-key"])
        #expect(try await encrypt.wait(upTo: 30) == 0, "\(encrypt.standardError)")
        let decrypt = try ChildProcess(
            executable: try attacheBinary(), arguments: ["decrypt", sealed, "-o", opened, "--key-file", key])
        #expect(try await decrypt.wait(upTo: 30) == 0, "\(decrypt.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: opened)) == Data(bytes))
        #expect(try Data(contentsOf: URL(fileURLWithPath: sealed)) != Data(bytes))
    }

    /// Usage errors of `upload` and `request` exit 64 with the usage line and the pointer to help naming the
    /// tool; a file that cannot be read exits 66.
    @Test func usageErrorsNameTheToolAndExitWithTheirStatus() async throws {
        let cases: [([String], Int32)] = [
            (["request", "--bogus", "http://127.0.0.1:9/"], 64),
            (["request", "POST"], 64),
            (["request", "http://127.0.0.1:9/", "--json-field"], 64),
            (["request", "-photo.jpg", "http://127.0.0.1:9/"], 64),
            (["upload", "--scheme", "nope", "x"], 64),
            (["upload", "/nonexistent/attache-test-file", "--url", "http://127.0.0.1:9/"], 66),
        ]
        for (arguments, status) in cases {
            let child = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            #expect(try await child.wait(upTo: 30) == status, "\(arguments): \(child.standardError)")
            #expect(child.standardOutput.isEmpty, "\(arguments)")
        }
        // The usage line and the pointer to help name the tool.
        let usage = try ChildProcess(executable: try attacheBinary(), arguments: ["request", "--bogus", "http://127.0.0.1:9/"])
        #expect(try await usage.wait(upTo: 30) == 64)
        #expect(usage.standardError.contains("Usage: attache request "))
        #expect(usage.standardError.contains("See 'attache request --help'"))
        let upload = try ChildProcess(executable: try attacheBinary(), arguments: ["upload", "--bogus", "x"])
        #expect(try await upload.wait(upTo: 30) == 64, "\(upload.standardError)")
        #expect(upload.standardError.contains("Usage: attache upload "))
    }

    /// ATTACHE_NO_SIMD=1 switches off every AVX2 path (6×6 IDCT, resampler loops, base64 encoder): the
    /// portable code a CPU without AVX2 runs must give the same picture and valid base64.
    @Test func thePortableCodePathsGiveTheSameResults() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-nosimd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let photo = samples().appendingPathComponent("photo.jpg").path
        var sizes: [String: Int] = [:]
        for simd in ["0", "1"] {
            let out = folder.path + "/photo-\(simd).jpg"
            let run = try ChildProcess(
                executable: "/usr/bin/env",
                arguments: ["ATTACHE_NO_SIMD=\(simd)", try attacheBinary(), "recompress", photo, "-o", out,
                            "--max-side", "1000", "--json"])
            #expect(try await run.wait(upTo: 60) == 0, "\(run.standardError)")
            #expect(run.standardOutput.contains("\"outputWidth\":750"))
            sizes[simd] = try Data(contentsOf: URL(fileURLWithPath: out)).count
        }
        // Same filter and transform, different rounding order: the JPEGs are the same size within 1 %.
        let vector = try #require(sizes["0"]), portable = try #require(sizes["1"])
        #expect(abs(vector - portable) * 100 <= vector)

        // Base64 from the portable encoder decodes (strictly) with the default build, and back.
        let plain = folder.appendingPathComponent("plain.bin")
        try Data((0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 5) }).write(to: plain)
        let key = folder.path + "/key"
        for (encodeSIMD, decodeSIMD) in [("1", "0"), ("0", "1")] {
            let sealed = folder.path + "/sealed-\(encodeSIMD).b64", opened = folder.path + "/opened-\(encodeSIMD).bin"
            var encryptArguments = ["ATTACHE_NO_SIMD=\(encodeSIMD)", try attacheBinary(), "encrypt", plain.path, "-o", sealed,
                                    "--key-file", key, "--base64"]
            if !FileManager.default.fileExists(atPath: key) { encryptArguments.append("--new-key") }
            let encrypt = try ChildProcess(executable: "/usr/bin/env", arguments: encryptArguments)
            #expect(try await encrypt.wait(upTo: 60) == 0, "\(encrypt.standardError)")
            let decrypt = try ChildProcess(
                executable: "/usr/bin/env",
                arguments: ["ATTACHE_NO_SIMD=\(decodeSIMD)", try attacheBinary(), "decrypt", sealed, "-o", opened,
                            "--key-file", key, "--base64"])
            #expect(try await decrypt.wait(upTo: 60) == 0, "\(decrypt.standardError)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: opened)) == Data(contentsOf: plain))
        }
    }
}
