// Sends the files named on the command line to an upload endpoint through the whole Attache
// pipeline, one at a time, then the same files again as a journaled batch.
//
//   swift run attache-example http://127.0.0.1:8080/upload Samples/photo.jpg Samples/voice.ogg
import Attache
import AttacheBatch
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard let url = arguments.first, arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: attache-example UPLOAD-URL FILE...\n".utf8))
    exit(64)
}
let files = Array(arguments.dropFirst())

var configuration = PipelineConfiguration(url: url)
configuration.fields = [UploadField(name: "appVersion", value: "5.2"), UploadField(name: "platform", value: "server")]
configuration.connection.retry = RetryPolicy(maximumAttempts: 5, budget: .seconds(120))
configuration.transform.image.maxSide = 2560  // the "HD" size
let pipeline = AttachmentPipeline(configuration: configuration)

for path in files {
    do {
        let receipt = try await pipeline.send(Attachment(path: path, fields: [UploadField(name: "chatId", value: "42")]))
        print(receipt.path, receipt.fileId ?? "-", receipt.kind, receipt.mimeType, "key:", receipt.seal.key?.base64 ?? "-")
    } catch let error as AttacheError {
        print("failed:", error)
    }
}

// Many files: bounded concurrency, a SQLite journal, every file exactly once across crashes.
let journal = NSTemporaryDirectory() + "/attache-example-\(getpid()).sqlite"
let batch = BatchUploader(configuration: BatchConfiguration(pipeline: pipeline, journalPath: journal))
for try await event in batch.run(files) {
    switch event {
    case .succeeded(let file, let receipt): print("batch:", file.path, receipt.fileId ?? "-")
    case .failed(let file, let error): print("batch failed:", file.path, error)
    default: break
    }
}
