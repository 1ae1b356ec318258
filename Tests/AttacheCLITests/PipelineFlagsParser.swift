import ArgumentParser
@testable import AttacheCLI

/// The option groups of ``PipelineFlags`` on a command line of their own, as `upload`, `batch` and
/// `worker` declare them, with the check that spans them.
struct PipelineFlagsParser: ParsableArguments, PipelineCommand {
    @OptionGroup var endpointSelection: EndpointOptions
    @OptionGroup var pipeline: PipelineOptions
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var scanning: ScanOptions
    @OptionGroup(title: "Object storage") var objectStore: ObjectStoreOptions

    func validate() throws { try flags.validate() }
}
