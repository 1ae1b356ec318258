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
        "form (multipart/form-data, the default for POST) or raw (the sealed bytes alone with their content type, as media APIs such as Matrix's /_matrix/media/v3/upload take them; always for PUT). A raw body carries no fields; answers are read as the status profile unless --answer-profile says otherwise.",
        valueName: "body"))
    package var body: UploadBody?

    @Option(help: ArgumentHelp(
        "Store files on this Matrix homeserver (https://matrix.example.org), with the access token from --bearer-env: media ids reserved first where the server offers it, so a rerun stores nothing twice; each receipt's matrix.content is the m.room.message content to send. Seals with --scheme matrix unless --scheme none; no --url needed.",
        valueName: "homeserver"))
    package var matrix: String?

    @Option(help: ArgumentHelp(
        "With --matrix: reserved media ids without content at one time (default 4: Synapse allows 5 per user, max_pending_media_uploads). Raise it with the homeserver's limit for more uploads in flight.",
        valueName: "n"))
    package var matrixPendingUploads: Int?

    @Flag(help: "With --matrix: post each file (one request) rather than reserve its media id first (two). Faster on a busy homeserver, but a run killed after a post and before its journal entry may store that file twice.")
    package var matrixNoReserve = false

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
        "With --url s3://: the object key under the prefix; placeholders {idempotencyKey} {ext} {filename} {stem} {date} {kind} {random} (default: {idempotencyKey}{ext}); {sha256} names the object by its content: the store is the index, a copy already there is not sent again, and the seal key is derived from the content.",
        valueName: "template"))
    package var keyTemplate: String?

    @Option(help: ArgumentHelp(
        "With --url s3://: sealed files of at least this size go as multipart uploads (bytes, or with K, M, G; default: 64M).",
        valueName: "size"))
    package var multipartThreshold: ByteSize?

    @Option(help: ArgumentHelp(
        "With --url s3://: the part size of multipart uploads (at least 5M; default: 16M, raised to stay within 10,000 parts).",
        valueName: "size"))
    package var partSize: ByteSize?

    @Option(help: ArgumentHelp("With --url s3://: parts sent at once (default: 4).", valueName: "n"))
    package var partsInFlight: Int?

    @Option(help: ArgumentHelp(
        "With --url s3://: per-part checksums (and the object's composite): when-supported (the default: when the store says it takes them), when-required (none for uploads) or off.",
        valueName: "mode"))
    package var checksum: MultipartSettings.ChecksumMode?

    @Option(help: ArgumentHelp(
        "With --url s3://: the per-part checksum: crc32c (the default) or sha256.", valueName: "algorithm"))
    package var checksumAlgorithm: MultipartSettings.ChecksumAlgorithm?

    @Option(help: ArgumentHelp(
        "With --url s3://: how a part's checksum goes: trailer (summed while the part streams, in an aws-chunked body), header (summed just before the part goes) or auto (the default: trailer, header from the first part the store refuses as aws-chunked on).",
        valueName: "how"))
    package var checksumDelivery: MultipartSettings.ChecksumDelivery?

    @Option(help: ArgumentHelp(
        "With --url s3://: when retries are spent, abort the store's multipart upload (the default) or keep it for a later run under the same idempotency key.",
        valueName: "what"))
    package var onGiveUp: MultipartSettings.GiveUp?

    package func validate() throws {
        if let partsInFlight, !(1...64).contains(partsInFlight) { throw ValidationError("--parts-in-flight must be 1...64") }
        if let partSize, partSize.bytes < 5 << 20 {
            throw ValidationError("--part-size must be at least 5M (S3's smallest part)")
        }
    }

    /// Applies these options to `configuration`, whose URL and answer settings are already set.
    ///
    /// - Throws: ``AttacheError`` `.invalidArgument` (stage `configuration`, exit 64) when no credentials are
    ///   found for an `s3://` URL or its endpoint cannot be used; `ValidationError` for options that need an
    ///   `s3://` URL.
    package func apply(
        to configuration: inout PipelineConfiguration, answerProfileGiven: Bool, endpoint: Endpoint = .none,
        environment: [String: String]
    ) throws {
        let isBucket = S3Location(configuration.url) != nil
        let bucketOnly: [Any?] = [
            awsProfile, region, s3Endpoint, s3Addressing, keyTemplate, multipartThreshold, partSize, partsInFlight, checksum,
            onGiveUp, checksumAlgorithm, checksumDelivery,
        ]
        if !isBucket, bucketOnly.contains(where: { $0 != nil }) || !endpoint.objectStore.isEmpty {
            throw ValidationError(
                "--aws-profile, --region, --s3-endpoint, --s3-addressing, --key-template and the multipart options "
                    + "(or the config file's aws-profile, region, s3-endpoint, s3-addressing, key-template) need "
                    + "--url s3://BUCKET/PREFIX/")
        }
        if let matrix {
            guard matrix.lowercased().hasPrefix("https://") || matrix.lowercased().hasPrefix("http://") else {
                throw ValidationError("--matrix takes the homeserver's base URL, https://…")
            }
            if isBucket { throw ValidationError("give --matrix or --url s3://, not both") }
            if method != nil || body != nil { throw ValidationError("--matrix sends each file as the media API asks: --method and --body do not apply") }
            guard configuration.connection.authorization != nil else {
                throw ValidationError("--matrix needs the user's access token: --bearer-env NAME (never on the command line)")
            }
            var endpoint = MatrixEndpoint(homeserver: matrix)
            if let matrixPendingUploads {
                guard (1...256).contains(matrixPendingUploads) else { throw ValidationError("--matrix-pending-uploads must be 1...256") }
                endpoint.maximumPendingUploads = matrixPendingUploads
            }
            if matrixNoReserve { endpoint.reservesMediaIDs = false }
            configuration.matrix = endpoint
            if !answerProfileGiven { configuration.answers = .init(profile: .matrix) }
            return
        }
        if matrixPendingUploads != nil || matrixNoReserve {
            throw ValidationError("--matrix-pending-uploads and --matrix-no-reserve need --matrix")
        }
        if let body { configuration.body = body }
        if isBucket {
            if method == .post { throw ValidationError("--url s3:// sends objects: --method POST does not apply") }
            if body != nil { throw ValidationError("--url s3:// sends objects: --body does not apply") }
            // Each from its flag, else from the config file's endpoint (then the AWS variables and files).
            let file = endpoint.objectStore
            var store = try ObjectStoreEndpoint.resolve(
                url: configuration.url, profile: awsProfile ?? file.awsProfile, region: region ?? file.region,
                endpointURL: s3Endpoint ?? file.s3Endpoint, addressing: s3Addressing ?? file.s3Addressing ?? .auto,
                environment: environment)
            if let keyTemplate = keyTemplate ?? file.keyTemplate { store.keyTemplate = ObjectKeyTemplate(keyTemplate) }
            if let multipartThreshold { store.multipart.threshold = multipartThreshold.bytes }
            if let partSize { store.multipart.partSize = partSize.bytes }
            if let partsInFlight { store.multipart.partsInFlight = partsInFlight }
            if let checksum { store.multipart.checksum = checksum }
            if let checksumAlgorithm { store.multipart.checksumAlgorithm = checksumAlgorithm }
            if let checksumDelivery { store.multipart.checksumDelivery = checksumDelivery }
            if let onGiveUp { store.multipart.onGiveUp = onGiveUp }
            configuration.objectStore = store
            configuration.method = .put
        } else if let method {
            configuration.method = method
        }
        if configuration.method == .put, !answerProfileGiven {
            configuration.answers = .init(profile: .s3Put)
        } else if configuration.sendsRawBody, !answerProfileGiven {
            configuration.answers = .init(profile: .status)
        }
    }
}
