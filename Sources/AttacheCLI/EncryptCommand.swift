package import ArgumentParser
package import AttacheCore
import FoundationEssentials
import Glibc

/// `attache encrypt IN -o OUT --key-file K [--new-key] [--scheme S] [--base64]`
package struct EncryptCommand: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "encrypt",
        abstract: "Encrypt a file of any size, streaming, with a per-attachment key.",
        discussion: """
            Schemes: stream-gcm (default; chunked AES-256-GCM, authenticated, see docs/FORMAT.md), \
            signal (Signal's attachment format; 64-byte key), matrix (Matrix's AES-256-CTR attachments; \
            --file-info writes the EncryptedFile object), none, and the INSECURE legacy-cbc and \
            legacy-ecb (unauthenticated AES of the old NSData+AES256 code, for old servers only; their \
            key file holds a passphrase). Keys are read from a file or an environment variable, never \
            from the command line. Prints the sizes (and, for signal, the digest) on standard output,             or on standard error when -o - sends the sealed bytes there.
            """)

    @Argument(help: "The file to encrypt.")
    var input: String

    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Where to write the sealed file (replaced only on success); - for standard output. An existing FIFO or device is written in place.",
        valueName: "output"))
    var output: String

    @OptionGroup var key: SealKeyOptions

    @Flag(help: "Create --key-file with a fresh random key (mode 0600; refuses to overwrite).")
    var newKey = false

    @Option(help: "stream-gcm | signal | matrix | legacy-cbc (insecure) | legacy-ecb (insecure) | none.")
    var scheme = SealScheme.streamGCM

    @Option(help: ArgumentHelp(
        "matrix only: write the EncryptedFile object (it holds the key) to this new file, mode 0600.",
        valueName: "path"))
    var fileInfo: String?

    @Flag(help: "Write base64 text (RFC 4648, no line breaks) instead of binary.")
    var base64 = false

    @Option(help: ArgumentHelp(
        "Benchmark: also seal the input N times in memory, each with a fresh key, and print the time per seal.",
        visibility: .hidden))
    var repeatInMemory: Int?

    package func validate() throws {
        try key.validate(creating: newKey)
        if fileInfo != nil, scheme != .matrix { throw ValidationError("--file-info is for --scheme matrix") }
    }

    package func run() async throws {
        try await reportingErrors {
            let attachmentKey: AttachmentKey
            if newKey, let path = key.keyFile {
                attachmentKey = AttachmentKey.random(for: scheme)
                try attachmentKey.write(toNewFile: path)
            } else {
                attachmentKey = try key.load(for: scheme)
            }
            let sealer = Sealer(scheme: scheme, key: attachmentKey, transferEncoding: base64 ? .base64 : .binary)
            let payload = try sealer.seal(try FileSource(path: input))
            let output = output
            try await BlockingPool.shared.run { try payload.write(toFile: output) }
            var line = "\(scheme) \(input) -> \(output): plaintext \(payload.plaintextByteCount) bytes, sealed \(payload.byteCount) bytes"
            if let digest = payload.digest { line += ", sha256 \(digest)" }
            if let fileInfo, let file = payload.matrixFile(url: nil, key: attachmentKey) {
                try Self.writeFileInfo(file, to: fileInfo)
            }
            if output == "-" { writeErrorLine(line) } else { writeOutputLine(line) }
            if let repeatInMemory, repeatInMemory > 0 {
                let perSeal = try measureInMemorySeals(scheme: scheme, count: repeatInMemory)
                writeOutputLine("in-process: \(repeatInMemory) seals of \(payload.plaintextByteCount) bytes, \(perSeal) µs per seal")
            }
        }
    }
}

