package import ArgumentParser
import Attache
import AttacheCore
import FoundationEssentials

/// `attache s3 abort-stale --url s3://BUCKET/PREFIX/ --older-than HOURS [--abort]`
package struct S3AbortStaleCommand: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "abort-stale",
        abstract: "List, or with --abort abort, multipart uploads older than N hours under a prefix.",
        discussion: """
            A multipart upload that a run gave up on with --on-give-up keep, or that was killed and never run \
            again, keeps its parts (and their storage) until it is completed or aborted. This lists the ones \
            started more than --older-than hours ago under the URL's prefix, one per line (--json: one \
            object per line), and with --abort aborts each.

            Credentials, region and endpoint are found as for upload --url s3:// (AWS_* variables, the shared \
            files and --aws-profile, --region, --s3-endpoint). Exit status: 0 done; 77 the store refused; \
            69/75 it could not be reached.
            """)

    @OptionGroup package var global: GlobalOptions

    @Option(help: ArgumentHelp("The bucket and prefix: s3://BUCKET/PREFIX/.", valueName: "url"))
    package var url: String

    @Option(help: ArgumentHelp("Only uploads started more than this many hours ago (default: 24).", valueName: "hours"))
    package var olderThan: Double = 24

    @Flag(help: "Abort the uploads found (default: only list them).")
    package var abort = false

    @Flag(help: "Print one JSON object per line.")
    package var json = false

    @OptionGroup package var access: S3AccessOptions

    @OptionGroup package var connection: ConnectionOptions

    package func validate() throws {
        guard S3Location(url) != nil else { throw ValidationError("--url must be s3://BUCKET/PREFIX/") }
        guard olderThan >= 0 else { throw ValidationError("--older-than must not be negative") }
    }

    private struct Line: Encodable {
        let key: String
        let uploadId: String
        let initiated: String?
        let aborted: Bool
    }

    package func run() async throws {
        _ = global.bootstrapLogging()
        do {
            let store = try ObjectStoreEndpoint.resolve(
                url: url, profile: access.awsProfile, region: access.region, endpointURL: access.s3Endpoint,
                addressing: access.s3Addressing ?? .auto)
            var settings = ConnectionConfiguration()
            try connection.apply(to: &settings, environment: ProcessInfo.processInfo.environment)
            let client = AttacheClient(connection: settings)
            let cutoff = Date().addingTimeInterval(-olderThan * 3600)
            for upload in try await store.pendingMultipartUploads(startedBefore: cutoff, client: client) {
                if abort { try await store.abort(upload, client: client) }
                let initiated = upload.initiated.map { String(describing: $0) }
                if json {
                    Console.outJSON(Line(key: upload.key, uploadId: upload.uploadId, initiated: initiated, aborted: abort))
                } else {
                    Console.out("\(abort ? "aborted" : "pending") \(upload.key) \(upload.uploadId) \(initiated ?? "-")")
                }
            }
        } catch let error as AttacheError {
            throw Console.failing(error)
        }
    }
}
