import Foundation
import Testing

@testable import Attache
@testable import AttacheCore

@Suite("Detect: the labelled corpus")
struct CorpusDetectionTests {
    @Test("type and kind", arguments: DetectionCorpus.files)
    func typeAndKind(_ file: DetectionCorpus.File) throws {
        let detection = try MIMEDetector().detect(fileAt: CorpusFolder.file(file.name))
        #expect(detection.mimeType == file.mimeType)
        #expect(detection.kind.rawValue == file.kind)
    }

    @Test("in-memory detection agrees with file detection", arguments: DetectionCorpus.files)
    func contentsAgree(_ file: DetectionCorpus.File) throws {
        let bytes = try CorpusFolder.bytes(file.name)
        let fromMemory = try MIMEDetector().detect(contents: bytes, filename: file.name)
        let fromFile = try MIMEDetector().detect(fileAt: CorpusFolder.file(file.name))
        #expect(fromMemory == fromFile)
    }
}

@Suite("Detect: header metadata")
struct MetadataTests {
    typealias Expect = (name: String, width: Int?, height: Int?)

    @Test("image sizes", arguments: [
        ("photo.jpg", 64, 48), ("rotated.jpg", 64, 48), ("image.png", 40, 30), ("alpha.png", 40, 30),
        ("anim.png", 32, 32), ("still.gif", 30, 20), ("anim.gif", 32, 32), ("lossy.webp", 40, 30),
        ("lossless.webp", 40, 30), ("anim.webp", 32, 32), ("photo.webp", 800, 600), ("photo.heic", 48, 32),
        ("photo.avif", 48, 32), ("image.bmp", 20, 10), ("image.tiff", 20, 10), ("icon.ico", 16, 16),
        ("clip.mp4", 64, 48), ("clip.webm", 64, 48), ("clip.mkv", 64, 48), ("clip.avi", 64, 48),
        ("clip.ogv", 64, 48), ("clip.3gp", 64, 48), ("sticker.webm", 512, 512), ("sticker.tgs", 512, 512),
    ])
    func sizes(_ name: String, _ width: Int, _ height: Int) throws {
        let metadata = try CorpusFolder.detect(name).metadata
        #expect(metadata.width == width)
        #expect(metadata.height == height)
    }

    @Test("a video rotated by its track matrix reports the displayed size")
    func rotatedVideo() throws {
        let metadata = try CorpusFolder.detect("clip.mov").metadata
        #expect(metadata.rotation == 90)
        #expect(metadata.width == 48)
        #expect(metadata.height == 64)
    }

    @Test("EXIF orientation")
    func orientation() throws {
        #expect(try CorpusFolder.detect("rotated.jpg").metadata.orientation == 6)
        #expect(try CorpusFolder.detect("photo.jpg").metadata.orientation == nil)
    }

