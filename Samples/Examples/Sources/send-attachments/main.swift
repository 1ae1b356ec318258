// Sends files to an upload endpoint through the whole Attache pipeline, three ways: from their path,
// from bytes in memory and from an AsyncSequence of chunks; then fetches each stored file back from its
// receipt, opens it with the receipt's key and compares.
//
//   swift run --package-path Samples/Examples send-attachments http://127.0.0.1:8080/upload FILE...
//
// Prints one line per send and per check; exits 1 when any of them failed. FoundationEssentials, not
// Foundation, as the library itself: the program links neither ICU's data nor CoreFoundation.
import Attache
import FoundationEssentials
import Glibc

let arguments = CommandLine.arguments.dropFirst()
guard let url = arguments.first, arguments.count >= 2 else {
    let usage = "usage: send-attachments UPLOAD-URL FILE...\n"
    _ = write(STDERR_FILENO, usage, usage.utf8.count)
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
        guard let file = fopen(path, "rb") else {
            continuation.finish(throwing: CocoaError(.fileReadNoSuchFile))
            return
        }
        defer { fclose(file) }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while case let count = fread(&chunk, 1, chunk.count, file), count > 0 {
            continuation.yield(Array(chunk.prefix(count)))
        }
        continuation.finish()
    }
}

let scratch = FileManager.default.temporaryDirectory.appending(path: "attache-example-\(getpid())")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: scratch) }
var failures = 0

for path in files {
    let bytes = Array(try Data(contentsOf: URL(filePath: path)))
    let name = URL(filePath: path).lastPathComponent
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
            let copy = scratch.appending(path: "\(way)-\(name)")
            _ = try await Downloader().download(receipt: receipt, to: copy.path)
            let back = Array(try Data(contentsOf: copy))
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
exit(failures == 0 ? 0 : 1)
