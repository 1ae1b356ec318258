import Foundation
import Testing

/// Another multipart receiver running on 127.0.0.1 as a subprocess (Werkzeug, Python's `email`, PHP),
/// started from the scripts in `Receivers/` and stopped by its pid.
package struct ReceiverProcess {
    package let name: String
    package let port: Int
    package let process: ChildProcess

    package var uploadURL: String { "http://127.0.0.1:\(port)/upload" }

    /// The folder of the receiver scripts, next to this file in the source tree.
    package static let scripts = integrationTestsFolder + "/Receivers"

    /// Starts `arguments[0]` and waits for its `listening PORT …` line (PHP's `… (http://127.0.0.1:PORT)
    /// started`), which it prints once it accepts connections.
    package static func start(name: String, _ arguments: [String]) async throws -> ReceiverProcess {
        // PHP announces itself on stderr: `exec` keeps the pid while both streams go to one pipe.
        let command = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let process = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "exec \(command) 2>&1"])
        do {
            try await process.waitForOutput(containing: "\n", count: 1, upTo: 60)
        } catch {
            stop(process)
            throw error
        }
        let text = process.standardOutput
        let line = text.prefix { $0 != "\n" }
        let port: Int? =
            if line.hasPrefix("listening ") {
                line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            } else if let range = line.range(of: "http://127.0.0.1:") {
                Int(line[range.upperBound...].prefix { $0.isNumber })
            } else {
                nil
            }
        guard let port, port > 0 else {
            stop(process)
            throw TestFailure("receiver \(name) did not say where it listens: \(text)")
        }
        return ReceiverProcess(name: name, port: port, process: process)
    }

    /// Stops the receiver (SIGKILL by pid) and reaps it.
    package func stop() async {
        Self.stop(process)
        _ = try? await process.wait(upTo: 30)
    }

    private static func stop(_ process: ChildProcess) {
        kill(process.processIdentifier, SIGKILL)
    }

    /// The Python interpreters to run the Werkzeug receiver with: the system one (Scripts/bootstrap.sh
    /// installs python3-werkzeug for it) and the first `python3` on PATH when that is another
    /// interpreter with a Werkzeug of its own (Werkzeug 2.3 changed how it reads a backslash).
    package static func pythonsWithWerkzeug() throws -> [String] {
        var pythons = ["/usr/bin/python3"]
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for folder in path.split(separator: ":") {
            let candidate = String(folder) + "/python3"
            guard FileManager.default.isExecutableFile(atPath: candidate) else { continue }
            let probe = try ChildProcess.runBlocking(candidate, ["-c", "import sys, werkzeug; print(sys.executable)"])
            let executable = String(decoding: probe.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let status = probe.status
            let system = URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path
            if status == 0,
                URL(fileURLWithPath: executable).resolvingSymlinksInPath().path != system
            {
                pythons.append(candidate)
            }
            break
        }
        return pythons
    }
}

/// What a receiver saw in one request: its `data` member.
package struct ReceiverReport: Decodable {
    package struct File: Decodable {
        /// Hex of the form name's bytes.
        package var field: String
        /// Hex of the filename's bytes, as the receiver's API gives it; nil when it had none.
        package var filename: String?
        package var size: Int
        package var sha256: String

        package init(field: String, filename: String?, size: Int, sha256: String) {
            self.field = field
            self.filename = filename
            self.size = size
            self.sha256 = sha256
        }
    }

    package var receiver: String
    package var files: [File]
    /// Hex of each text field's name.
    package var fields: [String]

    package init(receiver: String, files: [File], fields: [String]) {
        self.receiver = receiver
        self.files = files
        self.fields = fields
    }
}

/// Hex of the UTF-8 bytes of `text`, the way the receivers report names.
package func hexUTF8(_ text: String) -> String {
    text.utf8.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
}

/// The text whose UTF-8 bytes `hex` spells, for messages.
package func textFromHex(_ hex: String?) -> String {
    guard let hex else { return "(none)" }
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
        bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0x3F)
        index = next
    }
    return String(decoding: bytes, as: UTF8.self).debugDescription
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// A built executable of this package, next to the test bundle (`attache`, `attache-server`).
package func builtExecutable(_ name: String) throws -> String {
    var folders = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path]
    if let executable = Bundle.main.executableURL { folders.append(executable.deletingLastPathComponent().path) }
    folders.append(Bundle.main.bundleURL.deletingLastPathComponent().path)
    for folder in folders {
        let candidate = folder + "/" + name
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw TestFailure("the \(name) executable was not found next to the tests (looked in \(folders)); run `swift build` first")
}

extension ReceiverProcess {
    /// Runs `body` with PHP's built-in server running `Tools/request_echo.php` (PHP's own parser reports
    /// the query, form and JSON it read) on a free port, given its base URL; stops it by its pid after.
    package static func withPHPEcho<T>(_ body: (String) async throws -> T) async throws -> T {
        let tools = ServiceProcess.tools
        let server = try await start(name: "php", ["php", "-n", "-S", "127.0.0.1:0", "-t", tools, tools + "/request_echo.php"])
        do {
            let result = try await body("http://127.0.0.1:\(server.port)")
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }
}

/// The `attache` executable built next to the test bundle.
package func attacheBinary() throws -> String { try builtExecutable("attache") }
