package import ArgumentParser
package import Attache
import FoundationEssentials

/// Object storage: a presigned PUT URL (`--method PUT`), or `--url s3://BUCKET/PREFIX/` with SigV4-signed
/// requests and AWS credentials found as the AWS CLI finds them (never from argv).
package struct ObjectStoreOptions: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp(
        "POST (default: a multipart/form-data form) or PUT (the sealed bytes alone as the body, e.g. to a presigned PUT URL; answers read as s3-put unless --answer-profile says otherwise).",
        valueName: "method"))
    package var method: UploadMethod?

    @Option(help: ArgumentHelp(
        "With --url s3://: the AWS profile of the shared credentials and config files (default: $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY, else $AWS_PROFILE, else default).",
        valueName: "name"))
    package var awsProfile: String?

    @Option(help: ArgumentHelp(
        "With --url s3://: the region requests are signed for (default: $AWS_REGION, the profile's region, us-east-1).",
        valueName: "region"))
    package var region: String?

    @Option(help: ArgumentHelp(
        "With --url s3://: the S3 endpoint, e.g. http://127.0.0.1:9000 (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the profile's endpoint_url, AWS's).",
        valueName: "url"))
    package var s3Endpoint: String?

    @Option(help: ArgumentHelp(
        "With --url s3://: path (ENDPOINT/BUCKET/KEY, MinIO style), virtual (BUCKET.HOST/KEY) or auto (virtual for AWS, path otherwise; the default).",
        valueName: "style"))
    package var s3Addressing: S3Addressing?

    @Option(help: ArgumentHelp(
        "With --url s3://: the object key under the prefix; placeholders {idempotencyKey} {ext} {filename} {stem} {date} {kind} {random} (default: {idempotencyKey}{ext}).",
        valueName: "template"))
    package var keyTemplate: String?

    /// Applies these options to `configuration`, whose URL and answer settings are already set.
    ///
    /// - Throws: ``AttacheError`` `.invalidArgument` (stage `configuration`, exit 64) when no credentials are
    ///   found for an `s3://` URL or its endpoint cannot be used; `ValidationError` for options that need an
    ///   `s3://` URL.
    package func apply(
        to configuration: inout PipelineConfiguration, answerProfileGiven: Bool, environment: [String: String]
    ) throws {
        let isBucket = S3Location(configuration.url) != nil
        if !isBucket, awsProfile != nil || region != nil || s3Endpoint != nil || s3Addressing != nil || keyTemplate != nil {
            throw ValidationError("--aws-profile, --region, --s3-endpoint, --s3-addressing and --key-template need --url s3://BUCKET/PREFIX/")
        }
        if isBucket {
            if method == .post { throw ValidationError("--url s3:// sends objects: --method POST does not apply") }
            var store = try ObjectStoreEndpoint.resolve(
                url: configuration.url, profile: awsProfile, region: region, endpointURL: s3Endpoint,
                addressing: s3Addressing ?? .auto, environment: environment)
            if let keyTemplate { store.keyTemplate = ObjectKeyTemplate(keyTemplate) }
            configuration.objectStore = store
            configuration.method = .put
        } else if let method {
            configuration.method = method
        }
        if configuration.method == .put, !answerProfileGiven {
            configuration.answers = .init(profile: .s3Put)
        }
    }
}