    @Test("alpha and animation", arguments: [
        ("image.png", false, false), ("alpha.png", true, false), ("anim.png", nil, true),
        ("lossy.webp", false, false), ("lossless.webp", true, false), ("anim.webp", nil, true),
        ("still.gif", nil, false), ("anim.gif", nil, true),
    ] as [(String, Bool?, Bool)])
    func flags(_ name: String, _ alpha: Bool?, _ animated: Bool) throws {
        let metadata = try CorpusFolder.detect(name).metadata
        if let alpha { #expect(metadata.hasAlpha == alpha) }
        #expect(metadata.isAnimated == animated)
        if animated { #expect(metadata.frameCount == 2) }
    }

    @Test("durations and codecs", arguments: [
        ("voice.ogg", 1.5, "opus"), ("music.oga", 1.0, "vorbis"), ("flac.ogg", 0.5, "flac"),
        ("song.mp3", 1.0, "mp3"), ("plain.mp3", 1.0, "mp3"), ("audio.aac", 1.0, "aac"),
        ("voice.m4a", 1.2, "aac"), ("audio.flac", 0.25, "flac"), ("audio.wav", 0.25, "pcm"),
        ("audio.aiff", 0.25, "pcm"), ("audio.caf", 0.25, "pcm"), ("voice.webm", 1.0, "opus"),
        ("audio.mka", 1.0, "vorbis"), ("voice.3gp", 1.0, "aac"), ("voice.amr", 1.0, "amr_nb"),
        ("voice.awb", 1.0, "amr_wb"), ("clip.mp4", 1.0, "aac"), ("clip.webm", 1.0, "opus"),
    ])
    func audio(_ name: String, _ seconds: Double, _ codec: String) throws {
        let metadata = try CorpusFolder.detect(name).metadata
        let duration = try #require(metadata.duration)
        // Encoders pad the first and last frame; a tenth of a second is the slack of one frame or two.
        #expect(abs(duration - seconds) <= 0.1, "duration \(duration)")
        #expect(metadata.audioCodec == codec)
        #expect((metadata.sampleRate ?? 0) > 0)
    }

    @Test("video codecs and durations", arguments: [
        ("clip.mp4", "h264"), ("clip.mov", "h264"), ("clip.webm", "vp9"), ("clip.mkv", "h264"),
        ("clip.3gp", "h264"), ("clip.ogv", "theora"), ("sticker.webm", "vp9"),
    ])
    func video(_ name: String, _ codec: String) throws {
        let metadata = try CorpusFolder.detect(name).metadata
        #expect(metadata.videoCodec == codec)
        if codec != "theora" {
            let duration = try #require(metadata.duration)
            #expect(abs(duration - 1.0) <= 0.1, "duration \(duration)")
        }
    }

    @Test("a TGS sticker's duration comes from its Lottie frames")
    func tgs() throws {
        let metadata = try CorpusFolder.detect("sticker.tgs").metadata
        #expect(metadata.duration == 3.0)
        #expect(metadata.isAnimated == true)
    }

    @Test("text encodings", arguments: [
        ("plain.txt", "utf-8"), ("unicode.txt", "utf-8"), ("utf16.txt", "utf-16le"), ("utf16be.txt", "utf-16be"),
        ("nobom16.txt", "utf-16le"), ("utf32.txt", "utf-32le"), ("latin1.txt", "unknown-8bit"), ("bom.csv", "utf-8"),
    ])
    func encodings(_ name: String, _ encoding: String) throws {
        #expect(try CorpusFolder.detect(name).metadata.textEncoding == encoding)
    }

    @Test("upload fields carry the metadata under stable names")
    func uploadFields() throws {
        let fields = try CorpusFolder.detect("clip.mp4").uploadFields
        let byName = Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(fields.first == UploadField(name: "mimeType", value: "video/mp4"))
        #expect(byName["kind"] == "video")
        #expect(byName["width"] == "64")
        #expect(byName["height"] == "48")
        #expect(byName["videoCodec"] == "h264")
        let duration = try #require(byName["duration"].flatMap(Double.init))
        #expect(abs(duration - 1.0) <= 0.1)
    }

    @Test("durations are written with two decimals", arguments: [
        (3.5249, "3.52"), (0, "0.00"), (3600, "3600.00"), (0.005, "0.01"), (59.999, "60.00"),
    ])
    func durationFormat(_ seconds: Double, _ text: String) {
        #expect(MediaMetadata.format(seconds) == text)
    }
}

@Suite("Detect: extensions and mismatches")
struct ExtensionTests {
    @Test("a JPEG named .png is reported")
    func lyingImage() throws {
        let detection = try CorpusFolder.detect("lying.png")
        #expect(detection.mimeType == "image/jpeg")
        #expect(detection.extensionMIMEType == "image/png")
        #expect(detection.mismatch)
        #expect(detection.preferredFilenameExtension == "jpg")
    }

    @Test("an executable named .pdf is reported and is a file")
    func lyingInvoice() throws {
        let detection = try CorpusFolder.detect("invoice.pdf")
        #expect(detection.mimeType == "application/vnd.microsoft.portable-executable")
        #expect(detection.mismatch)
        #expect(detection.kind == .file)
    }

    @Test("harmless differences are not mismatches", arguments: [
        "recording.mp4", "anim.png", "notes.md", "voice.ogg", "music.oga", "photo.jpg", "report.docx",
    ])
    func harmless(_ name: String) throws {
        let path: String
        if name == "report.docx" {
            var zip = ZipBuilder()
            zip.add("[Content_Types].xml", Array("<Types/>".utf8))
            zip.add("word/document.xml", Array("<w/>".utf8))
            path = CorpusFolder.write(zip.finished(), name: "as.zip")
        } else {
            path = CorpusFolder.file(name)
        }
        #expect(try MIMEDetector().detect(fileAt: path).mismatch == false)
    }

    @Test("no extension: the content decides and nothing is claimed")
    func noExtension() throws {
        let detection = try CorpusFolder.detect("picture")
        #expect(detection.mimeType == "image/png")
        #expect(detection.extensionMIMEType == nil)
        #expect(!detection.mismatch)
    }

    @Test("text is refined by a text extension, never by a binary one", arguments: [
        ("a.md", "text/markdown", false), ("a.ts", "text/x-typescript", false), ("a.csv", "text/csv", false),
        ("a.txt", "text/plain", false), ("a.jpg", "text/plain", true), ("a.svg", "text/plain", true),
    ])
    func textRefinement(_ name: String, _ expected: String, _ mismatch: Bool) throws {
        let detection = try MIMEDetector().detect(contents: Array("just words here\n".utf8), filename: name)
        #expect(detection.mimeType == expected)
        #expect(detection.mismatch == mismatch)
    }

    @Test("JSON named .txt is JSON and not a mismatch")
    func jsonAsText() throws {
        let detection = try MIMEDetector().detect(contents: Array("{\"a\": [1, 2]}".utf8), filename: "data.txt")
        #expect(detection.mimeType == "application/json")
        #expect(!detection.mismatch)
    }

    @Test("the extension is used only when the content says nothing")
    func fallback() throws {
        let nothing = MIMEDetector().detect(prefix: [], filename: "clip.mp4")
        #expect(nothing.mimeType == "video/mp4")
        #expect(nothing.kind == .video)
        let random = try MIMEDetector().detect(contents: CorpusFolder.bytes("random.bin"), filename: "photo.jpg")
        #expect(random.mimeType == "application/octet-stream")
        #expect(random.mismatch)
        #expect(random.kind == .file)
    }

    @Test("extensions are case-insensitive and taken from the last path component", arguments: [
        ("dir.v2/IMG_1.JPG", "jpg"), ("archive.tar.gz", "gz"), (".bashrc", nil), ("folder.d/file", nil), ("x.", nil),
    ] as [(String, String?)])
    func extensions(_ name: String, _ expected: String?) {
        #expect(MIMEDetector.fileExtension(name) == expected)
    }

    @Test("the extension table is consistent")
    func table() {
        // Every extension's type has a preferred extension (Mach-O binaries usually have none).
        for (ext, type) in MIMETable.byExtension where !type.hasPrefix("text/x-") && type != "application/x-mach-binary" {
            #expect(MIMETable.preferredExtension[type] != nil, "\(ext) → \(type)")
        }
        // Every parent chain ends (no cycles), and no type is its own ancestor.
        for type in MIMETable.parent.keys {
            var current = type
            var steps = 0
            while let next = MIMETable.parent[current], steps < 8 {
                current = next
                steps += 1
            }
            #expect(steps < 8, "\(type) has a parent cycle")
            #expect(!MIMETable.isDescendant(type, of: type))
        }
    }
}

@Suite("Detect: declared kinds")
struct DeclaredKindTests {
    @Test("a true declaration is accepted", arguments: [
        ("voice.ogg", MessageKind.voice), ("photo.jpg", .sticker), ("anim.gif", .video), ("lossy.webp", .image),
        ("clip.mp4", .file), ("sticker.webm", .video),
    ])
    func accepted(_ name: String, _ kind: MessageKind) throws {
        let detection = try CorpusFolder.detect(name, declaredKind: kind)
        #expect(detection.declaredKindAccepted)
        #expect(detection.kind == kind)
        #expect(detection.declaredKind == kind)
    }

    @Test("a lie is downgraded to a file by default", arguments: [
        ("doc.pdf", MessageKind.voice), ("clip.mp4", .image), ("voice.ogg", .video), ("audio.flac", .voice),
        ("tool.exe", .sticker),
    ])
    func downgraded(_ name: String, _ kind: MessageKind) throws {
        let detection = try CorpusFolder.detect(name, declaredKind: kind)
        #expect(!detection.declaredKindAccepted)
        #expect(detection.kind == .file)
    }

    @Test("a lie is rejected under the reject policy")
    func rejected() throws {
        var configuration = MIMEDetector.Configuration()
        configuration.declaredKindPolicy = .reject
        let path = CorpusFolder.file("doc.pdf")
        let error = try #require(throws: AttacheError.self) {
            try MIMEDetector(configuration: configuration).detect(fileAt: path, declaredKind: .voice)
        }
        #expect(error.code == .kindMismatch)
        #expect(error.stage == .detect)
        #expect(error.file == path)
    }

    @Test("an animated GIF can be configured to be a video")
    func animatedGIF() throws {
        var configuration = MIMEDetector.Configuration()
        configuration.animatedGIFKind = .video
        let detector = MIMEDetector(configuration: configuration)
        #expect(try CorpusFolder.detect("anim.gif", detector: detector).kind == .video)
        #expect(try CorpusFolder.detect("still.gif", detector: detector).kind == .image)
    }
}

@Suite("Detect: errors and edge cases")
struct DetectionErrorTests {
    @Test("a missing file is fileNotFound at stage detect, naming the file")
    func missing() throws {
        let path = CorpusFolder.path + "/does-not-exist.jpg"
        let error = try #require(throws: AttacheError.self) { try MIMEDetector().detect(fileAt: path) }
        #expect(error.code == .fileNotFound)
        #expect(error.stage == .detect)
        #expect(error.file == path)
    }

