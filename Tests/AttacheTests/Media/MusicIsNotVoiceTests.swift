import Attache
import AttacheTestSupport
import Foundation
import Testing
@testable import AttacheCore

/// Music is not voice: tagged or stereo music goes as a file with its title, performer and duration,
/// untouched; every recording of speech is still a voice note (docs/DETECTION.md, "Message kinds").
@Suite("Music is not voice", .serialized)
struct MusicIsNotVoiceTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples").path

    struct Music: Sendable, CustomStringConvertible {
        var name: String
        var arguments: [String]
        var title: String
        var performer: String
        var album: String?
        var mimeType: String
        var description: String { name }
    }

    /// Two tones a fifth apart, one per channel: stereo that no one would call speech.
    static let stereo = ["-f", "lavfi", "-i", "aevalsrc=0.3*sin(440*2*PI*t)|0.3*sin(660*2*PI*t):s=44100:d=3"]
    static let tags = ["-metadata", "title=Ballade für Zoë", "-metadata", "artist=Les Essais",
                       "-metadata", "album=Démo \"Live\""]

    /// Music as a test makes it with ffmpeg: each encoder writes its own kind of tags.
    static let music: [Music] = [
        Music(name: "song.mp3", arguments: stereo + ["-c:a", "libmp3lame", "-b:a", "128k", "-id3v2_version", "3"] + tags,
              title: "Ballade für Zoë", performer: "Les Essais", album: "Démo \"Live\"", mimeType: "audio/mpeg"),
        Music(name: "song24.mp3", arguments: stereo + ["-c:a", "libmp3lame", "-b:a", "96k", "-id3v2_version", "4"] + tags,
              title: "Ballade für Zoë", performer: "Les Essais", album: "Démo \"Live\"", mimeType: "audio/mpeg"),
        Music(name: "song.m4a", arguments: stereo + ["-c:a", "aac", "-b:a", "128k"] + tags,
              title: "Ballade für Zoë", performer: "Les Essais", album: "Démo \"Live\"", mimeType: "audio/mp4"),
        Music(name: "song.flac", arguments: stereo + ["-c:a", "flac"] + tags,
              title: "Ballade für Zoë", performer: "Les Essais", album: "Démo \"Live\"", mimeType: "audio/flac"),
        Music(name: "song.ogg", arguments: stereo + ["-c:a", "libvorbis", "-q:a", "3"] + tags,
              title: "Ballade für Zoë", performer: "Les Essais", album: "Démo \"Live\"", mimeType: "audio/ogg"),
        // Opus is a speech codec too: here the tags alone make it music.
        Music(name: "song.opus", arguments: stereo + ["-c:a", "libopus", "-b:a", "96k"] + tags,
              title: "Ballade für Zoë", performer: "Les Essais", album: "Démo \"Live\"", mimeType: "audio/ogg"),
        // Mono and short, as speech would be, but it names a performer.
        Music(name: "mono-tagged.mp3",
              arguments: ["-f", "lavfi", "-i", "sine=frequency=523:sample_rate=44100:duration=3", "-ac", "1",
                          "-c:a", "libmp3lame", "-b:a", "64k", "-metadata", "title=Étude", "-metadata", "artist=Solo"],
              title: "Étude", performer: "Solo", album: nil, mimeType: "audio/mpeg"),
    ]

    static func make(_ music: Music, in dir: String) async throws -> String {
        let path = dir + "/" + music.name
        try await MediaTools.ffmpeg(music.arguments + [path])
        return path
    }

    static func sha256(_ path: String) throws -> String {
        try MediaTools.run("/usr/bin/" + sha256Command.name, sha256Command.arguments + [path]).split(separator: " ").first.map(String.init) ?? ""
    }

    @Test("Samples/song.mp3 is a file with its title, performer, album and duration")
    func sampleSong() throws {
        let detection = try MIMEDetector().detect(fileAt: Self.samples + "/song.mp3")
        #expect(detection.mimeType == "audio/mpeg" && detection.kind == .file)
        #expect(detection.metadata.title == "Sample Tune")
        #expect(detection.metadata.performer == "Attache Samples")
        #expect(detection.metadata.album == "Test Fixtures")
        #expect(abs((detection.metadata.duration ?? 0) - 5.04) <= 0.1)
        #expect(detection.metadata.channels == 2)
        let fields = Dictionary(detection.uploadFields.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(fields["kind"] == "file" && fields["title"] == "Sample Tune" && fields["performer"] == "Attache Samples")
        // Declared, it is still a voice note: the sender knows what they send.
        let declared = try MIMEDetector().detect(fileAt: Self.samples + "/song.mp3", declaredKind: .voice)
        #expect(declared.kind == .voice && declared.declaredKindAccepted)
    }

    @Test("test-made music is a file with the tags' title, performer and album", arguments: Self.music)
    func madeMusic(_ music: Music) async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try await Self.make(music, in: dir)
        let detection = try MIMEDetector().detect(fileAt: path)
        #expect(detection.mimeType == music.mimeType)
        #expect(detection.kind == .file)
        #expect(detection.metadata.title == music.title)
        #expect(detection.metadata.performer == music.performer)
        #expect(detection.metadata.album == music.album)
        let duration = try #require(detection.metadata.duration)
        #expect(abs(duration - 3) <= 0.1, "duration \(duration)")
        // The same from memory as from the file.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(try MIMEDetector().detect(contents: bytes, filename: music.name) == detection)
    }

    @Test("music goes byte for byte as a file, its tags in the form; --kind voice still makes a voice note")
    func musicIsSentUntouched() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var made = [(Self.samples + "/song.mp3", "Sample Tune", "Attache Samples")]
        for music in Self.music.prefix(4) { made.append((try await Self.make(music, in: dir), music.title, music.performer)) }
        let paths = made
        try await LiveServer.with { server in
            let pipeline = try server.pipeline()
            for (path, title, performer) in paths {
                let receipt = try await pipeline.send(Attachment(path: path))
                #expect(receipt.kind == .file, "\(path)")
                #expect(!receipt.transform.recompressed && receipt.transform.media == nil)
                let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
                #expect(receipt.sentByteCount == Int64(size))
                #expect(receipt.server["sha256"]?.stringValue == (try Self.sha256(path)), "\(path) sent byte for byte")
                #expect(receipt.server["fields"]?["title"]?.stringValue == title)
                #expect(receipt.server["fields"]?["performer"]?.stringValue == performer)
                #expect(receipt.server["fields"]?["kind"]?.stringValue == "file")
                #expect(receipt.server["fields"]?["duration"]?.stringValue != nil)
            }
            let forced = try await pipeline.send(Attachment(path: Self.samples + "/song.mp3", declaredKind: .voice))
            #expect(forced.kind == .voice && forced.mimeType == "audio/ogg" && forced.transform.media?.plan == .encode)
        }
    }

    // MARK: Voice stays voice

    static let speech = "Hello, this is a voice note. Call me back when you can."

    struct Voice: Sendable, CustomStringConvertible {
        var name: String
        var arguments: [String]
        var description: String { name }
    }

    /// Mono speech from espeak-ng, in the containers phones record into.
    static let voices: [Voice] = [
        Voice(name: "note.opus", arguments: ["-c:a", "libopus", "-b:a", "24k", "-application", "voip"]),
        Voice(name: "note.ogg", arguments: ["-c:a", "libopus", "-b:a", "16k", "-ar", "16000"]),
        // Debian's ffmpeg has no AMR encoder: AMR is written as frames by hand (below), then copied into 3GP.
        Voice(name: "note.amr", arguments: []),
        Voice(name: "note.3gp", arguments: ["-c", "copy"]),
        Voice(name: "note.m4a", arguments: ["-c:a", "aac", "-b:a", "48k"]),
        Voice(name: "note.mp3", arguments: ["-c:a", "libmp3lame", "-b:a", "32k"]),
        // A phone recorder may name the recording; a title alone is not music.
        Voice(name: "named.m4a", arguments: ["-c:a", "aac", "-b:a", "48k", "-metadata", "title=New Recording 3"]),
    ]

    /// The duration ffprobe gives for the file at `path`.
    static func duration(_ path: String) throws -> Double? {
        Double(try MediaTools.run(MediaTools.ffprobe, [
            "-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", path,
        ]).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func espeak(_ wav: String) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/espeak-ng") else {
            throw TestFailure("espeak-ng is not installed: Scripts/bootstrap.sh installs it")
        }
        try MediaTools.run("/usr/bin/espeak-ng", ["-w", wav, Self.speech])
    }

    @Test("mono speech made with espeak-ng is a voice note in every recorder's container", arguments: Self.voices)
    func speechIsVoice(_ voice: Voice) async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wav = dir + "/speech.wav"
        try Self.espeak(wav)
        let path = dir + "/" + voice.name
        if voice.name.hasPrefix("note.amr") || voice.name == "note.3gp" {
            // AMR-NB storage format: the magic line, then one 12.2 kbit/s frame (a mode byte and 31 bytes)
            // per 20 ms of the speech, as long as the speech lasts. Its content is not encoded speech: no
            // encoder here makes AMR, and detection reads only the container.
            let seconds = try #require(try Self.duration(wav))
            var amr = Data("#!AMR\n".utf8)
            for _ in 0..<Int(seconds * 50) { amr.append(contentsOf: [0x3C] + [UInt8](repeating: 0, count: 31)) }
            let amrPath = dir + "/note.amr"
            try amr.write(to: URL(fileURLWithPath: amrPath))
            if voice.name == "note.3gp" { try await MediaTools.ffmpeg(["-i", amrPath] + voice.arguments + [path]) }
        } else {
            try await MediaTools.ffmpeg(["-i", wav, "-ac", "1"] + voice.arguments + [path])
        }
        let detection = try MIMEDetector().detect(fileAt: path)
        #expect(detection.kind == .voice, "\(voice.name): \(detection.mimeType) \(detection.metadata)")
        #expect(detection.metadata.channels == 1)
        if voice.name == "named.m4a" { #expect(detection.metadata.title == "New Recording 3") }
    }

    @Test("the Samples' voice notes are still voice notes", arguments: ["voice.ogg", "voice.m4a"])
    func sampleVoiceNotes(_ name: String) throws {
        #expect(try MIMEDetector().detect(fileAt: Self.samples + "/" + name).kind == .voice)
    }

    @Test("the rule's edges: stereo untagged AAC is a file, stereo Opus a voice note, long mono MP3 a file")
    func edges() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let stereoAAC = dir + "/stereo.m4a"
        try await MediaTools.ffmpeg(Self.stereo + ["-c:a", "aac", "-b:a", "96k", stereoAAC])
        #expect(try MIMEDetector().detect(fileAt: stereoAAC).kind == .file)
        let stereoOpus = dir + "/stereo.ogg"
        try await MediaTools.ffmpeg(Self.stereo + ["-c:a", "libopus", "-b:a", "32k", stereoOpus])
        #expect(try MIMEDetector().detect(fileAt: stereoOpus).kind == .voice, "a speech codec, no tags")
        // 11 minutes of mono at 8 kb/s: over voiceMaxDuration in a container music uses too.
        let long = dir + "/long.mp3"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "660", "-c:a", "libmp3lame",
                                     "-b:a", "8k", long])
        let detection = try MIMEDetector().detect(fileAt: long)
        #expect((detection.metadata.duration ?? 0) > 600)
        #expect(detection.kind == .file)
        var configuration = MIMEDetector.Configuration()
        configuration.voiceMaxDuration = 3600
        #expect(try MIMEDetector(configuration: configuration).detect(fileAt: long).kind == .voice)
    }
}
