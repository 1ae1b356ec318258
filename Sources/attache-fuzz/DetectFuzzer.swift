import Attache
import Foundation

// The detector's fuzz target. Built with `-sanitize=fuzzer -DFUZZING` (Scripts/fuzz.sh), `main`
// starts libFuzzer's driver, which calls `detectAll` with mutated inputs. In a normal build there is
// no libFuzzer, so `main` runs `detectAll` over files named on the command line, which is how a
// crasher found by the fuzzer is replayed: `attache-fuzz crash-<sha1>`.

/// Runs every detection path over one input: whole contents, a prefix of unknown length, with and
/// without a filename that could disagree with the content.
func detectAll(_ bytes: [UInt8]) {
    let detector = MIMEDetector()
    _ = try? detector.detect(contents: bytes, filename: nil)
    _ = try? detector.detect(contents: bytes, filename: "input.mp4", declaredKind: .voice)
    _ = detector.detect(prefix: Array(bytes.prefix(MIMEDetector.headSize)), filename: "input.txt")
}

#if FUZZING
// libFuzzer's driver, called with our own entry point: SwiftPM links an executable's `main` to the
// module's `@main`, so libFuzzer's own `main` is never used.
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
struct DetectFuzzer {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let status = runFuzzerDriver(&argc, &argv) { data, size in
            detectAll(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
            return 0
        }
        exit(status)
    }
}
#else
@main
struct DetectFuzzerReplay {
    static func main() {
        var paths = Array(CommandLine.arguments.dropFirst())
        if paths.first == "--bench" {
            paths.removeFirst()
            bench(paths)
            return
        }
        if paths.isEmpty {
            FileHandle.standardError.write(Data("usage: attache-fuzz FILE... (build with Scripts/fuzz.sh to fuzz)\n".utf8))
            exit(64)
        }
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("attache-fuzz: cannot read \(path)\n".utf8))
                exit(1)
            }
            detectAll([UInt8](data))
        }
        print("ran \(paths.count) input(s) without a crash")
    }

    /// `--bench FILE...`: in-process detections per second on the first 4 KiB of each file, by
    /// cycling through them for about two seconds. Used by Scripts/bench/detect.sh.
    static func bench(_ paths: [String]) {
        let buffers = paths.compactMap { FileManager.default.contents(atPath: $0).map { [UInt8]($0.prefix(MIMEDetector.headSize)) } }
        guard !buffers.isEmpty else {
            FileHandle.standardError.write(Data("usage: attache-fuzz --bench FILE...\n".utf8))
            exit(64)
        }
        let detector = MIMEDetector()
        var count = 0
        var checksum = 0
        let clock = ContinuousClock()
        let start = clock.now
        var elapsed = Duration.zero
        while elapsed < .seconds(2) {
            for buffer in buffers {
                checksum &+= detector.detect(prefix: buffer, filename: nil).mimeType.utf8.count
            }
            count += buffers.count
            elapsed = clock.now - start
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("buffers=\(buffers.count) detections=\(count) seconds=\(String(format: "%.3f", seconds)) per_second=\(Int(Double(count) / seconds)) checksum=\(checksum)")
    }
}
#endif
