import Attache
import Foundation
import AttacheTestSupport
import Testing

/// Video, voice and animations through the whole pipeline, the form read back by PHP's own parser.
@Suite("media through the pipeline", .serialized)
struct MediaPipelineTests {
    static func ffmpeg(_ arguments: [String]) async throws {
        _ = try await run("/usr/bin/ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments)
    }

    static func pipeline(_ url: String, _ configure: (inout PipelineConfiguration) -> Void = { _ in }) throws -> AttachmentPipeline {
        var configuration = PipelineConfiguration(url: url + "/upload")
        configuration.seal = .none
        configuration.answers = .status
        configure(&configuration)
        return try AttachmentPipeline(configuration: configuration)
    }

    static func form(_ receipt: UploadReceipt, _ name: String) -> String? {
        receipt.server["form"]?[name]?.stringValue
    }

    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "attache-media-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("a voice note goes as Ogg/Opus with its duration and waveform")
    func voice() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wav = dir + "/memo.wav"
        try await Self.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=300:sample_rate=16000:duration=2.5", "-ac", "1",
                               "-c:a", "pcm_s16le", wav])
        try await ReceiverProcess.withPHPEcho { url in
            let receipt = try await Self.pipeline(url).send(Attachment(path: wav))
            #expect(receipt.kind == .voice && receipt.mimeType == "audio/ogg" && receipt.filename == "memo.ogg")
            let media = try #require(receipt.transform.media)
            #expect(media.plan == .encode && receipt.transform.recompressed)
            let waveform = try #require(media.waveform)
            #expect(Data(base64Encoded: waveform)?.count == 63)
            #expect(Self.form(receipt, "waveform") == waveform)
            #expect(Self.form(receipt, "duration") == "2.50")
            #expect(Self.form(receipt, "mimeType") == "audio/ogg")
            #expect(Self.form(receipt, "supportsStreaming") == nil)
        }
    }

    @Test("a rotated video goes as MP4 with its size, duration, streaming flag and a poster")
    func video() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plain = dir + "/plain.mp4"
        let clip = dir + "/clip.mp4"
        try await Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=1.5", "-f", "lavfi", "-i",
                               "sine=duration=1.5", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p",
                               "-c:a", "aac", plain])
        try await Self.ffmpeg(["-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=90", clip])
        try await ReceiverProcess.withPHPEcho { url in
            let receipt = try await Self.pipeline(url).send(Attachment(path: clip))
            #expect(receipt.kind == .video && receipt.mimeType == "video/mp4")
            #expect(receipt.transform.media?.plan == .encode && receipt.transform.media?.supportsStreaming == true)
            #expect(Self.form(receipt, "width") == "360" && Self.form(receipt, "height") == "640")
            #expect(Self.form(receipt, "supportsStreaming") == "true")
            #expect(Self.form(receipt, "duration") == "1.50")
            #expect(receipt.transform.thumbnails == ["thumbnail", "thumbnailTiny"])
            #expect(receipt.transform.width == 360 && receipt.transform.height == 640)
        }
    }

    @Test("an animated GIF goes as a silent MP4 animation")
    func animation() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gif = dir + "/wave.gif"
        try await Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1", gif])
        try await ReceiverProcess.withPHPEcho { url in
            let receipt = try await Self.pipeline(url).send(Attachment(path: gif))
            #expect(receipt.mimeType == "video/mp4" && receipt.filename == "wave.mp4")
            #expect(Self.form(receipt, "animation") == "true")
            #expect(receipt.transform.media?.animation == true)
            #expect(receipt.transform.thumbnails.first == "thumbnail")
        }
    }

    @Test("without ffmpeg, video and voice go as they are and the receipt says why")
    func ffmpegMissing() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wav = dir + "/memo.wav"
        try await Self.ffmpeg(["-f", "lavfi", "-i", "sine=duration=1", "-ac", "1", wav])
        try await ReceiverProcess.withPHPEcho { url in
            let pipeline = try Self.pipeline(url) { $0.transform.media.ffmpegPath = dir + "/no-ffmpeg-here" }
            let receipt = try await pipeline.send(Attachment(path: wav))
            #expect(receipt.mimeType == "audio/wav" && receipt.filename == "memo.wav")
            #expect(!receipt.transform.recompressed)
            #expect(receipt.transform.skipped?.hasPrefix("ffmpeg-missing") == true)
            #expect(Self.form(receipt, "waveform") == nil)
        }
    }

    @Test("a broken video is reported in the receipt and sent as it is; under .fail it is an error naming the file")
    func brokenVideo() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let whole = dir + "/whole.mp4"
        try await Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:duration=1", "-c:v", "libx264", "-preset",
                               "ultrafast", whole])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        let cut = dir + "/cut.mp4"
        try bytes.prefix(bytes.count / 3).write(to: URL(fileURLWithPath: cut))
        try await ReceiverProcess.withPHPEcho { url in
            let receipt = try await Self.pipeline(url).send(Attachment(path: cut, declaredKind: .video))
            #expect(receipt.transform.skipped?.hasPrefix("corrupt-input") == true)
            let strict = try Self.pipeline(url) { $0.transform.onTransformError = .fail }
            let error = await #expect(throws: AttacheError.self) {
                try await strict.send(Attachment(path: cut, declaredKind: .video))
            }
            #expect(error?.stage == .transform && error?.file == cut)
        }
    }
}

