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

    /// `--bench [--runs N | --rounds N | --each] FILE...`: in-process detections per second on the
    /// first 4 KiB of each file, cycling through them for about one second per run; prints every run
    /// and the minimum, median and maximum. `--each` prints the mean time per file instead, and
    /// `--rounds N` detects each buffer N times without timing (for instruction counts), for profiling.
    /// Used by Scripts/bench/detect.sh.
    static func bench(_ arguments: [String]) {
        var paths = arguments
        var runs = 5
        var each = false
        var rounds: Int?
        while let option = paths.first, option.hasPrefix("--") {
            paths.removeFirst()
            if option == "--each" {
                each = true
            } else if option == "--runs", let value = paths.first.flatMap({ Int($0) }), value > 0 {
                paths.removeFirst()
                runs = value
            } else if option == "--rounds", let value = paths.first.flatMap({ Int($0) }), value > 0 {
                // A fixed amount of work, for instruction counts (valgrind --tool=callgrind).
                paths.removeFirst()
                rounds = value
            } else {
                FileHandle.standardError.write(Data("attache-fuzz: unknown option \(option)\n".utf8))
                exit(64)
            }
        }
        let buffers = paths.compactMap { FileManager.default.contents(atPath: $0).map { [UInt8]($0.prefix(MIMEDetector.headSize)) } }
        guard !buffers.isEmpty else {
            FileHandle.standardError.write(Data("usage: attache-fuzz --bench [--runs N | --rounds N | --each] FILE...\n".utf8))
            exit(64)
        }
        let detector = MIMEDetector()
        let clock = ContinuousClock()
        func seconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        if let rounds {
            var checksum = 0
            for _ in 0..<rounds {
                for buffer in buffers { checksum &+= detector.detect(prefix: buffer, filename: nil).mimeType.utf8.count }
            }
            print("detections=\(rounds * buffers.count) checksum=\(checksum)")
            return
        }
        if each {
            for (index, buffer) in buffers.enumerated() {
                var checksum = 0
                let start = clock.now
                for _ in 0..<20_000 { checksum &+= detector.detect(prefix: buffer, filename: nil).mimeType.utf8.count }
                let nanoseconds = seconds(clock.now - start) / 20_000 * 1e9
                print("\(String(format: "%8.0f", nanoseconds)) ns  \(paths[index])  (\(checksum))")
            }
            return
        }
        var rates: [Double] = []
        var checksum = 0
        for _ in 0..<runs {
            var count = 0
            let start = clock.now
            var elapsed = Duration.zero
            while elapsed < .seconds(1) {
                for buffer in buffers {
                    checksum &+= detector.detect(prefix: buffer, filename: nil).mimeType.utf8.count
                }
                count += buffers.count
                elapsed = clock.now - start
            }
            let rate = Double(count) / seconds(elapsed)
            rates.append(rate)
            print("buffers=\(buffers.count) detections=\(count) seconds=\(String(format: "%.3f", seconds(elapsed))) per_second=\(Int(rate))")
        }
        rates.sort()
        print("per_second min=\(Int(rates[0])) median=\(Int(rates[rates.count / 2])) max=\(Int(rates[rates.count - 1])) runs=\(runs) checksum=\(checksum)")
    }
}
#endif
