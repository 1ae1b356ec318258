import AttacheCore

/// Every detection path over one input: whole contents, a prefix of unknown length, with and without
/// a filename that could disagree with the content.
enum DetectTarget {
    static func run(_ bytes: [UInt8]) {
        let detector = MIMEDetector()
        _ = try? detector.detect(contents: bytes, filename: nil)
        _ = try? detector.detect(contents: bytes, filename: "input.mp4", declaredKind: .voice)
        _ = detector.detect(prefix: Array(bytes.prefix(MIMEDetector.headSize)), filename: "input.txt")
    }
}
