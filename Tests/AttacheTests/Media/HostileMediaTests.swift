import Foundation
import AttacheTestSupport
import Testing
@testable import AttacheCore

@Suite struct HostileMediaTests {
    @Test func truncatedVideoIsRefusedAsCorrupt() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let whole = dir + "/whole.mp4"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=2", "-c:v", "libx264",
                                     "-preset", "ultrafast", whole])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        let cut = dir + "/cut.mp4"
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: cut))
        let error = await #expect(throws: AttacheError.self) {
            try await MediaTools.converter().convertVideo(cut, workDirectory: dir, thumbnailSides: [])
        }
        #expect(error?.code == .corruptInput && error?.stage == .transform && error?.file == cut)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["cut.mp4", "whole.mp4"],
                "nothing left behind")
    }

    @Test func absurdDimensionsAreRefusedBeforeDecoding() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A raw-video header that declares 16000 × 16000 pixels per frame (which FFmpeg itself still
        // accepts), and one tiny frame.
        let path = dir + "/huge.y4m"
        try Data("YUV4MPEG2 W16000 H16000 F25:1 Ip A1:1 C420jpeg\nFRAME\n".utf8 + [UInt8](repeating: 0, count: 4096))
            .write(to: URL(fileURLWithPath: path))
        let error = await #expect(throws: AttacheError.self) {
            try await MediaTools.converter().convertVideo(path, workDirectory: dir, thumbnailSides: [])
        }
        #expect(error?.code == .limitExceeded && error?.file == path)
        #expect(error?.message.contains("16000×16000") == true)
    }

    @Test func tooManyStreamsAndTooLongAreRefused() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/long.mkv"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "anullsrc=sample_rate=8000:duration=4", "-c:a", "pcm_s16le", path])
        let tooLong = await #expect(throws: AttacheError.self) {
            try await MediaTools.converter { $0.maxDuration = 3 }.convertVoice(path, workDirectory: dir)
        }
        #expect(tooLong?.code == .limitExceeded && tooLong?.file == path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["long.mkv"], "nothing left behind")
        let silentVideo = dir + "/silent.mkv"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x64:duration=1", silentVideo])
        let noAudio = await #expect(throws: AttacheError.self) {
            try await MediaTools.converter().convertVoice(silentVideo, workDirectory: dir)
        }
        #expect(noAudio?.code == .corruptInput)
        let many = dir + "/many.mkv"
        try await MediaTools.ffmpeg(["-i", path, "-map", "0:a", "-map", "0:a", "-map", "0:a", "-c", "copy", many])
        let tooMany = await #expect(throws: AttacheError.self) {
            try await MediaTools.converter { $0.maxStreams = 2 }.convertVideo(many, workDirectory: dir, thumbnailSides: [])
        }
        #expect(tooMany?.code == .limitExceeded && tooMany?.message.contains("3 streams") == true)
    }

    @Test func conversionOverTheCPULimitIsStoppedAndReported() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = dir + "/heavy.mkv"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30:duration=6", "-c:v", "libx264",
                                     "-preset", "ultrafast", "-qp", "0", input])
        let converter = MediaTools.converter {
            $0.limits.cpuSeconds = 1
            $0.secondsPerMediaSecond = 0
            $0.video.encoderPreset = "slow"
        }
        let error = await #expect(throws: AttacheError.self) {
            try await converter.convertVideo(input, workDirectory: dir, thumbnailSides: [])
        }
        #expect(error?.code == .limitExceeded && error?.stage == .transform && error?.file == input)
        #expect(error?.message.contains("CPU") == true, "\(error?.message ?? "")")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["heavy.mkv"], "the partial output is removed")
    }

    @Test func longFilesGetTimeInProportionShortOnesTheDefault() {
        let converter = MediaTools.converter()
        #expect(converter.limits(forDuration: 2).cpuSeconds == ProcessLimits.conversion.cpuSeconds)
        #expect(converter.limits(forDuration: 7200).cpuSeconds == 28_800)
        #expect(converter.limits(forDuration: 7200).wallSeconds == 28_800)
        #expect(converter.limits(forDuration: nil).addressSpaceBytes == ProcessLimits.conversion.addressSpaceBytes)
    }

    @Test func runnerEnforcesWallClockMemoryAndReportsCrashes() async throws {
        let hang = try await ProcessRunner.run("/bin/sleep", ["30"], limits: .init(
            cpuSeconds: 10, addressSpaceBytes: 1 << 30, fileSizeBytes: 1 << 20, wallSeconds: 0.3))
        #expect(hang.timedOut && !hang.succeeded && hang.failureReason.contains("wall-clock"))

        let spin = try await ProcessRunner.run("/bin/sh", ["-c", "while :; do :; done"], limits: .init(
            cpuSeconds: 1, addressSpaceBytes: 1 << 30, fileSizeBytes: 1 << 20, wallSeconds: 600))
        #expect(!spin.timedOut && spin.signal != nil && spin.failureReason.contains("CPU"), "\(spin)")

        // ffmpeg catches SIGXCPU (and then exits with status 255): the limit must stop a child that does.
        let caught = try await ProcessRunner.run("/bin/sh", ["-c", "trap 'exit 255' XCPU; while :; do :; done"],
                                                 limits: .init(cpuSeconds: 1, addressSpaceBytes: 1 << 30,
                                                               fileSizeBytes: 1 << 20, wallSeconds: 600))
        #expect(caught.signal == SIGKILL && caught.failureReason.contains("CPU"), "\(caught)")

        let hungry = try await ProcessRunner.run("/usr/bin/python3", ["-c", "x = bytearray(1 << 30)"], limits: .init(
            cpuSeconds: 10, addressSpaceBytes: 256 << 20, fileSizeBytes: 1 << 20, wallSeconds: 60))
        #expect(hungry.exitStatus != 0 && hungry.standardError.contains("MemoryError"))

        let crash = try await ProcessRunner.run("/bin/sh", ["-c", "kill -SEGV $$"], limits: .conversion)
        #expect(crash.signal == SIGSEGV && crash.failureReason.contains("crashed"))

        let missing = #expect(throws: AttacheError.self) {
            try ProcessRunner.run("/nonexistent/ffmpeg", [], limits: .conversion)
        }
        #expect(missing?.code == .nativeLibrary)

        var output = ""
        let echo = try ProcessRunner.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"], limits: .conversion) {
            output += String(decoding: $0, as: UTF8.self)
            return true
        }
        #expect(output == "out\n" && echo.exitStatus == 3 && echo.standardError == "err\n")
    }
}
