import Attache
import AttacheTestSupport
import Foundation
import Testing
@testable import AttacheCore

/// Media never gets worse: no output is larger than its source unless the receipt says why, every output
/// meets Telegram's caps, and a compliant source goes byte for byte.
@Suite("Media never gets worse", .serialized)
struct MediaNeverLargerTests {
    struct Clip: Sendable, CustomStringConvertible {
        var width: Int
        var height: Int
        var rotation: Int
        var frameRate: Int
        var bitRate: Int
        var description: String { "\(width)x\(height)@\(frameRate) r\(rotation) \(bitRate / 1000) kbps" }
    }

    /// 20 phone-style clips, 150 kbps to 8 Mbps in equal steps of ratio: 240p to 720p, some shown rotated,
    /// a few at 60 fps, stereo AAC, the index last as phones write it. One second each, so that the whole
    /// set takes about a minute on two busy cores.
    static let clips: [Clip] = (0..<20).map { index in
        let sizes = [(426, 240), (640, 360), (854, 480), (1280, 720)]
        let (width, height) = sizes[index % 4]
        let rate = 150_000 * pow(8_000_000.0 / 150_000.0, Double(index) / 19)
        return Clip(width: width, height: height, rotation: index % 3 == 0 ? 90 : 0,
                    frameRate: index % 5 == 4 ? 60 : 30, bitRate: Int(rate.rounded()))
    }

