package import Attache

/// One named endpoint of the config file (``EndpointConfigFile``): everything an operator would
/// otherwise repeat as flags on every run.
///
/// Every setting is optional. The commands apply an endpoint first and the flags given on the
/// command line after it, so a flag always wins; what neither names keeps the command's default.
/// Secrets are never values here: `bearer-env`, `user-env`, `header-env` and `seal.key-env` name
/// environment variables, `seal.key-file` a file, and ``EndpointConfigFile`` refuses a file that
/// writes a token, password or key inline.
package struct Endpoint: Sendable, Equatable {
    /// A form field or a header: a name and its value (or, for `header-env`, the variable's name).
    package struct Pair: Sendable, Equatable {
        package var name: String
        package var value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// How the payload is sealed: `[endpoints.NAME.seal]`.
    package struct Seal: Sendable, Equatable {
        package var scheme: SealScheme?
        package var keyEnv: String?
        package var keyFile: String?
        package var base64: Bool?

        package init(scheme: SealScheme? = nil, keyEnv: String? = nil, keyFile: String? = nil, base64: Bool? = nil) {
            self.scheme = scheme
            self.keyEnv = keyEnv
            self.keyFile = keyFile
            self.base64 = base64
        }
    }

    /// The endpoint's name, `NAME` in `[endpoints.NAME]`; empty for "no endpoint".
    package var name = ""
    /// The config file it came from (for messages).
    package var file = ""

    package var url: String?
    package var answerProfile: AnswerProfile?
    package var idPointer: JSONPointer?
    package var fileField: String?
    package var fields: [Pair] = []
    /// Headers with their values, for values that are not secret.
    package var headers: [Pair] = []
    /// Headers whose values are read from environment variables: `value` is the variable's name.
    package var headerEnv: [Pair] = []
    package var bearerEnv: String?
    package var userEnv: String?
    package var userAgent: String?
    package var caFile: String?
    package var pinnedPublicKey: String?
    package var thumbnails: ThumbnailPlacement?
    package var seal = Seal()
    /// clamd's address (`clamd = "unix:/run/clamav/clamd.ctl"`): every file is scanned before it is sealed.
    package var clamd: ClamdAddress?
    /// For an `s3://` URL: the shared files' profile, the signing region, the S3 endpoint, the addressing
    /// style and the key template (`aws-profile`, `region`, `s3-endpoint`, `s3-addressing`, `key-template`).
    /// The keys themselves never: they come from the environment or the shared credentials file.
    package var objectStore = ObjectStoreSettings()

    /// The `s3://` settings of an endpoint.
    package struct ObjectStoreSettings: Sendable, Equatable {
        package var awsProfile: String?
        package var region: String?
        package var s3Endpoint: String?
        package var s3Addressing: S3Addressing?
        package var keyTemplate: String?

        package init() {}

        /// Whether any is set.
        package var isEmpty: Bool { self == ObjectStoreSettings() }
    }
    /// `scan-failure = "refuse" | "send"`.
    package var scanFailure: ScanFailurePolicy?
    /// Seconds.
    package var connectTimeout: Double?
    /// Seconds.
    package var stallTimeout: Double?
    package var attempts: Int?
    /// Seconds.
    package var retryBudget: Double?

    /// An endpoint named `name`, from `file`, with nothing set yet.
    package init(name: String = "", file: String = "") {
        self.name = name
        self.file = file
    }

    /// The empty endpoint: what a command without `--endpoint` applies (nothing).
    package static let none = Endpoint()

    /// Sets the headers, credentials and User-Agent the endpoint names in `configuration`, reading
    /// the secrets from `environment`. Retries, timeouts and TLS are merged with their flags in
    /// ``ConnectionOptions/apply(to:defaults:endpoint:)``; flags for headers and credentials applied
    /// after this replace what it set (``merging(headers:overriddenBy:)``).
    /// - Throws: ``AttacheError`` `.configInvalid` naming the config file when a variable it names is
    ///   not set; the message names the variable, never a value.
    package func applyHeadersAndCredentials(to configuration: inout ConnectionConfiguration, environment: [String: String]) throws {
        if let userAgent { configuration.userAgent = userAgent }
        var named = headers.map { HeaderField(name: $0.name, value: $0.value) }
        for header in headerEnv {
            named.append(HeaderField(name: header.name, value: try secret(header.value, for: "header-env.\(header.name)", environment)))
        }
        configuration.headers = Self.merging(headers: configuration.headers, overriddenBy: named)
        if let bearerEnv {
            configuration.authorization = .bearer(try secret(bearerEnv, for: "bearer-env", environment))
        }
        if let userEnv {
            guard let basic = HTTPAuthorization(userColonPassword: try secret(userEnv, for: "user-env", environment)) else {
                throw problem("user-env: the variable \(userEnv) must hold user:password")
            }
            configuration.authorization = basic
        }
    }

    /// `base` with every header named in `overrides` replaced by the ones there (names compared
    /// without case, as HTTP does), the others kept in order.
    package static func merging(
        headers base: [HeaderField], overriddenBy overrides: [HeaderField]
    ) -> [HeaderField] {
        let replaced = Set(overrides.map { $0.name.lowercased() })
        return base.filter { !replaced.contains($0.name.lowercased()) } + overrides
    }

    /// The form fields of the endpoint with `overrides` (from `--field`) applied: a name given on the
    /// command line replaces every field of that name from the file.
    package func fields(overriddenBy overrides: [Pair]) -> [Pair] {
        let replaced = Set(overrides.map(\.name))
        return fields.filter { !replaced.contains($0.name) } + overrides
    }

    private func secret(_ variable: String, for key: String, _ environment: [String: String]) throws -> String {
        guard let value = environment[variable], !value.isEmpty else {
            throw problem("\(key): the environment variable \(variable) is not set")
        }
        return value
    }

    private func problem(_ message: String) -> AttacheError {
        AttacheError(.configInvalid, stage: .configuration, "endpoint \(name): \(message)", file: file)
    }
}
