import Foundation
import AttacheTestSupport
import Testing
@testable import AttacheCore

/// ffmpeg and ffprobe as the tests' independent tools: they make the inputs and check the outputs.
enum MediaTools {
    static let ffmpeg = "/usr/bin/ffmpeg"
    static let ffprobe = "/usr/bin/ffprobe"

    /// Runs a tool and returns its standard output; throws with its standard error when it fails.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let result = try ChildProcess.runBlocking(executable, arguments)
        guard result.status == 0 else {
            throw ToolFailure(message: "\(executable) \(arguments.joined(separator: " ")): \(result.error)")
        }
        return String(decoding: result.output, as: UTF8.self)
    }

    /// `run` for async code: the tool runs and is waited for on a thread of its own, never on the
    /// cooperative pool that the transfers of tests running beside this one need.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) async throws -> String {
        try await onOwnThread { () throws -> String in try run(executable, arguments) }
    }

    struct ToolFailure: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// ffmpeg with quiet options and `arguments`.
    static func ffmpeg(_ arguments: [String]) throws {
        try run(ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments)
    }

    /// `ffmpeg` for async code, on a thread of its own.
    static func ffmpeg(_ arguments: [String]) async throws {
        try await run(ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments)
    }

    /// `ffprobe -show_streams -show_format` as key → value maps, one per stream, plus the format's.
    static func probe(_ path: String) throws -> (streams: [[String: String]], format: [String: String]) {
        let text = try run(ffprobe, ["-v", "error", "-show_streams", "-show_format", "-of", "json", path])
        let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
        func strings(_ object: Any?) -> [String: String] {
            var result: [String: String] = [:]
            for (key, value) in object as? [String: Any] ?? [:] {
                if let list = value as? [[String: Any]], key == "side_data_list" {
                    for entry in list { for (k, v) in entry { result["side_data." + k] = "\(v)" } }
                } else if let tags = value as? [String: Any], key == "tags" {
                    for (k, v) in tags { result["tag." + k] = "\(v)" }
                } else {
                    result[key] = "\(value)"
                }
            }
            return result
        }
        let streams = (json["streams"] as? [Any] ?? []).map(strings)
        return (streams, strings(json["format"]))
    }

    /// `probe` for async code, on a thread of its own.
    static func probe(_ path: String) async throws -> (streams: [[String: String]], format: [String: String]) {
        try await onOwnThread { () throws -> (streams: [[String: String]], format: [String: String]) in try probe(path) }
    }

    /// The top-level box types of an MP4, read by hand.
    static func topLevelBoxes(_ path: String) throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var offset = 0
        var boxes: [String] = []
        while offset + 8 <= data.count {
            var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
            if size == 1 { size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
            if size == 0 { size = data.count - offset }
            boxes.append(type)
            guard size >= 8 else { break }
            offset += size
        }
        return boxes
    }

    /// The MD5 of a stream's packets, as ffmpeg's `md5` muxer computes it on a stream copy.
    static func packetMD5(_ path: String, stream: String = "0:v:0") throws -> String {
        try run(ffmpeg, ["-nostdin", "-loglevel", "error", "-i", path, "-map", stream, "-c", "copy", "-f", "md5", "-"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `packetMD5` for async code, on a thread of its own.
    static func packetMD5(_ path: String, stream: String = "0:v:0") async throws -> String {
        try await onOwnThread { () throws -> String in try packetMD5(path, stream: stream) }
    }

    /// A converter over the system's ffmpeg.
    static func converter(_ configure: (inout MediaOptions) -> Void = { _ in }) -> MediaConverter {
        var options = MediaOptions()
        configure(&options)
        return MediaConverter(options: options, ffmpeg: ffmpeg, ffprobe: ffprobe)
    }

    /// A mono 16-bit WAV file of `samples` at `rate`, written by hand.
    static func wav(_ samples: [Int16], rate: Int) -> Data {
        var data = Data()
        func u32(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ value: Int) { withUnsafeBytes(of: UInt16(value).littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); u32(36 + samples.count * 2)
        data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(1); u32(rate); u32(rate * 2); u16(2); u16(16)
        data.append(contentsOf: Array("data".utf8)); u32(samples.count * 2)
        for sample in samples { withUnsafeBytes(of: sample.littleEndian) { data.append(contentsOf: $0) } }
        return data
    }
}

/// The converter's runs for async tests: ffmpeg runs and is waited for on a thread of its own, never on
/// the cooperative pool that the transfers of tests running beside these need.
extension MediaConverter {
    func convertVideo(_ path: String, workDirectory: String, thumbnailSides: [Int]) async throws -> MediaResult {
        try await onOwnThread { () throws -> MediaResult in
            try convertVideo(path, workDirectory: workDirectory, thumbnailSides: thumbnailSides)
        }
    }

    func convertAnimation(_ path: String, workDirectory: String, thumbnailSides: [Int]) async throws -> MediaResult {
        try await onOwnThread { () throws -> MediaResult in
            try convertAnimation(path, workDirectory: workDirectory, thumbnailSides: thumbnailSides)
        }
    }

    func convertVoice(_ path: String, workDirectory: String) async throws -> MediaResult {
        try await onOwnThread { () throws -> MediaResult in try convertVoice(path, workDirectory: workDirectory) }
    }
}

extension ProcessRunner {
    /// `run` for async tests, on a thread of its own: a child that runs to a limit (a wall-clock
    /// second, a CPU second) would otherwise hold a thread of the cooperative pool all that time.
    static func run(_ executable: String, _ arguments: [String], limits: ProcessLimits) async throws -> ProcessOutcome {
        try await onOwnThread { () throws -> ProcessOutcome in try run(executable, arguments, limits: limits) }
    }
}