    /// Makes `clip` as a phone would: H.264 at a constant `bitRate` (x264's CBR with filler, so the rate is
    /// what was asked for), noise over a test pattern so that the bits are needed, stereo AAC at 128 kb/s.
    static func make(_ clip: Clip, in dir: String, name: String) async throws -> String {
        let plain = dir + "/\(name)-plain.mp4"
        let path = dir + "/\(name).mp4"
        let rate = String(clip.bitRate)
        try await MediaTools.ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=\(clip.width)x\(clip.height):rate=\(clip.frameRate):duration=1",
            "-f", "lavfi", "-i", "aevalsrc=0.2*sin(300*2*PI*t)|0.2*sin(450*2*PI*t):s=48000:d=1",
            "-vf", "noise=alls=12:allf=t", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
            "-b:v", rate, "-minrate", rate, "-maxrate", rate, "-bufsize", rate, "-x264-params", "nal-hrd=cbr",
            "-c:a", "aac", "-b:a", "128k", "-ac", "2", plain,
        ])
        // A stream copy writes the display matrix (ffmpeg 5.1) and leaves the index last.
        try await MediaTools.ffmpeg(["-i", plain, "-c", "copy"]
            + (clip.rotation == 0 ? [] : ["-metadata:s:v:0", "rotate=\(clip.rotation)"]) + [path])
        try FileManager.default.removeItem(atPath: plain)
        return path
    }

    static func size(_ path: String) throws -> Int64 {
        Int64(try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int))
    }

    /// Checks the file at `path` against Telegram's caps for a streamable video: H.264 (High, Main or
    /// Baseline, 4:2:0) and AAC-LC in MP4 with the index first, long side ≤ 1280, frame rate and video bit
    /// rate within the caps for its short side, audio ≤ 128 kb/s and ≤ 2 channels.
    static func expectWithinCaps(_ path: String, _ label: String) async throws {
        let probe = try await MediaTools.probe(path)
        let video = try #require(probe.streams.first { $0["codec_type"] == "video" }, "\(label): no video")
        #expect(video["codec_name"] == "h264" && video["pix_fmt"] == "yuv420p", "\(label)")
        #expect(["High", "Main", "Baseline", "Constrained Baseline"].contains(video["profile"] ?? ""), "\(label)")
        let width = try #require(Int(video["width"] ?? "")), height = try #require(Int(video["height"] ?? ""))
        let rotated = (Int(video["side_data.rotation"] ?? "0") ?? 0) % 180 != 0
        let (shown, shownShort) = (max(width, height), rotated ? width : min(width, height))
        #expect(shown <= 1280, "\(label): \(width)×\(height)")
        let short = min(width, height)
        let frameParts = (video["avg_frame_rate"] ?? "0/1").split(separator: "/").compactMap { Double($0) }
        let frameRate = frameParts.count == 2 && frameParts[1] > 0 ? frameParts[0] / frameParts[1] : 0
        #expect(frameRate <= (short <= 480 ? 30.01 : 60.01), "\(label): \(frameRate) fps")
        let cap = VideoOptions.bitRateCap(shortSide: short)
        let videoRate = try #require(Int(video["bit_rate"] ?? ""), "\(label): no video bit rate")
        #expect(videoRate <= cap, "\(label): video \(videoRate) b/s over the cap \(cap) (short side \(shownShort))")
        for audio in probe.streams where audio["codec_type"] == "audio" {
            #expect(audio["codec_name"] == "aac" && audio["profile"] == "LC", "\(label)")
            #expect((Int(audio["bit_rate"] ?? "") ?? .max) <= 128_000 + 8_000, "\(label): audio rate")
            #expect((Int(audio["channels"] ?? "") ?? 3) <= 2, "\(label)")
        }
        let boxes = try MediaTools.topLevelBoxes(path)
        let moov = try #require(boxes.firstIndex(of: "moov")), mdat = try #require(boxes.firstIndex(of: "mdat"))
        #expect(moov < mdat, "\(label): index first, \(boxes)")
    }

    @Test("20 phone-style videos at 150 kbps to 8 Mbps: none larger than its source without a reason, all within the caps")
    func phoneVideos() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let converter = MediaTools.converter()
        var grew: [String] = []
        for (index, clip) in Self.clips.enumerated() {
            let source = try await Self.make(clip, in: dir, name: "clip\(index)")
            let work = dir + "/work\(index)"
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            let result = try await converter.convertVideo(source, workDirectory: work, thumbnailSides: [])
            let output = result.path ?? source
            let (sent, original) = (try Self.size(output), try Self.size(source))
            let reason = try #require(result.reason, "\(clip): every path says why")
            if sent > original {
                #expect(reason.contains("larger than the source"), "\(clip): \(sent) > \(original) B without a reason: \(reason)")
                grew.append("\(clip): \(reason)")
            }
            try await Self.expectWithinCaps(output, "\(clip) [\(result.plan)] \(reason)")
            // The encode had at most the source's own video rate to spend.
            if result.plan == .encode, let path = result.path {
                let video = try #require(try await MediaTools.probe(path).streams.first { $0["codec_type"] == "video" })
                #expect((Int(video["bit_rate"] ?? "") ?? .max) <= clip.bitRate, "\(clip): above the source's rate")
            }
            try? FileManager.default.removeItem(atPath: work)
            try? FileManager.default.removeItem(atPath: source)
        }
        // Every clip here breaks no rule an encode at its own rate cannot meet: none should have grown.
        #expect(grew.isEmpty, "\(grew)")
    }

    @Test("Samples/phone.mp4 no longer grows; every Samples video goes within the caps, compliant ones byte for byte")
    func sampleVideos() async throws {
        let samples = MusicIsNotVoiceTests.samples
        try await LiveServer.with { server in
            let pipeline = try server.pipeline()
            for name in ["phone.mp4", "clip.mp4", "late-index.mp4", "animation.gif"] {
                let path = samples + "/" + name
                let receipt = try await pipeline.send(Attachment(path: path))
                let reason = try #require(receipt.transform.reason, "\(name): the receipt says why")
                let media = try #require(receipt.transform.media, "\(name)")
                if receipt.sentByteCount > receipt.originalByteCount {
                    #expect(reason.contains("larger than the source"), "\(name): grew without a reason: \(reason)")
                }
                if name == "phone.mp4" {
                    #expect(receipt.sentByteCount < receipt.originalByteCount, "\(name): \(receipt.sentByteCount) B, \(reason)")
                    #expect(media.plan == .encode && reason.contains("rotated"), "\(reason)")
                }
                if name == "clip.mp4" {
                    #expect(media.plan == .keep && reason.hasPrefix("compliant"), "\(reason)")
                    #expect(receipt.server["sha256"]?.stringValue == (try MusicIsNotVoiceTests.sha256(path)), "byte for byte")
                }
                if name == "late-index.mp4" { #expect(media.plan == .remux && reason.contains("index"), "\(reason)") }
                // What the server stored is what went: check it against the caps.
                let stored = try #require(receipt.server["fileId"]?.stringValue)
                let (data, _) = try await server.get("/files/\(stored)")
                let copy = NSTemporaryDirectory() + "attache-never-larger-\(UUID().uuidString).mp4"
                defer { try? FileManager.default.removeItem(atPath: copy) }
                try data.write(to: URL(fileURLWithPath: copy))
                try await Self.expectWithinCaps(copy, "\(name) [\(media.plan)] \(reason)")
            }
        }
    }

    @Test("an encode held to the source's rate is the same bytes every time (a retry sends what the first try sent)")
    func rateLimitedEncodeIsRepeatable() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let converter = MediaTools.converter()
        // Six at once, as a batch runs them: threads competing for the cores is what made encodes differ.
        let outputs = try await withThrowingTaskGroup(of: Data.self) { group in
            for run in 0..<6 {
                group.addTask {
                    let work = dir + "/run\(run)"
                    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
                    let result = try await converter.convertVideo(
                        MusicIsNotVoiceTests.samples + "/phone.mp4", workDirectory: work, thumbnailSides: [])
                    #expect(result.plan == .encode)
                    return try Data(contentsOf: URL(fileURLWithPath: try #require(result.path)))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outputs.count == 6 && Set(outputs).count == 1, "sizes: \(outputs.map(\.count))")
    }

    @Test("a rotation alone does not justify a larger file: the source goes, remuxed, and the receipt says so")
    func rotationAloneDoesNotGrow() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A compliant clip at the lowest quality x264 has (CRF 51), shown rotated: no encode of it at the
        // converter's quality comes out smaller, so the source must go, remuxed (the index is last).
        let plain = dir + "/plain.mp4"
        let path = dir + "/rotated.mp4"
        try await MediaTools.ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=15:duration=2", "-c:v", "libx264", "-preset", "veryslow",
            "-profile:v", "high", "-pix_fmt", "yuv420p", "-crf", "51", plain,
        ])
        try await MediaTools.ffmpeg(["-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=90", path])
        let result = try await MediaTools.converter().convertVideo(path, workDirectory: dir, thumbnailSides: [])
        let reason = try #require(result.reason)
        try #require(result.plan == .remux, "the encode must lose to a CRF-51 source, and the source is remuxed: \(reason)")
        #expect(reason.contains("was not smaller than the source") && reason.contains("rotated"), "\(reason)")
        #expect(result.width == 240 && result.height == 320, "the size as shown")
        let output = try #require(result.path)
        #expect(try await MediaTools.packetMD5(output) == (try await MediaTools.packetMD5(path)), "packets unchanged")
    }

    @Test("images: nothing grows without a reason, and a compliant JPEG goes byte for byte")
    func images() async throws {
        let samples = MusicIsNotVoiceTests.samples
        try await LiveServer.with { server in
            let pipeline = try server.pipeline()
            for name in ["photo.jpg", "photo.heic", "screenshot.png", "alpha.png", "sticker.webp", "hostile/fake.png"] {
                let receipt = try await pipeline.send(Attachment(path: samples + "/" + name))
                let reason = try #require(receipt.transform.reason, "\(name): the receipt says why")
                if receipt.sentByteCount > receipt.originalByteCount {
                    #expect(reason.contains("larger than the source"), "\(name): grew without a reason: \(reason)")
                }
            }
            let dir = try TestImages.directory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let small = dir + "/small.jpg"
            try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x480:duration=1", "-frames:v", "1",
                                         "-q:v", "8", "-map_metadata", "-1", "-flags", "+bitexact", small])
            let receipt = try await pipeline.send(Attachment(path: small))
            #expect(receipt.transform.reason?.hasPrefix("compliant") == true, "\(receipt.transform.reason ?? "")")
            #expect(receipt.server["sha256"]?.stringValue == (try MusicIsNotVoiceTests.sha256(small)), "byte for byte")
            // Noise at the highest quality is over w·h/2 bytes: recompressed, smaller, and the receipt says why.
            let heavy = dir + "/heavy.jpg"
            try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x480,noise=alls=30:allf=t", "-frames:v", "1",
                                         "-pix_fmt", "yuvj420p", "-q:v", "2", "-flags", "+bitexact", heavy])
            #expect(try Self.size(heavy) > 640 * 480 / 2)
            let recompressed = try await pipeline.send(Attachment(path: heavy))
            #expect(recompressed.transform.recompressed && recompressed.sentByteCount < recompressed.originalByteCount)
            #expect(recompressed.transform.reason?.contains("over w·h/2 bytes") == true, "\(recompressed.transform.reason ?? "")")
        }
    }
}
