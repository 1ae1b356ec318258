// Sends files to an upload endpoint through the whole Attache pipeline, three ways: from their path,
// from bytes in memory and from an AsyncSequence of chunks; fetches each stored file back from its
// receipt, opens it with the receipt's key and compares; then sends them again as a journaled batch.
//
//   swift run --package-path Samples/Examples send-attachments http://127.0.0.1:8080/upload FILE...
//
// Prints one line per send and per check; exits 1 when any of them failed.
import Attache
import AttacheBatch
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard let url = arguments.first, arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: send-attachments UPLOAD-URL FILE...\n".utf8))
    exit(64)
}
let files = Array(arguments.dropFirst())

var configuration = PipelineConfiguration(url: url)
// "System parameters": form fields sent with every upload.
configuration.fields = [UploadField(name: "appVersion", value: "5.2"), UploadField(name: "platform", value: "server")]
configuration.connection.retry = RetryPolicy(maximumAttempts: 5, budget: .seconds(120))
configuration.transform.image.maxSide = 2560  // the "HD" size
let pipeline = try AttachmentPipeline(configuration: configuration)

/// The file's bytes as chunks of 64 KiB, the way a request body or a download arrives.
func chunks(of path: String) -> AsyncThrowingStream<[UInt8], any Error> {
    AsyncThrowingStream { continuation in
        guard let handle = FileHandle(forReadingAtPath: path) else {
            continuation.finish(throwing: CocoaError(.fileNoSuchFile))
            return
        }
        while let data = try? handle.read(upToCount: 64 * 1024), !data.isEmpty {
            continuation.yield(Array(data))
        }
        try? handle.close()
        continuation.finish()
    }
}

let scratch = NSTemporaryDirectory() + "attache-example-\(getpid())"
try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: scratch) }
var failures = 0

for path in files {
    let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    let name = (path as NSString).lastPathComponent
    let size = Int64(bytes.count)
    let attachments: [(way: String, attachment: Attachment)] = [
        ("path", Attachment(path: path, fields: [UploadField(name: "chatId", value: "42")])),
        ("memory", Attachment(bytes: bytes, filename: name)),
        ("stream", Attachment(stream: chunks(of: path), filename: name, byteCount: size)),
    ]
    for (way, attachment) in attachments {
        do {
            let receipt = try await pipeline.send(attachment)
            // The key is redacted when a receipt is printed; `.base64` is the one way to read it.
            print("sent", way, name, receipt.fileId ?? "-", receipt.kind, receipt.mimeType, receipt.seal.key.map { "\($0)" } ?? "-")

            // Later, wherever the receipt was kept: fetch, verify and decrypt in one call.
            let copy = scratch + "/\(way)-\(name)"
            _ = try await Downloader().download(receipt: receipt, to: copy)
            let back = Array(try Data(contentsOf: URL(fileURLWithPath: copy)))
            // A recompressed image comes back as what Transform made, not as the original.
            let same = receipt.transform.recompressed ? Int64(back.count) == receipt.transform.byteCount : back == bytes
            print(same ? "checked" : "MISMATCH", way, name)
            if !same { failures += 1 }
        } catch let error as AttacheError {
            // The file, the stage, the code; a server's refusal is typed.
            print("failed", way, name, error.code, error.stage, error.rejection.map { "status \($0.status)" } ?? "")
            failures += 1
        }
    }
}

// Many files: bounded concurrency, a SQLite journal, every file exactly once across crashes.
let journal = scratch + "/batch.sqlite"
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
