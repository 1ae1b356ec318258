// Scripts/bench/send-many.sh's library side: every file of a folder sent at once through one
// AttachmentPipeline (the default seal: a fresh stream-gcm key per file), as a backend that receives a
// burst of attachments would. Prints "files N seconds S" (first send to last receipt) and exits 1 when
// any send failed.
//
//   attache-send-many-bench UPLOAD-URL FOLDER
import Attache
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: attache-send-many-bench UPLOAD-URL FOLDER\n".utf8))
    exit(64)
}
let folder = arguments[2]
let paths = try FileManager.default.contentsOfDirectory(atPath: folder).sorted().map { folder + "/" + $0 }
var configuration = PipelineConfiguration(url: arguments[1])
configuration.connection.retry = RetryPolicy(maximumAttempts: 3, budget: .seconds(120))
let pipeline = try AttachmentPipeline(configuration: configuration)

let clock = ContinuousClock()
let start = clock.now
let failures = await withTaskGroup(of: Int.self) { group in
    for path in paths {
        group.addTask {
            do {
                _ = try await pipeline.send(Attachment(path: path))
                return 0
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                return 1
            }
        }
    }
    var failed = 0
    for await result in group { failed += result }
    return failed
}
let elapsed = clock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
print("files \(paths.count - failures) seconds \(seconds)")
exit(failures == 0 ? 0 : 1)
