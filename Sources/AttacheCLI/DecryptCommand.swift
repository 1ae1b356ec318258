package import ArgumentParser
import AttacheCore

/// `attache decrypt IN -o OUT --key-file K [--scheme S] [--base64]`
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
            """)

    @Argument(help: "The sealed file.")
    var input: String

    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Where to write the plaintext; - for standard output. An existing FIFO or device is written in place.",
        valueName: "output"))
    var output: String

    @OptionGroup var key: SealKeyOptions

    @Option(help: "stream-gcm | signal | legacy-cbc (insecure) | legacy-ecb (insecure) | none.")
    var scheme = SealScheme.streamGCM

    @Flag(help: "The input is base64 text (RFC 4648, no line breaks).")
    var base64 = false

    @Option(help: "signal only: the real plaintext length, to strip the bucket padding.")
    var plaintextLength: Int64?

    package func validate() throws {
        try key.validate(creating: false)
        if let plaintextLength, plaintextLength < 0 { throw ValidationError("--plaintext-length must be ≥ 0") }
    }

    package func run() async throws {
        try await reportingErrors {
            let unsealer = Unsealer(
                scheme: scheme, key: try key.load(for: scheme), transferEncoding: base64 ? .base64 : .binary,
                plaintextByteCount: plaintextLength)
            let (input, output) = (input, output)
            try await BlockingPool.shared.run { try unsealer.unseal(fileAt: input, to: output) }
        }
    }
}
