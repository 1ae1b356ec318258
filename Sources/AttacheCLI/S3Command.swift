package import ArgumentParser

/// `attache s3 abort-stale`: maintenance of an object store bucket.
package struct S3Command: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "s3",
        abstract: "Maintain an S3-compatible bucket that attachments are sent to.",
        subcommands: [S3AbortStaleCommand.self])
}
