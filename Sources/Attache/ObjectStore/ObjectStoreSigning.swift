/// Who signs the requests to an object store: Attache, with credentials it holds, or the client's adapters.
///
/// With ``sigV4(_:)`` every request is signed here with AWS Signature Version 4, again for each attempt (the
/// date is part of the signature). With ``adapters`` Attache holds no credentials: each request goes
/// unsigned through the client's adapters (``ClientInterceptors/adapters``) before every attempt, as any
/// request does, and they sign it. An adapter sees the request's method, its URL (the
/// object's, with the operation's query: `?uploads`, `?partNumber=3&uploadId=…`) and its headers, and
/// returns the URL and headers to send: most often a URL presigned by whoever holds the credentials (a
/// backend's signing service, as Uppy's `signPart` asks its server), or SigV4 headers. So a process without
/// the store's keys can run a whole multipart upload; a retried part is signed again, since the adapters run
/// for each attempt.
///
/// What the adapters are given to sign, for an object under the endpoint's ``ObjectStoreEndpoint/location``:
/// - a single `PUT` of the object (`PutObject`), with its `Content-Type`;
/// - a multipart upload's steps: `GET ?uploads&prefix=KEY` (an earlier upload under the key, to continue),
///   `HEAD` of the object, `POST ?uploads` (`CreateMultipartUpload`, with `Content-Type` and
///   `x-amz-checksum-algorithm`), `PUT ?partNumber=N&uploadId=ID` for each part (with its
///   `x-amz-checksum-crc32c` and `x-amz-sdk-checksum-algorithm` when the upload takes checksums: a part's
///   checksum goes as a header here, never as an `aws-chunked` trailer), `GET ?uploadId=ID` (`ListParts`,
///   when continuing), `POST ?uploadId=ID` (the completion, with `If-None-Match: *`), a `HEAD` with
///   `x-amz-checksum-mode: ENABLED` when the completion names no checksum, and `DELETE ?uploadId=ID` when
///   it gives up;
/// - a download's `GET`, with its `Range`.
///
/// S3 refuses a presigned request that carries an `x-amz-*` header its signature does not cover: a signer
/// signs the headers it is given (boto3's `generate_presigned_url` does, passed as the operation's
/// parameters), and the request then sends exactly those. A URL that expires mid-upload is no trouble
/// when the signer makes a new one for each attempt; a retrier that answers ``RetryDecision/retry`` to the
/// store's `403` "Request has expired" sends the request again, to be signed anew.
///
/// ```swift
/// /// Presigns every request to the bucket with the backend's signing service.
/// struct BucketSigner: RequestAdapter {
///     let service: SigningService   // holds the keys, e.g. behind an HTTP API
///     func adapt(_ request: ClientRequest) async throws -> ClientRequest {
///         guard request.url.hasPrefix("https://media.s3.eu-west-1.amazonaws.com/") else { return request }
///         var request = request
///         request.url = try await service.presign(
///             method: request.method.rawValue, url: request.url, headers: request.headers, expiresIn: 300)
///         return request
///     }
/// }
/// let store = ObjectStoreEndpoint(
///     location: S3Location(bucket: "media", prefix: "uploads/"), signing: .adapters, region: "eu-west-1")
/// let client = AttacheClient(interceptors: ClientInterceptors(adapters: [BucketSigner(service: service)]))
/// ```
public enum ObjectStoreSigning: Sendable {
    /// Signed by Attache with AWS Signature Version 4 and these credentials, again for each attempt.
    case sigV4(AWSCredentials)
    /// Left unsigned, for the client's adapters to sign (or presign) before each attempt.
    case adapters
}
