package import ArgumentParser
package import Attache
import FoundationEssentials

/// How `download` reaches `s3://BUCKET/KEY` objects: the same profile, region, endpoint and addressing
/// uploads to `--url s3://` use, credentials found as the AWS CLI finds them (never from argv).
package struct S3AccessOptions: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp(
        "For s3:// URLs: the AWS profile of the shared credentials and config files (default: $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY, else $AWS_PROFILE, else default).",
        valueName: "name"))
    package var awsProfile: String?

    @Option(help: ArgumentHelp(
        "For s3:// URLs: the region requests are signed for (default: $AWS_REGION, the profile's region, us-east-1).",
        valueName: "region"))
    package var region: String?

    @Option(help: ArgumentHelp(
        "For s3:// URLs: the S3 endpoint, e.g. http://127.0.0.1:9000 (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the profile's endpoint_url, AWS's).",
        valueName: "url"))
    package var s3Endpoint: String?

    @Option(help: ArgumentHelp(
        "For s3:// URLs: path (ENDPOINT/BUCKET/KEY), virtual (BUCKET.HOST/KEY) or auto (virtual for AWS, path otherwise; the default).",
        valueName: "style"))
    package var s3Addressing: S3Addressing?

    /// Whether `url` is an object's `s3://` URL (any case of the scheme).
    package static func isObjectURL(_ url: String) -> Bool { url.lowercased().hasPrefix("s3://") }

    /// Whether `url` is one `download` takes: `http(s)://` or `s3://`.
    package static func isDownloadURL(_ url: String) -> Bool {
        url.hasPrefix("http://") || url.hasPrefix("https://") || isObjectURL(url)
    }

    /// The store `urls`' `s3://` objects are fetched from, or nil when none is one; resolved once, from
    /// these options and `environment`.
    ///
    /// - Throws: ``AttacheError`` `.invalidArgument` (stage `configuration`, exit 64) when no credentials are
    ///   found or the endpoint cannot be used.
    package func store(for urls: [String], environment: [String: String]) throws -> ObjectStoreEndpoint? {
        guard let first = urls.first(where: Self.isObjectURL) else { return nil }
        return try ObjectStoreEndpoint.resolve(
            url: first, profile: awsProfile, region: region, endpointURL: s3Endpoint, addressing: s3Addressing ?? .auto,
            environment: environment)
    }
}