    @Test("a directory is unreadable")
    func directory() throws {
        let error = try #require(throws: AttacheError.self) { try MIMEDetector().detect(fileAt: CorpusFolder.path) }
        #expect(error.code == .fileUnreadable)
        #expect(error.file == CorpusFolder.path)
    }

    @Test("a file without read permission is unreadable")
    func permission() throws {
        // Root reads a file whatever its mode (CI runs as root); a write-only sysctl is a file that the
        // kernel refuses to open for reading even to root, so the test runs for every user.
        let path: String
        if geteuid() == 0 {
            path = "/proc/sys/vm/compact_memory"
            try #require(open(path, O_RDONLY) == -1 && errno == EACCES, "\(path) must refuse root's read here")
        } else {
            path = CorpusFolder.write([1, 2, 3], name: "locked.bin")
            chmod(path, 0)
        }
        let error = try #require(throws: AttacheError.self) { try MIMEDetector().detect(fileAt: path) }
        #expect(error.code == .fileUnreadable)
        #expect(error.file == path)
    }

    @Test("an empty file is application/x-empty, a file, and no mismatch")
    func empty() throws {
        let detection = try CorpusFolder.detect("empty.txt")
        #expect(detection.mimeType == "application/x-empty")
        #expect(detection.kind == .file)
        #expect(!detection.mismatch)
        #expect(detection.extensionMIMEType == "text/plain")
    }

