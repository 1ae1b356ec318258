import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// The signer against AWS's published Signature Version 4 examples: requests of the generic test suite
/// (`aws-sig-v4-test-suite`, service `service`) and the worked S3 examples of the S3 API reference. Each
/// compares the canonical request and the string to sign where they are published, so a wrong line shows
/// as that line, not only as another signature.
@Suite("SigV4 signer")
struct SigV4SignerTests {
    static let suiteCredentials = AWSCredentials(
        accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    static let s3Credentials = AWSCredentials(
        accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    let suite = SigV4Signer(credentials: suiteCredentials, region: "us-east-1", service: "service")
    let s3 = SigV4Signer(credentials: s3Credentials, region: "us-east-1")

    func suiteHeaders(_ extra: [HeaderField] = []) -> [HeaderField] {
        [HeaderField(name: "Host", value: "example.amazonaws.com"), HeaderField(name: "X-Amz-Date", value: "20150830T123600Z")]
            + extra
    }

    @Test("get-vanilla")
    func getVanilla() throws {
        let signed = try suite.sign(
            method: "GET", path: "/", query: [], headers: suiteHeaders(), payloadHash: SigV4Signer.emptyPayloadHash,
            amzDate: "20150830T123600Z")
        #expect(
            signed.canonicalRequest
                == "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
                + SigV4Signer.emptyPayloadHash)
        #expect(
            signed.authorization
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                + "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
    }

    @Test("get-vanilla-query-order-key-case: parameters sorted by name")
    func queryOrder() throws {
        let signed = try suite.sign(
            method: "GET", path: "/", query: [("Param2", "value2"), ("Param1", "value1")], headers: suiteHeaders(),
            payloadHash: SigV4Signer.emptyPayloadHash, amzDate: "20150830T123600Z")
        #expect(signed.canonicalRequest.split(separator: "\n", omittingEmptySubsequences: false)[2] == "Param1=value1&Param2=value2")
        #expect(signed.signature == "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")
    }

    @Test("post-x-www-form-urlencoded: a signed body and content type")
    func formBody() throws {
        let body = Array("Param1=value1".utf8)
        let hash = hex(try SHA256Digest.hash(body))
        #expect(hash == "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")
        let signed = try suite.sign(
            method: "POST", path: "/", query: [],
            headers: suiteHeaders([HeaderField(name: "Content-Type", value: "application/x-www-form-urlencoded")]),
            payloadHash: hash, amzDate: "20150830T123600Z")
        #expect(
            signed.stringToSign
                == "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
                + "42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281")
        #expect(signed.signature == "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a")
    }

