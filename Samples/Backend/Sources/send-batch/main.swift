// Sends files and folders as one journaled batch: bounded concurrency, a SQLite journal beside the run,
// every file sent exactly once even when the run is killed and started again with the same journal.
//
//   swift run --package-path Samples/Backend send-batch http://127.0.0.1:8080/upload JOURNAL FILE...
//
// Prints one line per file; exits 1 when any of them failed.
import Attache
import AttacheBatch
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count >= 3, let url = arguments.first else {
    FileHandle.standardError.write(Data("usage: send-batch UPLOAD-URL JOURNAL FILE...\n".utf8))
    exit(64)
}
let journal = arguments.dropFirst().first!
let files = Array(arguments.dropFirst(2))

var configuration = PipelineConfiguration(url: url)
configuration.connection.retry = RetryPolicy(maximumAttempts: 5, budget: .seconds(120))
let pipeline = try AttachmentPipeline(configuration: configuration)

var failures = 0
let batch = BatchUploader(configuration: BatchConfiguration(pipeline: pipeline, journalPath: journal))
for try await event in batch.run(files) {
    switch event {
    case .succeeded(let file, let receipt): print("batch", file.path, receipt.fileId ?? "-")
    case .failed(let file, let error):
        print("batch failed", file.path, error)
        failures += 1
    default: break
    }
}
exit(failures == 0 ? 0 : 1)
