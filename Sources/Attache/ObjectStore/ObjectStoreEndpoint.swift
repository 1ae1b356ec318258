package import FoundationEssentials

/// A bucket of an S3-compatible object store that attachments go to as objects of their own: the other way
/// to send, beside multipart POSTs and resumable uploads.
///
/// Set it as ``PipelineConfiguration/objectStore`` (with ``PipelineConfiguration/url`` `s3://BUCKET/PREFIX/`)
/// and `send(_:options:)`, the batch and the queue worker put each sealed attachment under a key made from
/// ``keyTemplate``, as one `PutObject`, or as a multipart upload when it is large. Its requests are signed
/// with AWS Signature Version 4 as ``signing`` says: by Attache, with credentials, region and endpoint found
/// as the AWS CLI finds them (``resolve(url:profile:region:endpointURL:addressing:environment:)``), or by the
/// client's adapters, for a process that holds no credentials of the store (``ObjectStoreSigning/adapters``).
///
/// ```swift
/// var configuration = PipelineConfiguration(url: "s3://media/uploads/")
/// configuration.objectStore = try ObjectStoreEndpoint.resolve(url: "s3://media/uploads/")
/// let receipt = try await AttachmentPipeline(configuration: configuration).send(Attachment(path: "clip.mp4"))
/// print(receipt.object?.key ?? "-", receipt.object?.etag ?? "-")
/// ```
///
/// Without credentials, every request presigned by the adapters of the pipeline's client
/// (``ObjectStoreSigning`` shows such an adapter):
///
/// ```swift
/// configuration.objectStore = ObjectStoreEndpoint(
///     location: S3Location(bucket: "media", prefix: "uploads/"), signing: .adapters, region: "eu-west-1")
/// let client = AttacheClient(interceptors: ClientInterceptors(adapters: [BucketSigner(service: service)]))
/// let receipt = try await AttachmentPipeline(configuration: configuration, client: client).send(Attachment(path: "clip.mp4"))
/// ```
public struct ObjectStoreEndpoint: Sendable {
    /// The bucket and the prefix keys go under.
    public var location: S3Location
    /// Who signs the requests: Attache with credentials (``ObjectStoreSigning/sigV4(_:)``), or the client's
    /// adapters (``ObjectStoreSigning/adapters``).
    public var signing: ObjectStoreSigning
    /// The region signatures are scoped to (`us-east-1` unless told otherwise).
    public var region: String
    /// `https://s3.REGION.amazonaws.com`, or another store's (`http://127.0.0.1:9000`).
    public var endpointURL: String
    /// Path-style or virtual-hosted-style URLs.
    public var addressing: S3Addressing
    /// How an object's key is made under ``S3Location/prefix``; see ``ObjectKeyTemplate``.
    public var keyTemplate: ObjectKeyTemplate
    /// How large attachments go in parts.
    package var multipart = MultipartSettings()

    /// Creates an endpoint whose requests Attache signs with `credentials`; `endpointURL` nil means AWS's
    /// endpoint of `region`.
    public init(
        location: S3Location, credentials: AWSCredentials, region: String = "us-east-1", endpointURL: String? = nil,
        addressing: S3Addressing = .auto, keyTemplate: ObjectKeyTemplate = .standard
    ) {
        self.init(
            location: location, signing: .sigV4(credentials), region: region, endpointURL: endpointURL,
            addressing: addressing, keyTemplate: keyTemplate)
    }

    /// Creates an endpoint whose requests are signed as `signing` says; `endpointURL` nil means AWS's
    /// endpoint of `region`.
    ///
    /// ```swift
    /// let store = ObjectStoreEndpoint(location: S3Location(bucket: "media"), signing: .adapters, region: "eu-west-1")
    /// ```
    public init(
        location: S3Location, signing: ObjectStoreSigning, region: String = "us-east-1", endpointURL: String? = nil,
        addressing: S3Addressing = .auto, keyTemplate: ObjectKeyTemplate = .standard
    ) {
        self.location = location
        self.signing = signing
        self.region = region
        self.endpointURL = endpointURL ?? "https://s3.\(region).amazonaws.com"
        self.addressing = addressing
        self.keyTemplate = keyTemplate
    }

    /// The endpoint for `url` (`s3://BUCKET/PREFIX/`), with `environment` (the process's when nil), found as the AWS CLI finds its settings: credentials by
    /// ``AWSCredentials/resolve(profile:environment:)``; the region from `region`, else `AWS_REGION`, else
    /// `AWS_DEFAULT_REGION`, else the profile's `region` in the config file, else `us-east-1`; the endpoint from
    /// `endpointURL`, else `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`, else the profile's `s3` →
    /// `endpoint_url` or `endpoint_url` in the config file, else AWS's.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`): `url` is not `s3://BUCKET/…`,
    ///   no credentials are found, the endpoint is not an `http(s)` URL.
    public static func resolve(
        url: String, profile: String? = nil, region: String? = nil, endpointURL: String? = nil,
        addressing: S3Addressing = .auto, environment: [String: String]? = nil
    ) throws -> ObjectStoreEndpoint {
        guard let location = S3Location(url) else {
            throw AttacheError(.invalidArgument, stage: .configuration, "expected s3://BUCKET/PREFIX, got \(url)")
        }
        let environment = environment ?? ProcessInfo.processInfo.environment
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let credentials = try AWSCredentials.resolve(profile: profile, environment: environment)
        let section = AWSSharedConfig(environment: environment).config(profile: profile ?? value("AWS_PROFILE") ?? "default") ?? [:]
        let endpoint = ObjectStoreEndpoint(
            location: location, credentials: credentials,
            region: region ?? value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? section["region"] ?? "us-east-1",
            endpointURL: endpointURL ?? value("AWS_ENDPOINT_URL_S3") ?? value("AWS_ENDPOINT_URL")
                ?? section["s3.endpoint_url"] ?? section["endpoint_url"],
            addressing: addressing)
        _ = try endpoint.address(forKey: "")
        return endpoint
    }