    @Test("async detection runs on the blocking pool and gives the same answer")
    func async() async throws {
        let path = CorpusFolder.file("voice.ogg")
        let detection = try await MIMEDetector().detect(fileAt: path, on: .shared)
        #expect(detection == (try MIMEDetector().detect(fileAt: path)))
    }
}

@Suite("Detect: containers")
struct ContainerTests {
    @Test("a DOCX whose second entry is large is found through the central directory")
    func largeSecondEntry() throws {
        var zip = ZipBuilder()
        zip.add("[Content_Types].xml", Array("<Types/>".utf8))
        zip.add("word/media/image1.png", [UInt8](repeating: 7, count: 300_000))
        zip.add("word/document.xml", Array("<w/>".utf8))
        let path = CorpusFolder.write(zip.finished(), name: "big.docx")
        let detection = try MIMEDetector().detect(fileAt: path)
        #expect(detection.mimeType == MIMETable.docx)
        #expect(!detection.mismatch)
    }

    @Test("zip children by entry names", arguments: [
        (["[Content_Types].xml", "xl/workbook.xml"], MIMETable.xlsx),
        (["[Content_Types].xml", "ppt/presentation.xml"], MIMETable.pptx),
        (["AndroidManifest.xml", "classes.dex"], "application/vnd.android.package-archive"),
        (["META-INF/MANIFEST.MF", "a/B.class"], "application/java-archive"),
        (["readme.txt"], "application/zip"),
    ])
    func zipChildren(_ names: [String], _ expected: String) throws {
        var zip = ZipBuilder()
        for name in names { zip.add(name, Array("x".utf8)) }
        #expect(try MIMEDetector().detect(contents: zip.finished(), filename: nil).mimeType == expected)
    }

    @Test("a zip whose central directory lies falls back to the local headers")
    func lyingDirectory() throws {
        var zip = ZipBuilder()
        zip.add("[Content_Types].xml", Array("<Types/>".utf8))
        zip.add("word/document.xml", Array("<w/>".utf8))
        for (offset, size) in [(0x7FFF_FFF0, 46), (3, 0x7FFF_0000), (0, 0)] {
            let bytes = zip.finished(directoryOffset: offset, directorySize: size)
            let detection = try MIMEDetector().detect(contents: bytes, filename: "x.docx")
            #expect(detection.mimeType == MIMETable.docx)
        }
    }

    @Test("a prefix of a DOCX is enough when the names are in it")
    func docxPrefix() throws {
        var zip = ZipBuilder()
        zip.add("[Content_Types].xml", Array("<Types/>".utf8))
        zip.add("word/document.xml", [UInt8](repeating: 1, count: 10_000))
        let detection = MIMEDetector().detect(prefix: Array(zip.finished().prefix(4096)), filename: nil)
        #expect(detection.mimeType == MIMETable.docx)
    }

    @Test("plain gzip is not a sticker; gzip of Lottie JSON is")
    func gzip() throws {
        #expect(try CorpusFolder.detect("data.gz").kind == .file)
        #expect(try CorpusFolder.detect("sticker.tgs").kind == .sticker)
    }
}