extension EncryptCommand {
    /// Writes a Matrix `EncryptedFile` as JSON to a new file with mode 0600 (it holds the key).
    /// - Throws: ``AttacheError`` `.fileUnwritable` naming `path` (an existing file is never replaced).
    static func writeFileInfo(_ file: MatrixEncryptedFile, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let json = try? encoder.encode(file) else {
            throw AttacheError(.internalError, stage: .seal, "cannot encode the EncryptedFile", file: path)
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw AttacheError(.fileUnwritable, stage: .seal, "cannot create the file info (it must not exist)", file: path)
        }
        defer { close(fd) }
        var bytes = Array(json) + [0x0A]
        let failed = bytes.withUnsafeMutableBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return true }
                offset += n
            }
            return false
        }
        guard !failed else {
            unlink(path)
            throw AttacheError(.fileUnwritable, stage: .seal, "cannot write the file info", file: path)
        }
    }

    /// Seals the input's bytes `count` times from memory, as the pipeline does for small attachments:
    /// a fresh key, a sealer, one reader read to the end. Returns microseconds per seal.
    func measureInMemorySeals(scheme: SealScheme, count: Int) throws -> String {
        let bytes = try Self.readWholeFile(input)
        let source = DataSource(bytes)
        let encoding: TransferEncoding = base64 ? .base64 : .binary
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            for _ in 0..<count {
                let sealer = Sealer(scheme: scheme, key: .random(for: scheme), transferEncoding: encoding)
                let reader = try sealer.seal(source).makeReader()
                while try buffer.withUnsafeMutableBytes({ try reader.read(into: $0) }) > 0 {}
            }
        }
        return Self.twoDecimals(elapsed.seconds * 1e6 / Double(count))
    }

    /// The whole file in memory (the benchmark's inputs are small attachments).
    static func readWholeFile(_ path: String) throws -> [UInt8] {
        let source = try FileSource(path: path)
        var bytes = [UInt8](repeating: 0, count: Int(source.byteCount))
        let reader = try source.makeReader()
        let count = try bytes.withUnsafeMutableBytes { try reader.readFully(into: $0) }
        bytes.removeSubrange(count...)
        return bytes
    }

    /// `value` rounded to two decimals, as text ("5.10").
    static func twoDecimals(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

/// Where the key comes from: a file or an environment variable, never an argument.
package struct SealKeyOptions: ParsableArguments {
    package init() {}

    @Option(help: "Key file: 32 or 64 raw bytes or their base64 text (legacy schemes: a passphrase).")
    var keyFile: String?

    @Option(help: "Environment variable holding the key as base64 text (legacy schemes: a passphrase).")
    var keyEnv: String?

    func validate(creating: Bool) throws {
        guard (keyFile == nil) != (keyEnv == nil) else {
            throw ValidationError("give exactly one of --key-file and --key-env")
        }
        if creating, keyFile == nil { throw ValidationError("--new-key needs --key-file") }
    }

    func load(for scheme: SealScheme) throws -> AttachmentKey {
        try Self.loadKey(file: keyFile, environmentVariable: keyEnv, for: scheme)
    }

    /// Reads a key (or, for the legacy schemes, a passphrase) from a file or an environment variable.
    package static func loadKey(file keyFile: String?, environmentVariable keyEnv: String?, for scheme: SealScheme) throws
        -> AttachmentKey
    {
        if keyFile == nil, let capture = CommandIO.capture {
            return try loadKey(file: nil, environmentVariable: keyEnv, for: scheme, environment: capture.environment)
        }
        return switch (keyFile, scheme.usesPassphrase) {
        case (let path?, false): try AttachmentKey(contentsOfFile: path)
        case (let path?, true): try AttachmentKey(passphraseFile: path)
        case (nil, false): try AttachmentKey(environmentVariable: keyEnv ?? "")
        case (nil, true): try AttachmentKey(passphraseEnvironmentVariable: keyEnv ?? "")
        }
    }

    /// ``loadKey(file:environmentVariable:for:)`` with the variable looked up in `environment` rather than
    /// in the process's: the same keys, the same errors.
    package static func loadKey(
        file keyFile: String?, environmentVariable keyEnv: String?, for scheme: SealScheme, environment: [String: String]
    ) throws -> AttachmentKey {
        if keyFile != nil { return try loadKey(file: keyFile, environmentVariable: nil, for: scheme) }
        let name = keyEnv ?? ""
        guard let value = environment[name] else {
            throw AttacheError(.invalidKey, stage: .seal, "the environment variable \(name) is not set")
        }
        if scheme.usesPassphrase {
            guard !value.isEmpty else {
                throw AttacheError(.invalidKey, stage: .seal, "the environment variable \(name) is not set or empty")
            }
            return AttachmentKey(passphrase: value)
        }
        do {
            return try AttachmentKey(base64: value)
        } catch {
            throw AttacheError(
                .invalidKey, stage: .seal, "the environment variable \(name) must hold the base64 text of a 32- or 64-byte key")
        }
    }
}

/// Prints an ``AttacheError`` as one line on standard error and exits with its status in
/// ``ExitStatus/table``.
package func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as AttacheError {
        throw Console.failing(error)
    }
}

/// Writes one line for people on standard error, control characters escaped (``TerminalText``).
package func writeErrorLine(_ line: String) {
    writeToStandardError(TerminalText.escaping(line) + "\n")
}

/// Writes one line for people on standard output, control characters escaped (``TerminalText``).
package func writeOutputLine(_ line: String) {
    writeToStandardOutput(TerminalText.escaping(line) + "\n")
}

/// Writes `text` to standard error in one `write` where possible (short writes are retried).
package func writeToStandardError(_ text: String) {
    writeText(text, to: STDERR_FILENO)
}

/// Writes `text` to standard output, unbuffered, in one `write` where possible.
package func writeToStandardOutput(_ text: String) {
    writeText(text, to: STDOUT_FILENO)
}

private func writeText(_ text: String, to descriptor: Int32) {
    var text = text
    text.withUTF8 { CommandIO.write(UnsafeRawBufferPointer($0), to: descriptor) }
}
