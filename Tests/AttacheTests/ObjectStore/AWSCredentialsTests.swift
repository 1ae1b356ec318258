import AttacheTestSupport
import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// Credentials, region and endpoint found as the AWS CLI finds them: environment first, then a profile of
/// the shared credentials and config files.
@Suite("AWS credentials and config files")
struct AWSCredentialsTests {
    func files(credentials: String, config: String) throws -> (ScratchFolder, [String: String]) {
        let folder = try ScratchFolder(prefix: "attache-aws")
        try folder.write("credentials", credentials)
        try folder.write("config", config)
        return (
            folder,
            ["AWS_SHARED_CREDENTIALS_FILE": folder.path + "/credentials", "AWS_CONFIG_FILE": folder.path + "/config",
             "HOME": folder.path]
        )
    }

    static let credentialsFile = """
        [default]
        aws_access_key_id = AKIDDEFAULT
        aws_secret_access_key = default-secret

        # a comment
        [media]
        aws_access_key_id=AKIDMEDIA
        aws_secret_access_key=media-secret
        aws_session_token = media-token
        """
    static let configFile = """
        [default]
        region = eu-central-1

        [profile media]
        region = eu-west-1
        s3 =
          endpoint_url = http://127.0.0.1:9000
        [profile onlyconfig]
        aws_access_key_id = AKIDCONFIG
        aws_secret_access_key = config-secret
        endpoint_url = http://127.0.0.1:9999
        """

    @Test("the environment's keys win unless a profile is named")
    func environmentFirst() throws {
        let (folder, environment) = try files(credentials: Self.credentialsFile, config: Self.configFile)
        defer { folder.remove() }
        var withKeys = environment
        withKeys["AWS_ACCESS_KEY_ID"] = "AKIDENV"
        withKeys["AWS_SECRET_ACCESS_KEY"] = "env-secret"
        #expect(try AWSCredentials.resolve(environment: withKeys).accessKeyId == "AKIDENV")
        #expect(try AWSCredentials.resolve(profile: "media", environment: withKeys).accessKeyId == "AKIDMEDIA")
        #expect(try AWSCredentials.resolve(environment: environment).accessKeyId == "AKIDDEFAULT")
        var named = environment
        named["AWS_PROFILE"] = "media"
        let media = try AWSCredentials.resolve(environment: named)
        #expect(media.accessKeyId == "AKIDMEDIA")
        #expect(media.sessionToken == "media-token")
        #expect(try AWSCredentials.resolve(profile: "onlyconfig", environment: environment).accessKeyId == "AKIDCONFIG")
    }

    @Test("region and endpoint: option, then environment, then the profile's config")
    func regionAndEndpoint() throws {
        let (folder, environment) = try files(credentials: Self.credentialsFile, config: Self.configFile)
        defer { folder.remove() }
        let media = try ObjectStoreEndpoint.resolve(url: "s3://bucket/p/", profile: "media", environment: environment)
        #expect(media.region == "eu-west-1")
        #expect(media.endpointURL == "http://127.0.0.1:9000")
        let other = try ObjectStoreEndpoint.resolve(url: "s3://bucket/p/", profile: "onlyconfig", environment: environment)
        #expect(other.endpointURL == "http://127.0.0.1:9999")
        #expect(other.region == "us-east-1")
        let standard = try ObjectStoreEndpoint.resolve(url: "s3://bucket", environment: environment)
        #expect(standard.region == "eu-central-1")
        #expect(standard.endpointURL == "https://s3.eu-central-1.amazonaws.com")
        var overridden = environment
        overridden["AWS_REGION"] = "ap-south-1"
        overridden["AWS_ENDPOINT_URL"] = "http://127.0.0.1:1234"
        let fromEnvironment = try ObjectStoreEndpoint.resolve(url: "s3://bucket", profile: "media", environment: overridden)
        #expect(fromEnvironment.region == "ap-south-1")
        #expect(fromEnvironment.endpointURL == "http://127.0.0.1:1234")
        let fromOptions = try ObjectStoreEndpoint.resolve(
            url: "s3://bucket", profile: "media", region: "sa-east-1", endpointURL: "http://127.0.0.1:5", environment: overridden)
        #expect(fromOptions.region == "sa-east-1")
        #expect(fromOptions.endpointURL == "http://127.0.0.1:5")
    }

    @Test("missing credentials name the places looked at and never a secret")
    func missing() throws {
        let (folder, environment) = try files(credentials: "[other]\naws_access_key_id = X\n", config: "")
        defer { folder.remove() }
        let error = try #require(throws: AttacheError.self) { try AWSCredentials.resolve(environment: environment) }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("credentials"))
        let half = try #require(throws: AttacheError.self) { try AWSCredentials.resolve(profile: "other", environment: environment) }
        #expect(half.message.contains("aws_secret_access_key"))
        var partial = environment
        partial["AWS_ACCESS_KEY_ID"] = "AKID"
        #expect(throws: AttacheError.self) { try AWSCredentials.resolve(environment: partial) }
    }

    @Test("object keys from the template, under the prefix")
    func keyTemplate() {
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(
            ObjectKeyTemplate.standard.key(prefix: "uploads/", idempotencyKey: "k1", filename: "a.jpg", kind: .image, date: date)
                == "uploads/k1.jpg")
        #expect(
            ObjectKeyTemplate("{date}/{kind}/{stem}-{idempotencyKey}{ext}").key(
                prefix: "p", idempotencyKey: "k", filename: "clip.mp4", kind: .video, date: date)
                == "p/2023-11-14/video/clip-k.mp4")
        #expect(ObjectKeyTemplate.standard.key(prefix: "", idempotencyKey: "k", filename: "README", kind: .file) == "k")
        let random = ObjectKeyTemplate("{random}").key(prefix: "", idempotencyKey: "k", filename: "a", kind: .file)
        #expect(random.count == 32)
    }
}
