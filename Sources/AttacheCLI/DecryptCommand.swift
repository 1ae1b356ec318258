package import ArgumentParser
import AttacheCore
import FoundationEssentials

/// `attache decrypt IN -o OUT --key-file K [--scheme S] [--base64]`, or
/// `attache decrypt IN -o OUT --scheme matrix --file-info INFO.json`
package struct DecryptCommand: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Decrypt and verify a file made by `attache encrypt`, streaming.",
        discussion: """
            OUT is written only when the whole input verified. Tampered, truncated, reordered or \
            foreign data, a wrong key and a damaged header each fail with their own message. The \
            legacy-cbc and legacy-ecb schemes are INSECURE and cannot detect tampering.

            With -o - (standard output) or an existing FIFO or device (such as /dev/stdout), the \
            plaintext streams there instead: stream-gcm releases each segment only once it verified, \
            but a failure later leaves what was already written, and the exit status says so.

            matrix: the key, IV and SHA-256 come from --file-info, a JSON file holding the message's \
            EncryptedFile object (or an object with it under "file"); the hash is checked before any \
            plaintext is written.
            """)

    @Argument(help: "The sealed file.")
    var input: String

    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Where to write the plaintext; - for standard output. An existing FIFO or device is written in place.",
        valueName: "output"))
    var output: String

    @OptionGroup var key: SealKeyOptions

    @Option(help: "stream-gcm | signal | matrix | legacy-cbc (insecure) | legacy-ecb (insecure) | none.")
    var scheme = SealScheme.streamGCM

    @Option(help: ArgumentHelp(
        "matrix only: a JSON file with the EncryptedFile object (key JWK, iv, hashes.sha256, v).", valueName: "path"))
    var fileInfo: String?

    @Flag(help: "The input is base64 text (RFC 4648, no line breaks).")
    var base64 = false

    @Option(help: "signal only: the real plaintext length, to strip the bucket padding.")
    var plaintextLength: Int64?

    package func validate() throws {
        if scheme == .matrix {
            guard fileInfo != nil else { throw ValidationError("--scheme matrix needs --file-info") }
            guard key.keyFile == nil, key.keyEnv == nil else {
                throw ValidationError("--scheme matrix takes its key from --file-info, not --key-file or --key-env")
            }
        } else {
            guard fileInfo == nil else { throw ValidationError("--file-info is for --scheme matrix") }
            try key.validate(creating: false)
        }
        if let plaintextLength, plaintextLength < 0 { throw ValidationError("--plaintext-length must be ≥ 0") }
    }

    package func run() async throws {
        try await reportingErrors {
            let encoding: TransferEncoding = base64 ? .base64 : .binary
            let unsealer =
                if let fileInfo {
                    try Unsealer(matrixFile: try Self.readFileInfo(fileInfo), transferEncoding: encoding)
                } else {
                    Unsealer(
                        scheme: scheme, key: try key.load(for: scheme), transferEncoding: encoding,
                        plaintextByteCount: plaintextLength)
                }
            let (input, output) = (input, output)
            try await BlockingPool.shared.run { try unsealer.unseal(fileAt: input, to: output) }
        }
    }
}

extension DecryptCommand {
    /// Reads a Matrix `EncryptedFile` from a JSON file: the object itself, or a message content or
    /// receipt seal that holds it under `file` or `encryptedFile`.
    /// - Throws: ``AttacheError`` `.fileNotFound`/`.fileUnreadable`, or `.invalidArgument` naming the file
    ///   when it is not such JSON (the message never repeats the key).
    static func readFileInfo(_ path: String) throws -> MatrixEncryptedFile {
        let bytes = try EncryptCommand.readWholeFile(path)
        struct Wrapper: Decodable {
            var file: MatrixEncryptedFile?
            var encryptedFile: MatrixEncryptedFile?
        }
        let decoder = JSONDecoder()
        if let file = try? decoder.decode(MatrixEncryptedFile.self, from: Data(bytes)) { return file }
        if let wrapper = try? decoder.decode(Wrapper.self, from: Data(bytes)),
            let file = wrapper.file ?? wrapper.encryptedFile
        {
            return file
        }
        throw AttacheError(
            .invalidArgument, stage: .seal,
            "not a Matrix EncryptedFile (JSON with key, iv, hashes.sha256 and v)", file: path)
    }
}
