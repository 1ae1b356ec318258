public import ArgumentParser
public import Attache
public import AttacheCore
public import Logging

// Every option whose value is one of a few names is parsed once, by ArgumentParser, into its type: an
// unknown name is a usage error (64) that lists the names, and no command parses the text again.

extension SealScheme: ExpressibleByArgument {}

extension TransformErrorPolicy: ExpressibleByArgument {}
/// `--trace-detail`.
extension TraceDetail: ExpressibleByArgument {}

extension ImageFormat: ExpressibleByArgument {}

extension Logger.Level: @retroactive ExpressibleByArgument {}

extension AnswerProfile: ExpressibleByArgument {
    /// `--answer-profile`: the profile's name, in any case.
    public init?(argument: String) { self.init(name: argument) }
}

extension ThumbnailPlacement: ExpressibleByArgument {
    /// `--thumbnails`: inline, separate or none, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension ResumableMode: ExpressibleByArgument {
    /// `--resumable`: auto, tus, ietf or off, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension ScanFailurePolicy: ExpressibleByArgument {
    /// `--scan-failure`: refuse or send, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension ClamAVScanner.Transfer: ExpressibleByArgument {
    /// `--clamd-transfer`: auto, stream or descriptor, in any case.
    public init?(argument: String) {
        let name = argument.lowercased()
        self.init(rawValue: name == "auto" ? "automatic" : name)
    }
}

extension UploadMethod: ExpressibleByArgument {
    /// `--method`: POST or PUT, in any case.
    public init?(argument: String) { self.init(rawValue: argument.uppercased()) }
}

extension UploadBody: ExpressibleByArgument {
    /// `--body`: form or raw, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension S3Addressing: ExpressibleByArgument {
    /// `--s3-addressing`: auto, path or virtual, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension MultipartSettings.ChecksumMode: ExpressibleByArgument {
    /// `--checksum`: when-supported, when-required or off, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension MultipartSettings.ChecksumAlgorithm: ExpressibleByArgument {
    /// `--checksum-algorithm`: crc32c or sha256, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension MultipartSettings.ChecksumDelivery: ExpressibleByArgument {
    /// `--checksum-delivery`: auto, trailer or header, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension MultipartSettings.GiveUp: ExpressibleByArgument {
    /// `--on-give-up`: abort or keep, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension MessageKind: ExpressibleByArgument {
    /// `--kind`: image, voice, video, sticker or file, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

/// `--blurhash-components`: `XxY`, each 1–9 (`4x3`, `4x4`).
package struct BlurHashComponents: ExpressibleByArgument, Sendable, Equatable {
    /// Components across and down.
    package var x: Int, y: Int

    /// `XxY` with both in 1…9; nil otherwise.
    package init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let x = Int(parts[0]), let y = Int(parts[1]), (1...9).contains(x), (1...9).contains(y)
        else { return nil }
        (self.x, self.y) = (x, y)
    }

    /// The placeholder options with these components.
    package var options: PlaceholderOptions { PlaceholderOptions(componentsX: x, componentsY: y) }
}

/// `--video-preset`: how far videos are scaled down.
package enum VideoPreset: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Long side 1280, 720p.
    case standard
    /// Long side 1920, 1080p.
    case hd

    /// The converter's options for this preset.
    package var options: VideoOptions { self == .hd ? .hd : .standard }
}

/// `--voice-preset`: how voice notes are encoded.
package enum VoicePreset: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Ogg/Opus 16 kHz, 16 kb/s.
    case telegram
    /// 48 kHz, 32 kb/s.
    case high

    /// The converter's options for this preset.
    package var options: VoiceOptions { self == .high ? .high : .telegram }
}

/// A size in bytes as `--resumable-threshold` takes it: digits, optionally followed by K, M or G (KiB, MiB,
/// GiB).
package struct ByteSize: ExpressibleByArgument, Sendable, Equatable {
    /// The size in bytes.
    package var bytes: Int64

    /// A size of `bytes` bytes.
    package init(bytes: Int64) { self.bytes = bytes }

    /// Parses `16777216`, `16M`, `512k`; nil for anything else (a negative size, an overflow).
    package init?(argument: String) {
        var digits = Substring(argument.trimmingWhiteSpace)
        var shift: Int64 = 0
        switch digits.last?.uppercased() {
        case "K": shift = 10
        case "M": shift = 20
        case "G": shift = 30
        default: break
        }
        if shift > 0 { digits = digits.dropLast() }
        guard let value = Int64(digits), value >= 0, value <= (Int64.max >> shift) else { return nil }
        bytes = value << shift
    }
}

/// A `NAME=VALUE` pair as `--field` takes it: the name is what comes before the first `=`, and is not empty.
package struct NameValue: ExpressibleByArgument, Sendable, Equatable {
    /// The name, before the first `=`.
    package var name: String
    /// The value, after the first `=` (may be empty, may hold more `=`).
    package var value: String

    /// A pair from its parts.
    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Parses `name=value`; nil without `=` or with an empty name.
    package init?(argument: String) {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else { return nil }
        name = String(argument[..<equals])
        value = String(argument[argument.index(after: equals)...])
    }
}
