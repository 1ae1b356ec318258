import FoundationEssentials

/// An AWS access key: its id, its secret and, for temporary credentials, a session token.
///
/// The secret is never part of a description, a log line, an error or a receipt: it is only read to
/// derive a signing key. Load credentials as the AWS CLI finds them with
/// ``AWSCredentials/resolve(profile:environment:)``.
///
/// ```swift
/// let credentials = try AWSCredentials.resolve(profile: "media")
/// ```
public struct AWSCredentials: Sendable, CustomStringConvertible {
    /// The access key id (`AKIA…`); not a secret.
    package let accessKeyId: String
    /// The secret access key.
    private let secret: String
    /// The session token of temporary credentials, sent as `x-amz-security-token`.
    package let sessionToken: String?

    /// Creates credentials from their parts.
    public init(accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyId = accessKeyId
        self.secret = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// The key id and whether there is a token; never the secret.
    public var description: String {
        "AWSCredentials(\(accessKeyId)\(sessionToken == nil ? "" : ", with a session token"))"
    }

    /// Calls `body` with the secret's bytes (to derive a signing key).
    func withSecret<T>(_ body: ([UInt8]) throws -> T) rethrows -> T {
        try body(Array(secret.utf8))
    }

    /// Credentials found as the AWS CLI finds them (in `environment`, the process's when nil): with an explicit `profile`, that profile of the shared
    /// credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), else of the config file
    /// (`AWS_CONFIG_FILE`, else `~/.aws/config`); without one, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` first, then the profile `AWS_PROFILE` names
    /// (`default` when it names none) of the same files.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`) when none are found, or a
    ///   profile has a key id without a secret; the message names the places looked at, never a value.
    public static func resolve(
        profile: String? = nil, environment: [String: String]? = nil
    ) throws -> AWSCredentials {
        let environment = environment ?? ProcessInfo.processInfo.environment
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if profile == nil, let id = value("AWS_ACCESS_KEY_ID") {
            guard let secret = value("AWS_SECRET_ACCESS_KEY") else {
                throw AttacheError(
                    .invalidArgument, stage: .configuration,
                    "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
            }
            return AWSCredentials(accessKeyId: id, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"))
        }
        let name = profile ?? value("AWS_PROFILE") ?? "default"
        let files = AWSSharedConfig(environment: environment)
        for section in [files.credentials(profile: name), files.config(profile: name)] {
            guard let section, let id = section["aws_access_key_id"] else { continue }
            guard let secret = section["aws_secret_access_key"] else {
                throw AttacheError(
                    .invalidArgument, stage: .configuration,
                    "the AWS profile \(name) has aws_access_key_id but no aws_secret_access_key")
            }
            return AWSCredentials(accessKeyId: id, secretAccessKey: secret, sessionToken: section["aws_session_token"])
        }
        throw AttacheError(
            .invalidArgument, stage: .configuration,
            "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give the profile \(name) keys in "
                + "\(files.credentialsPath) or \(files.configPath)")
    }
}