/// `attache recompress` applies the rules uploads apply: the same Transformer, whichever executable runs it.
@Suite("recompress applies the upload rules")
struct RecompressRulesTests {
    static func recompress(_ input: String, _ output: String, _ extra: [String] = []) async throws -> (Int32?, String, String) {
        let result = await attache(["recompress", input, "-o", output, "--json"] + extra)
        return (result.status, result.standardOutput, result.standardError)
    }

    @Test("an opaque screenshot stays a PNG, as upload sends it; a HEIC photo becomes a JPEG in the full tool")
    func imagesFollowTheUploadRules() async throws {
        let dir = try MediaPipelineTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let root = ExitStatusTests.packageRoot.path
        let (status, output, error) = try await Self.recompress(root + "/Samples/screenshot.png", dir + "/shot.out")
        #expect(status == 0, "\(error)")
        #expect(output.contains("\"mimeType\":\"image/png\""))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/shot.out"))
        #expect(Array(bytes.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])

        // `attache recompress` decodes HEIC through libheif.
        let jpeg = dir + "/source.jpg"
        try await MediaPipelineTests.ffmpeg(["-f", "lavfi", "-i", "color=c=green:s=120x80", "-frames:v", "1", jpeg])
        let heic = dir + "/photo.heic"
        _ = try await run("/usr/bin/heif-enc", ["-q", "80", "-o", heic, jpeg])
        let (heicStatus, heicOutput, heicError) = try await Self.recompress(heic, dir + "/photo.jpg")
        #expect(heicStatus == 0, "\(heicError)")
        #expect(heicOutput.contains("\"mimeType\":\"image/jpeg\"") && heicOutput.contains("\"outputWidth\":120"))
        let photo = try Data(contentsOf: URL(fileURLWithPath: dir + "/photo.jpg"))
        #expect(Array(photo.prefix(3)) == [0xFF, 0xD8, 0xFF])
    }

