import Foundation
import AttacheTestSupport
import Testing

/// The `attache` executable runs detect, recompress, encrypt and decrypt itself and hands everything
/// else to `attache-pipeline`; these tests run the built executables as a user would.
@Suite("attache front executable")
struct FrontExecutableTests {
    func samples() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples")
    }

    @Test func detectRunsInTheFrontAndReportsTheContentType() async throws {
        let child = try ChildProcess(
            executable: try attacheBinary(),
            arguments: ["detect", "--json", samples().appendingPathComponent("photo.jpg").path])
        #expect(try await child.wait(upTo: 30) == 0)
        let line = try JSONSerialization.jsonObject(with: Data(child.standardOutput.utf8)) as? [String: Any]
        #expect(line?["mime"] as? String == "image/jpeg")
        #expect(line?["kind"] as? String == "image")
    }

    @Test func otherCommandsAreHandedToThePipelineExecutable() async throws {
        let help = try ChildProcess(executable: try attacheBinary(), arguments: ["upload", "--help"])
        #expect(try await help.wait(upTo: 30) == 0)
        // attache-transfer runs `upload`; its usage line still names the tool `attache`.
        #expect(help.standardOutput.contains("USAGE: attache upload"))

        let top = try ChildProcess(executable: try attacheBinary(), arguments: ["--help"])
        #expect(try await top.wait(upTo: 30) == 0)
        for command in ["upload", "batch", "detect", "recompress", "encrypt", "decrypt"] {
            #expect(top.standardOutput.contains("  \(command) "), "`attache --help` lists \(command)")
        }
    }

    @Test func encryptAndDecryptRoundTripThroughTheFront() async throws {
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

    @Test func aMissingPipelineExecutableIsReportedNotHidden() async throws {
        // A copy of the front alone in a folder, with no attache-pipeline next to it or on PATH.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-alone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let lonely = folder.appendingPathComponent("attache").path
        try FileManager.default.copyItem(atPath: try attacheBinary(), toPath: lonely)

        let child = try ChildProcess(executable: "/usr/bin/env", arguments: ["PATH=\(folder.path)", lonely, "batch", "x"])
        #expect(try await child.wait(upTo: 30) == 69)
        #expect(child.standardError.contains("cannot start attache-pipeline"))
        #expect(child.standardError.contains(folder.path + "/attache-pipeline"))
        // `download` (its journal is SQLite) goes to attache-pipeline too.
        let download = try ChildProcess(executable: "/usr/bin/env", arguments: ["PATH=\(folder.path)", lonely, "download", "x"])
        #expect(try await download.wait(upTo: 30) == 69)
        #expect(download.standardError.contains("cannot start attache-pipeline"))
        // `upload` (and `request`) go to attache-transfer.
        let upload = try ChildProcess(executable: "/usr/bin/env", arguments: ["PATH=\(folder.path)", lonely, "upload", "x"])
        #expect(try await upload.wait(upTo: 30) == 69)
        #expect(upload.standardError.contains("cannot start attache-transfer, which runs `attache upload`"))

        // The front's own commands still work without it.
        let detect = try ChildProcess(executable: lonely, arguments: ["detect", lonely])
        #expect(try await detect.wait(upTo: 30) == 0)
        #expect(detect.standardOutput.contains(": application/x-executable (file)"))
        let recompress = try ChildProcess(
            executable: lonely,
            arguments: ["recompress", samples().appendingPathComponent("photo.jpg").path, "-o", folder.path + "/small.jpg",
                        "--max-side", "320", "--json"])
        #expect(try await recompress.wait(upTo: 60) == 0, "\(recompress.standardError)")
        #expect(recompress.standardOutput.contains("\"outputWidth\":240"))
    }

    /// `attache-transfer` parses `upload` and `request` as their own root command, and loads libcurl on a
    /// second thread meanwhile: the usage text and exit status must be the command tree's (as
    /// `attache-pipeline` gives them), and a usage error that exits while libcurl is still loading must
    /// exit cleanly, every time.
    @Test func transferCommandsParsedOnTheirOwnGiveTheTreesErrors() async throws {
        let pipeline = URL(fileURLWithPath: try attacheBinary()).deletingLastPathComponent().appendingPathComponent("attache-pipeline").path
        let cases: [([String], Int32)] = [
            (["request", "--bogus", "http://127.0.0.1:9/"], 64),
            (["request", "POST"], 64),
            (["request", "http://127.0.0.1:9/", "--json-field"], 64),
            (["request", "-photo.jpg", "http://127.0.0.1:9/"], 64),
            (["upload", "--scheme", "nope", "x"], 64),
            (["upload", "/nonexistent/attache-test-file", "--url", "http://127.0.0.1:9/"], 66),
        ]
        for (arguments, status) in cases {
            let direct = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            let tree = try ChildProcess(executable: pipeline, arguments: arguments)
            #expect(try await direct.wait(upTo: 30) == status, "\(arguments): \(direct.standardError)")
            #expect(try await tree.wait(upTo: 30) == status, "\(arguments): \(tree.standardError)")
            #expect(direct.standardError == tree.standardError, "\(arguments)")
            #expect(direct.standardOutput == tree.standardOutput, "\(arguments)")
        }
        // The usage line and the pointer to help name the tool, as the tree's do.
        let usage = try ChildProcess(executable: try attacheBinary(), arguments: ["request", "--bogus", "http://127.0.0.1:9/"])
        #expect(try await usage.wait(upTo: 30) == 64)
        #expect(usage.standardError.contains("Usage: attache request "))
        #expect(usage.standardError.contains("See 'attache request --help'"))
        // Exits racing the background load of libcurl: each one a clean 64, never a signal.
        for _ in 0..<20 {
            let child = try ChildProcess(executable: try attacheBinary(), arguments: ["upload", "--bogus", "x"])
            #expect(try await child.wait(upTo: 30) == 64, "\(child.standardError)")
        }
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