    /// S3 API reference, "Example: GET Object": a ranged GET of `test.txt`.
    @Test("S3 GET Object with a Range header")
    func s3GetObject() throws {
        let date = try #require(UTCTimestamp.parse("2013-05-24T00:00:00Z"))
        let signed = try s3.signS3(
            method: "GET", path: "/test.txt", query: [], host: "examplebucket.s3.amazonaws.com",
            headers: [HeaderField(name: "Range", value: "bytes=0-9")], payloadHash: SigV4Signer.emptyPayloadHash, date: date)
        #expect(
            signed.canonicalRequest
                == "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
                + "x-amz-content-sha256:\(SigV4Signer.emptyPayloadHash)\nx-amz-date:20130524T000000Z\n\n"
                + "host;range;x-amz-content-sha256;x-amz-date\n\(SigV4Signer.emptyPayloadHash)")
        #expect(
            signed.stringToSign
                == "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                + "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972")
        #expect(signed.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(signed.headers.contains { $0.name == "Authorization" && $0.value.hasSuffix(signed.signature) })
        #expect(!signed.headers.contains { $0.name.lowercased() == "host" })
    }

    /// S3 API reference, "Example: PUT Object": a key with `$`, a signed body and a storage class.
    @Test("S3 PUT Object: key encoding and a signed body")
    func s3PutObject() throws {
        let date = try #require(UTCTimestamp.parse("2013-05-24T00:00:00Z"))
        let hash = hex(try SHA256Digest.hash(Array("Welcome to Amazon S3.".utf8)))
        let address = try S3ObjectAddress(
            endpoint: "https://s3.amazonaws.com", bucket: "examplebucket", key: "test$file.text", addressing: .virtual)
        #expect(address.url == "https://examplebucket.s3.amazonaws.com/test%24file.text")
        let signed = try s3.signS3(
            method: "PUT", path: address.path, query: [], host: address.host,
            headers: [
                HeaderField(name: "Date", value: "Fri, 24 May 2013 00:00:00 GMT"),
                HeaderField(name: "x-amz-storage-class", value: "REDUCED_REDUNDANCY"),
            ], payloadHash: hash, date: date)
        #expect(
            signed.stringToSign
                == "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                + "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d")
        #expect(signed.signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    /// S3 API reference, "Example: GET Bucket (List Objects)": query parameters.
    @Test("S3 list objects: a signed query")
    func s3ListObjects() throws {
        let date = try #require(UTCTimestamp.parse("2013-05-24T00:00:00Z"))
        let address = try S3ObjectAddress(
            endpoint: "https://s3.amazonaws.com", bucket: "examplebucket", key: "", addressing: .virtual,
            query: [("prefix", "J"), ("max-keys", "2")])
        #expect(address.url == "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J")
        let signed = try s3.signS3(
            method: "GET", path: address.path, query: address.query, host: address.host, headers: [],
            payloadHash: SigV4Signer.emptyPayloadHash, date: date)
        #expect(signed.signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    @Test("a session token is signed and sent; the secret is in no header and no description")
    func sessionToken() throws {
        let credentials = AWSCredentials(accessKeyId: "AKID", secretAccessKey: "s3cr3t-never-shown", sessionToken: "token-1")
        let signer = SigV4Signer(credentials: credentials, region: "eu-west-1")
        let signed = try signer.signS3(
            method: "PUT", path: "/b/k", query: [], host: "127.0.0.1:9000", headers: [],
            payloadHash: SigV4Signer.unsignedPayload, date: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(signed.headers.contains { $0.name == "x-amz-security-token" && $0.value == "token-1" })
        #expect(signed.authorization.contains("x-amz-security-token"))
        #expect(signed.authorization.contains("/20231114/eu-west-1/s3/aws4_request"))
        #expect(signed.canonicalRequest.hasSuffix("\nUNSIGNED-PAYLOAD"))
        let everything = signed.headers.map { "\($0.name): \($0.value)" }.joined() + "\(credentials)" + String(describing: signer)
        #expect(!everything.contains("s3cr3t"))
    }

    @Test("URI encoding: unreserved kept, everything else %XX, slashes as asked")
    func uriEncoding() {
        #expect(S3Addressing.uriEncode("a b+c/d~e_f.g-h", encodeSlash: false) == "a%20b%2Bc/d~e_f.g-h")
        #expect(S3Addressing.uriEncode("a/b", encodeSlash: true) == "a%2Fb")
        #expect(S3Addressing.uriEncode("ключ*", encodeSlash: false) == "%D0%BA%D0%BB%D1%8E%D1%87%2A")
    }

    @Test("path-style and virtual-hosted-style addresses")
    func addressing() throws {
        let path = try S3ObjectAddress(endpoint: "http://127.0.0.1:9000", bucket: "media", key: "a b/c.jpg", addressing: .auto)
        #expect(path.url == "http://127.0.0.1:9000/media/a%20b/c.jpg")
        #expect(path.host == "127.0.0.1:9000")
        let aws = try S3ObjectAddress(
            endpoint: "https://s3.eu-west-1.amazonaws.com", bucket: "media", key: "k", addressing: .auto)
        #expect(aws.url == "https://media.s3.eu-west-1.amazonaws.com/k")
        #expect(throws: AttacheError.self) {
            try S3ObjectAddress(endpoint: "https://s3.amazonaws.com", bucket: "Not_DNS", key: "k", addressing: .virtual)
        }
        #expect(S3Location("s3://media/uploads/") == S3Location(bucket: "media", prefix: "uploads/"))
        #expect(S3Location("s3://media") == S3Location(bucket: "media", prefix: ""))
        #expect(S3Location("https://media/x") == nil)
    }
}
