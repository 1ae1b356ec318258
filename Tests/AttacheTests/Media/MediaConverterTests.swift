import Foundation
import AttacheTestSupport
import Testing
@testable import AttacheCore

@Suite(.serialized) struct MediaConverterTests {
    /// A phone-style clip: 1920×1080 stored, shown rotated 90° (so 1080×1920 upright), 60 fps, 2 s, with
    /// stereo AAC at 192 kbps and its index at the end.
    static func phoneClip(in directory: String) async throws -> String {
        let path = directory + "/phone.mp4"
        let plain = directory + "/plain.mp4"
        try await MediaTools.ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=60:duration=2",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2",
            "-map", "0:v", "-map", "1:a", "-ac", "2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-b:a", "192k", "-movflags", "+faststart", plain,
        ])
        // ffmpeg 5.1 writes the display matrix from the `rotate` tag only on a stream copy; without
        // +faststart the index goes last, as phones write it.
        try await MediaTools.ffmpeg(["-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=90", path])
        try FileManager.default.removeItem(atPath: plain)
        return path
    }

    @Test func rotatedPhoneVideoIsConvertedToCompliantMP4() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = try await Self.phoneClip(in: dir)
        let source = try await MediaTools.probe(input)
        #expect(source.streams.first?["side_data.rotation"] != nil, "the source is stored rotated")

        let result = try await MediaTools.converter().convertVideo(input, workDirectory: dir, thumbnailSides: [320, 40])
        let output = try #require(result.path)
        #expect(result.plan == .encode && result.mimeType == "video/mp4" && result.filenameExtension == "mp4")

        let probe = try await MediaTools.probe(output)
        let video = try #require(probe.streams.first { $0["codec_type"] == "video" })
        let audio = try #require(probe.streams.first { $0["codec_type"] == "audio" })
        #expect(video["codec_name"] == "h264" && video["profile"] == "High" && video["pix_fmt"] == "yuv420p")
        #expect(video["width"] == "720" && video["height"] == "1280", "rotation applied, long side 1280")
        #expect(video["side_data.rotation"] == nil, "no rotation left for players to apply twice")
        #expect(result.width == 720 && result.height == 1280)
        let rate = video["avg_frame_rate"] ?? ""
        #expect(rate == "60/1", "60 fps is within the cap at 720p")
        let videoBitRate = try #require(Int(video["bit_rate"] ?? ""))
        #expect(videoBitRate <= 2_600_000, "720 short side: 2.6 Mbps cap")
        #expect(audio["codec_name"] == "aac" && audio["profile"] == "LC")
        #expect(try #require(Int(audio["bit_rate"] ?? "")) <= 128_000 + 2_000)
        let duration = try #require(Double(probe.format["duration"] ?? ""))
        let sourceDuration = try #require(Double(source.format["duration"] ?? ""))
        #expect(abs(duration - sourceDuration) <= 0.1)
        #expect(abs((result.duration ?? 0) - sourceDuration) <= 0.1)

        let boxes = try MediaTools.topLevelBoxes(output)
        let moov = try #require(boxes.firstIndex(of: "moov"))
        let mdat = try #require(boxes.firstIndex(of: "mdat"))
        #expect(moov < mdat, "the index comes first: \(boxes)")
        #expect(result.supportsStreaming)

        #expect(result.thumbnails.map(\.name) == ["thumbnail", "thumbnailTiny"])
        let poster = try #require(result.thumbnails.first)
        #expect(poster.width == 180 && poster.height == 320, "the poster is upright too")
        #expect(poster.bytes.count <= 200 * 1024)
        let decoded = try TestImages.decodeJPEG(poster.bytes)
        #expect(decoded.width == 180 && decoded.height == 320)
    }

    @Test func lowResolutionVideoIsCappedAt30FPSAnd750kbps() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = dir + "/small.mkv"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=641x361:rate=50:duration=1", "-c:v", "libx264",
                                     "-preset", "ultrafast", "-qp", "0", input])
        let result = try await MediaTools.converter().convertVideo(input, workDirectory: dir, thumbnailSides: [])
        let probe = try await MediaTools.probe(try #require(result.path))
        let video = try #require(probe.streams.first)
        #expect(video["width"] == "640" && video["height"] == "360", "even sides")
        #expect(video["avg_frame_rate"] == "30/1")
        #expect(probe.streams.count == 1, "no audio made up")
        #expect(try #require(Int(video["bit_rate"] ?? "")) <= 750_000)
    }

    @Test func compliantFastStartMP4IsKeptAndOneWithItsIndexLastIsOnlyRemuxed() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let late = dir + "/late-index.mp4"
        try await MediaTools.ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=2",
            "-f", "lavfi", "-i", "sine=frequency=300:sample_rate=44100:duration=2",
            "-c:v", "libx264", "-preset", "ultrafast", "-profile:v", "high", "-pix_fmt", "yuv420p", "-b:v", "300k",
            "-c:a", "aac", "-b:a", "64k", "-ac", "1", late,
        ])
        let boxes = try MediaTools.topLevelBoxes(late)
        #expect(boxes.firstIndex(of: "mdat")! < boxes.firstIndex(of: "moov")!, "made with the index last")

        let converter = MediaTools.converter()
        let remuxed = try await converter.convertVideo(late, workDirectory: dir, thumbnailSides: [])
        let output = try #require(remuxed.path)
        #expect(remuxed.plan == .remux)
        #expect(try await MediaTools.packetMD5(output) == (try await MediaTools.packetMD5(late)), "video packets copied unchanged")
        #expect(try await MediaTools.packetMD5(output, stream: "0:a:0") == (try await MediaTools.packetMD5(late, stream: "0:a:0")))
        let newBoxes = try MediaTools.topLevelBoxes(output)
        #expect(newBoxes.firstIndex(of: "moov")! < newBoxes.firstIndex(of: "mdat")!)

        let kept = try await converter.convertVideo(output, workDirectory: dir, thumbnailSides: [320])
        #expect(kept.plan == .keep && kept.path == nil, "a compliant fast-start MP4 goes as it is")
        #expect(kept.thumbnails.count == 1 && kept.width == 640 && kept.height == 360)

        // The same video with a location in its metadata is remuxed, which leaves the location behind.
        // (ffmpeg writes `©xyz` for QuickTime files, as phones do.)
        let located = dir + "/located.mov"
        try await MediaTools.ffmpeg(["-i", output, "-c", "copy", "-metadata", "location=+48.8584+002.2945/",
                                     "-movflags", "+faststart", located])
        let locatedBytes = try Data(contentsOf: URL(fileURLWithPath: located))
        #expect(locatedBytes.range(of: Data([0xA9] + Array("xyz".utf8))) != nil, "made with a location")
        let stripped = try await converter.convertVideo(located, workDirectory: dir, thumbnailSides: [])
        #expect(stripped.plan == .remux)
        let strippedBytes = try Data(contentsOf: URL(fileURLWithPath: try #require(stripped.path)))
        #expect(strippedBytes.range(of: Data([0xA9] + Array("xyz".utf8))) == nil, "no location leaves")
        #expect(try await MediaTools.packetMD5(try #require(stripped.path)) == (try await MediaTools.packetMD5(late)))
    }

    @Test func animatedGIFBecomesSilentMP4() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gif = dir + "/spinner.gif"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=200x120:rate=10:duration=1.5", gif])
        let result = try await MediaTools.converter().convertAnimation(gif, workDirectory: dir, thumbnailSides: [320, 40])
        let probe = try await MediaTools.probe(try #require(result.path))
        #expect(probe.streams.count == 1 && probe.streams[0]["codec_name"] == "h264")
        #expect(probe.streams[0]["pix_fmt"] == "yuv420p" && probe.streams[0]["width"] == "200")
        #expect(result.isAnimation && result.mimeType == "video/mp4")
        #expect(abs((Double(probe.format["duration"] ?? "") ?? 0) - 1.5) <= 0.1)
        #expect(result.thumbnails.first?.width == 200, "the first frame, not enlarged")
    }
}

@Suite struct MediaDeterminismTests {
    /// A retried or resumed upload transforms the file again and must send the same bytes under its
    /// idempotency key: two conversions of one file are identical, byte for byte.
    @Test func conversionsAreByteForByteRepeatable() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let video = dir + "/v.mkv"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=1", "-f", "lavfi", "-i",
                                     "sine=duration=1", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "flac", video])
        let voice = dir + "/a.wav"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=200:duration=1.5", "-ac", "1", voice])
        let converter = MediaTools.converter()
        var outputs: [[Data]] = []
        for run in 0..<2 {
            let work = dir + "/run\(run)"
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            let v = try await converter.convertVideo(video, workDirectory: work, thumbnailSides: [])
            let a = try await converter.convertVoice(voice, workDirectory: work)
            outputs.append(try [v.path, a.path].map { try Data(contentsOf: URL(fileURLWithPath: try #require($0))) })
        }
        #expect(outputs[0][0] == outputs[1][0], "the MP4 is the same both times")
        #expect(outputs[0][1] == outputs[1][1], "the Ogg/Opus is the same both times (no random serial number)")
    }
}