    /// The address of the object `key` (the whole key, prefix included).
    package func address(forKey key: String, query: [(String, String)] = []) throws -> S3ObjectAddress {
        try S3ObjectAddress(
            endpoint: endpointURL, bucket: location.bucket, key: key, addressing: addressing, query: query)
    }

    /// The address of the object an `s3://BUCKET/KEY` URL names, in this endpoint's store: the URL's bucket
    /// (not ``location``'s) and its key as written, not percent-decoded (as the AWS CLI reads it).
    ///
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`) when `url` names no object.
    package func address(ofObject url: String) throws -> S3ObjectAddress {
        guard let object = S3Location(url), !object.prefix.isEmpty, !object.prefix.hasSuffix("/") else {
            throw AttacheError(.invalidArgument, stage: .configuration, "expected s3://BUCKET/KEY, got \(url)", file: url)
        }
        return try S3ObjectAddress(
            endpoint: endpointURL, bucket: object.bucket, key: object.prefix, addressing: addressing)
    }

    /// The signer of this endpoint's requests; nil when the client's adapters sign them.
    package var signer: SigV4Signer? {
        guard case .sigV4(let credentials) = signing else { return nil }
        return SigV4Signer(credentials: credentials, region: region)
    }
}

/// How an object's key is made: a text with placeholders, put under the location's prefix.
///
/// | placeholder | value |
/// |---|---|
/// | `{idempotencyKey}` | the upload's idempotency key (journalled by the batch and the queue, so a rerun writes the same key) |
/// | `{ext}` | the extension of the filename sent, with its dot (`.jpg`), or nothing |
/// | `{filename}`, `{stem}` | the filename sent, and without its extension |
/// | `{date}` | the UTC date of the send, `yyyy-MM-dd` |
/// | `{kind}` | `image`, `video`, `voice`, `sticker` or `file` |
/// | `{random}` | 32 random hex digits |
/// | `{sha256}` | the SHA-256 of the source file, hex: a *content-addressed* object (see below) |
///
/// The default, ``standard``, is `{idempotencyKey}{ext}`: a rerun of the same upload writes the same object.
///
/// With `{sha256}` the store itself is the index of what is stored: the file is sealed with material
/// derived from its content and the pipeline's settings (not a fresh key), so every sender of the same
/// file seals it to the same object. The upload asks first (`HEAD`): an object already under the name, of
/// the size and key check this content gives (`x-amz-meta-attache-key-check`), is taken as it is and
/// nothing is sent (the receipt's `dedup` says so); otherwise it is written with `If-None-Match: *`, so a
/// concurrent sender never overwrites it. An object of other bytes under the name is never overwritten:
/// the file fails with `replay-mismatch`. What it reveals: the store sees one object for all copies, and
/// anyone holding the file can derive its key and find its object.
public struct ObjectKeyTemplate: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The template's text, placeholders and all (`{date}/{idempotencyKey}{ext}`), as given to ``init(_:)``.
    public var text: String

    /// `{idempotencyKey}{ext}`.
    public static let standard = ObjectKeyTemplate("{idempotencyKey}{ext}")

    /// Creates a template.
    public init(_ text: String) { self.text = text }

    /// The text.
    public var description: String { text }

    /// True when the template names objects by their content (`{sha256}`).
    public var namesContent: Bool { text.contains("{sha256}") }

    /// The key for one object, `prefix` first; `sha256` fills `{sha256}`.
    package func key(
        prefix: String, idempotencyKey: String, filename: String, kind: MessageKind, date: Date = Date(),
        sha256: String? = nil
    ) -> String {
        let stem = PathText.deletingExtension(filename)
        let ext = stem.count < filename.count ? String(filename.dropFirst(stem.count + 1)) : ""
        let day = String(UTCTimestamp.iso8601(date).prefix(10))
        var key = text
        for (name, value) in [
            ("{idempotencyKey}", idempotencyKey), ("{ext}", ext.isEmpty ? "" : "." + ext), ("{filename}", filename),
            ("{stem}", stem), ("{date}", day), ("{kind}", kind.rawValue), ("{sha256}", sha256 ?? idempotencyKey),
        ] {
            key = key.replacing(name, with: value)
        }
        if key.contains("{random}") {
            let pieces = key.split(separator: "{random}", omittingEmptySubsequences: false)
            key = pieces.dropFirst().reduce(String(pieces[0])) { $0 + Uploader.makeIdempotencyKey() + $1 }
        }
        let joined = prefix.isEmpty || prefix.hasSuffix("/") ? prefix + key : prefix + "/" + key
        return joined
    }
}
