/// A parser that reads hostile input, wrapped as a fuzz target: one call per input, any bytes at all.
///
/// A target returns normally for every input, however malformed: a parser that rejects an input
/// throws an ``AttacheError`` inside and that is the expected outcome. The only failures are a crash
/// (a Swift trap, a sanitizer report) or a broken invariant, which a target turns into a trap with a
/// message saying which invariant. `Scripts/fuzz.sh` runs each target under libFuzzer with its seed
/// corpus in `Tests/FuzzCorpus/<name>/`; the unit tests replay every corpus file through every target.
///
/// ```swift
/// for target in FuzzTarget.allCases { target.run(Array("not an image".utf8)) }
/// ```
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Every content sniffer and metadata parser behind `MIMEDetector`.
    case detect
    /// `Unsealer` for every scheme and transfer encoding: `stream-gcm` headers and segments (in memory
    /// and the parallel file path), `signal`, the legacy schemes and strict base64 decoding.
    case unseal
    /// `ResponseInterpreter` and `JSONValue` over a server's status, headers and body.
    case interpret
    /// `ImageRecompressor` over JPEG, PNG, WebP, GIF and BMP headers and decoders, with a small pixel cap.
    case image
    /// `LibHEIFDecoder` over HEIC, HEIF and AVIF: libheif, and Attache's grid walk and tile decoder.
    case heif
    /// The request layer's readers of answers: XML property lists and encrypted JSON forms.
    case requests
    /// The `stream-gcm` range reader: a range opened where it starts is those bytes of the whole stream.
    case sealedRange = "sealed-range"

    /// Runs the target over one input.
    public func run(_ bytes: [UInt8]) {
        switch self {
        case .detect: DetectTarget.run(bytes)
        case .unseal: UnsealTarget.run(bytes)
        case .interpret: InterpretTarget.run(bytes)
        case .image: ImageTarget.run(bytes)
        case .heif: HEIFTarget.run(bytes)
        case .requests: RequestsTarget.run(bytes)
        case .sealedRange: SealedRangeTarget.run(bytes)
        }
    }
}

/// Stops the process with `message` when a target's invariant does not hold; libFuzzer keeps the input.
func invariant(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz invariant broken: \(message())") }
}
