import ArgumentParser
package import Attache

/// What `upload`, `batch` and `worker` are given that shapes the pipeline: their option groups, side by
/// side. Each command declares the groups itself, one level deep: ArgumentParser builds a group's
/// arguments again for each level it is nested in, and a debug build checks each level again too.
package struct PipelineFlags {
    package var endpointSelection: EndpointOptions
    package var pipeline: PipelineOptions
    package var connection: ConnectionOptions
    package var scanning: ScanOptions
    package var objectStore: ObjectStoreOptions

    package init(
        endpointSelection: EndpointOptions, pipeline: PipelineOptions, connection: ConnectionOptions,
        scanning: ScanOptions, objectStore: ObjectStoreOptions
    ) {
        self.endpointSelection = endpointSelection
        self.pipeline = pipeline
        self.connection = connection
        self.scanning = scanning
        self.objectStore = objectStore
    }

    /// Checks what spans the groups: a scheme that needs a passphrase needs a key flag, unless the
    /// config file may give it (checked once merged, by ``configuration(endpoint:environment:retry:url:scanWait:)``).
    package func validate() throws {
        if let scheme = pipeline.scheme, scheme.usesPassphrase, pipeline.keyFile == nil, pipeline.keyEnv == nil,
            endpointSelection.endpoint == nil
        {
            throw ValidationError("\(scheme) needs a passphrase from --key-file or --key-env")
        }
    }

    /// The pipeline configuration the command runs with: each setting from its flag, else from
    /// `endpoint` (the `--endpoint` of the config file; ``Endpoint/none`` without it), else from
    /// `environment` (`ATTACHE_URL`; the variables that `--key-env`, `--bearer-env`, `--user-env` and the
    /// endpoint's `*-env` keys name), else the default. Reads no process state: the environment is
    /// passed in; the files named (`--key-file`, `--header @FILE`, the CA file) are read as given.
    ///
    /// - Parameter url: what to use when no URL is given anywhere (a dry run); nil makes that an error.
    /// - Parameter scanWait: the `--scan-wait` default in seconds (batch and worker: 600).
    /// - Throws: `ValidationError` (exit 64) when no URL is given, or when merged settings do not fit
    ///   together; ``AttacheError`` for a key that cannot be read (`.invalidKey`, `.fileNotFound`, ...),
    ///   or `.configInvalid` (78) for a variable the endpoint names that is not set.
    package func configuration(
        endpoint: Endpoint = .none, environment: [String: String], retry: RetryPolicy = .standard,
        url fallbackURL: String? = nil, scanWait: Double = 0
    ) throws -> PipelineConfiguration {
        try pipeline.configuration(
            connection: connection, scanning: scanning, objectStore: objectStore, endpoint: endpoint,
            environment: environment, retry: retry, url: fallbackURL, scanWait: scanWait)
    }

    /// ``configuration(endpoint:environment:retry:url:scanWait:)`` as a command runs it: with the endpoint
    /// of `--endpoint` read and the process's environment; an ``AttacheError`` is printed as one line and
    /// becomes its exit status (docs/EXIT-STATUS.md).
    package func resolvedConfiguration(
        retry: RetryPolicy = .standard, url fallbackURL: String? = nil, scanWait: Double = 0
    ) throws -> PipelineConfiguration {
        let endpoint = try endpointSelection.load()
        do {
            return try configuration(
                endpoint: endpoint, environment: CommandIO.environment, retry: retry, url: fallbackURL,
                scanWait: scanWait)
        } catch let error as AttacheError {
            throw Console.failing(error)
        }
    }
}

/// A command that runs the pipeline (`upload`, `batch`, `worker`): it declares the groups of
/// ``PipelineFlags`` itself, each with `@OptionGroup`.
protocol PipelineCommand {
    var endpointSelection: EndpointOptions { get }
    var pipeline: PipelineOptions { get }
    var connection: ConnectionOptions { get }
    var scanning: ScanOptions { get }
    var objectStore: ObjectStoreOptions { get }
}

extension PipelineCommand {
    /// The command's pipeline groups, together.
    var flags: PipelineFlags {
        PipelineFlags(
            endpointSelection: endpointSelection, pipeline: pipeline, connection: connection, scanning: scanning,
            objectStore: objectStore)
    }
}