    @Test("a HEIC photo gives the same JPEG whether FFmpeg's libavcodec or libde265 decodes its HEVC pictures")
    func heicWithoutLibavcodec() async throws {
        let dir = try MediaPipelineTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The sample photo (one picture, irot), a picture with an alpha plane (a second HEVC picture) and
        // an odd size, which heif-enc stores as a grid of one tile, cropped.
        let alpha = dir + "/alpha.heic", odd = dir + "/odd.heic"
        try await MediaPipelineTests.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x120", "-frames:v", "1", "-vf",
                                             "format=rgba,geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='X*255/W'", dir + "/alpha.png"])
        try await MediaPipelineTests.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=97x61", "-frames:v", "1", dir + "/odd.png"])
        _ = try await run("/usr/bin/heif-enc", ["-q", "60", "-o", alpha, dir + "/alpha.png"])
        _ = try await run("/usr/bin/heif-enc", ["-q", "60", "-o", odd, dir + "/odd.png"])
        let inputs = [ExitStatusTests.packageRoot.path + "/Samples/photo.heic", alpha, odd]

        func initialised(_ library: String, _ log: String) -> Bool {
            log.split(separator: "\n").contains { $0.contains("calling init: ") && $0.hasSuffix("/" + library) }
        }
        // LD_DEBUG=libs: the dynamic loader says which libraries the processes initialise.
        let first = try ChildProcess(executable: try attacheBinary(), arguments: [
            "recompress", inputs[0], "-o", dir + "/0-avcodec.jpg", "--json",
        ], environment: ["LD_DEBUG": "libs"])
        #expect(try await first.wait(upTo: 120) == 0, "\(first.standardError.suffix(2000))")
        #expect(first.standardOutput.contains("\"outputWidth\":960"))
        // libavcodec.so.59 with Debian 12's FFmpeg 5.1.
        let avcodec = first.standardError.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("calling init: "), let name = line.split(separator: "/").last,
                  name.hasPrefix("libavcodec.so.") else { return nil }
            return String(name)
        }.first
        let library = try #require(avcodec, "libavcodec was not loaded")
        // A file that is no library, found first under that name: dlopen fails, and libheif's own decoder
        // (libde265) decodes, silently.
        let stubs = dir + "/stubs"
        try FileManager.default.createDirectory(atPath: stubs, withIntermediateDirectories: true)
        try Data("not a library".utf8).write(to: URL(fileURLWithPath: stubs + "/" + library))

        for (index, input) in inputs.enumerated() {
            if index > 0 {
                let process = try ChildProcess(executable: try attacheBinary(), arguments: [
                    "recompress", input, "-o", dir + "/\(index)-avcodec.jpg", "--json",
                ])
                #expect(try await process.wait(upTo: 120) == 0, "\(input): \(process.standardError)")
            }
            let without = try ChildProcess(executable: try attacheBinary(), arguments: [
                "recompress", input, "-o", dir + "/\(index)-libde265.jpg", "--json",
            ], environment: ["LD_LIBRARY_PATH": stubs, "LD_DEBUG": "libs"])
            #expect(try await without.wait(upTo: 120) == 0, "\(input): \(without.standardError.suffix(2000))")
            #expect(initialised("libheif.so.1", without.standardError) && !initialised(library, without.standardError))
            // The same pixels in, the same encoder: the same JPEG.
            let a = try Data(contentsOf: URL(fileURLWithPath: dir + "/\(index)-avcodec.jpg"))
            let b = try Data(contentsOf: URL(fileURLWithPath: dir + "/\(index)-libde265.jpg"))
            #expect(a.count > 500 && a == b, "\(input)")
        }
    }

    @Test("a voice note becomes Ogg/Opus with a waveform; a text file is refused as nothing to recompress")
    func mediaAndFiles() async throws {
        let dir = try MediaPipelineTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let root = ExitStatusTests.packageRoot.path
        let (status, output, error) = try await Self.recompress(root + "/Samples/voice.m4a", dir + "/voice.ogg")
        #expect(status == 0, "\(error)")
        #expect(output.contains("\"mimeType\":\"audio/ogg\"") && output.contains("\"waveform\":\""))
        let ogg = try Data(contentsOf: URL(fileURLWithPath: dir + "/voice.ogg"))
        #expect(Array(ogg.prefix(4)) == Array("OggS".utf8))

        let (textStatus, _, textError) = try await Self.recompress(root + "/Samples/notes.txt", dir + "/notes.out")
        #expect(textStatus == 65, "bad input")
        #expect(textError.contains("unsupported-input"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/notes.out"))
    }
}

/// `--video-preset` and `--voice-preset` on the command line.
@Suite("media presets on the command line")
struct MediaPresetTests {
    @Test("--voice-preset high sends 48 kHz Opus; a bad preset is a usage error")
    func presets() async throws {
        let dir = try MediaPipelineTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wav = dir + "/memo.wav"
        try await MediaPipelineTests.ffmpeg(["-f", "lavfi", "-i", "sine=duration=1", "-ac", "1", wav])
        try await LiveServer.with { server in
            let process = await attache([
                "upload", wav, "--url", server.uploadURL, "--scheme", "none", "--voice-preset", "high", "--json",
            ])
            #expect(process.status == 0, "\(process.standardError)")
            let receipt = try JSONDecoder().decode(UploadReceipt.self, from: Data(process.standardOutput.utf8))
            let fileId = try #require(receipt.fileId)
            let (stored, _) = try await server.get("/files/\(fileId)")
            let ogg = dir + "/stored.ogg"
            try stored.write(to: URL(fileURLWithPath: ogg))
            let rate = try await run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=sample_rate", "-of", "csv=p=0", ogg])
            #expect(String(decoding: rate, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "48000")
        }
        let bad = await attache(["upload", wav, "--url", "http://127.0.0.1:9/upload", "--video-preset", "4k"])
        #expect(bad.status == 64)
    }
}
