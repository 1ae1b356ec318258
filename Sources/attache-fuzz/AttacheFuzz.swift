import AttacheFuzzTargets
import Attache
import Foundation

// The fuzzers' executable. Built with `-sanitize=fuzzer -DFUZZING` (Scripts/fuzz.sh), `main` starts
// libFuzzer's driver on the target named by the first argument, which calls it with mutated inputs.
// In a normal build there is no libFuzzer, and `main` runs a target over files, which is how a
// crasher the fuzzer found is replayed (`attache-fuzz unseal crash-<sha1>`), and how Scripts/fuzz.sh
// checks the corpora before fuzzing.

let usage = """
    usage: attache-fuzz TARGET [libFuzzer options] [CORPUS...]    (a build with Scripts/fuzz.sh)
           attache-fuzz TARGET PATH...       replay files, or every file in directories, through TARGET
           attache-fuzz --all PATH...        replay them through every target
           attache-fuzz --write-seeds DIR    write the generated seeds to DIR/<target>/
           attache-fuzz --bench [--runs N | --rounds N | --each] FILE...
    targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))

    """

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data(message.utf8))
    exit(status)
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

/// The target libFuzzer calls. Written once in `main` before the driver starts and only read after, on
/// the driver's one thread; a C callback cannot capture it.
nonisolated(unsafe) var selectedTarget = FuzzTarget.detect

@main
struct AttacheFuzz {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2, let target = FuzzTarget(rawValue: arguments[1]) else {
            fail(usage, status: 64)
        }
        selectedTarget = target
        // libFuzzer sees the command line without the target's name.
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: arguments.count)
        argv[0] = CommandLine.unsafeArgv[0]
        for index in 2..<arguments.count { argv[index - 1] = CommandLine.unsafeArgv[index] }
        argv[arguments.count - 1] = nil
        var argc = CInt(arguments.count - 1)
        var driverArgv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
        let status = runFuzzerDriver(&argc, &driverArgv) { data, size in
            selectedTarget.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
            return 0
        }
        exit(status)
    }
}
#else
@main
struct AttacheFuzzReplay {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let first = arguments.first else { fail(usage, status: 64) }
        arguments.removeFirst()
        switch first {
        case "--bench":
            bench(arguments)
        case "--write-seeds":
            guard arguments.count == 1 else { fail(usage, status: 64) }
            do {
                try SeedWriter.write(to: arguments[0])
            } catch {
                fail("attache-fuzz: \(error)\n", status: 1)
            }
        case "--all":
            replay(FuzzTarget.allCases, arguments)
        default:
            guard let target = FuzzTarget(rawValue: first) else {
                fail("attache-fuzz: unknown target or option \(first)\n" + usage, status: 64)
            }
            replay([target], arguments)
        }
    }

    /// Runs every file named in `paths` (directories: every file in them, sorted) through `targets`.
    static func replay(_ targets: [FuzzTarget], _ paths: [String]) {
        guard !paths.isEmpty else { fail(usage, status: 64) }
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                fail("attache-fuzz: no such file or directory: \(path)\n", status: 1)
            }
            if isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                files += names.sorted().map { (path as NSString).appendingPathComponent($0) }
            } else {
                files.append(path)
            }
        }
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else {
                fail("attache-fuzz: cannot read \(file)\n", status: 1)
            }
            let bytes = [UInt8](data)
            for target in targets { target.run(bytes) }
        }
        print("ran \(files.count) input(s) through \(targets.map(\.rawValue).joined(separator: ", ")) without a crash")
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
                let nanoseconds = (clock.now - start).seconds / 20_000 * 1e9
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
            let rate = Double(count) / elapsed.seconds
            rates.append(rate)
            print("buffers=\(buffers.count) detections=\(count) seconds=\(String(format: "%.3f", elapsed.seconds)) per_second=\(Int(rate))")
        }
        rates.sort()
        print("per_second min=\(Int(rates[0])) median=\(Int(rates[rates.count / 2])) max=\(Int(rates[rates.count - 1])) runs=\(runs) checksum=\(checksum)")
    }
}
#endif
