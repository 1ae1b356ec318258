import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// Each profile against answers shaped like the ones the real services send.
@Suite("answer profiles")
struct AnswerProfileTests {
    func response(_ status: Int, _ body: String, type: String? = "application/json", headers: [HeaderField] = []) -> ServerResponse {
        ServerResponse(
            status: status, headers: (type.map { [HeaderField(name: "Content-Type", value: $0)] } ?? []) + headers,
            body: Array(body.utf8))
    }

    func interpret(_ configuration: ResponseInterpreter.Configuration, _ response: ServerResponse) -> ResponseOutcome {
        ResponseInterpreter(configuration: configuration).interpret(response)
    }

    func stored(_ outcome: ResponseOutcome) throws -> ServerReceipt {
        guard case .success(let receipt) = outcome else { throw TestFailure("expected success, got \(outcome)") }
        return receipt
    }

    func refused(_ outcome: ResponseOutcome) throws -> Rejection {
        guard case .rejection(let rejection) = outcome else { throw TestFailure("expected rejection, got \(outcome)") }
        return rejection
    }

    func retried(_ outcome: ResponseOutcome) throws -> RetryAdvice {
        guard case .retry(let advice) = outcome else { throw TestFailure("expected retry, got \(outcome)") }
        return advice
    }

    // MARK: Profiles by name

    @Test("every profile has its command-line name", arguments: [
        ("errorcode", AnswerProfile.errorCode), ("status", .status), ("s3-post", .s3Post), ("telegram", .telegram),
        ("S3-POST", .s3Post),
    ])
    func names(name: String, profile: AnswerProfile) {
        #expect(AnswerProfile(name: name) == profile)
        #expect(ResponseInterpreter.Configuration(profile: profile).profile == profile)
    }

    @Test func unknownNameIsNil() {
        #expect(AnswerProfile(name: "s3") == nil)
        #expect(ResponseInterpreter.Configuration().profile == .errorCode)
    }

    // MARK: status

    @Test("status: an empty 201 with a Location is a success, the id its last segment")
    func statusEmptyCreated() throws {
        let receipt = try stored(
            interpret(.status, response(201, "", type: nil, headers: [HeaderField(name: "Location", value: "/files/f%20123?v=1")])))
        #expect(receipt.fileId == "f 123")
        #expect(receipt.url == "/files/f%20123?v=1")
        #expect(receipt.data == .null)
    }

    @Test("status: a plain-text 200 is a success kept as text")
    func statusText() throws {
        let receipt = try stored(interpret(.status, response(200, "OK\n", type: "text/plain")))
        #expect(receipt.fileId == nil)
        #expect(receipt.data == .string("OK\n"))
    }

    @Test("status: a JSON body names the id (top level or under data), over Location")
    func statusJSON() throws {
        let top = try stored(
            interpret(.status, response(200, #"{"id":"abc","url":"https://cdn/x"}"#, headers: [HeaderField(name: "Location", value: "/files/zzz")])))
        #expect(top.fileId == "abc")
        #expect(top.url == "https://cdn/x")
        let nested = try stored(interpret(.status, response(200, #"{"data":{"file_id":7}}"#)))
        #expect(nested.fileId == "7")
        #expect(nested.data == .object(["data": .object(["file_id": .number(7)])]))
    }

    @Test("status: 4xx is still a rejection, 503 a retry")
    func statusErrors() throws {
        #expect(try refused(interpret(.status, response(404, "nope", type: "text/plain"))).status == 404)
        #expect(try retried(interpret(.status, response(503, ""))).status == 503)
    }

    // MARK: s3-post

    static let postResponse = """
        <?xml version="1.0" encoding="UTF-8"?>
        <PostResponse><Location>https://examplebucket.s3.amazonaws.com/uploads%2Fphoto.jpg</Location>\
        <Bucket>examplebucket</Bucket><Key>uploads/photo.jpg</Key><ETag>"9b2cf535f27731c974343645a3985328"</ETag></PostResponse>
        """

    @Test("s3-post: 201 with S3's PostResponse gives key, location, bucket and ETag")
    func s3Created() throws {
        let receipt = try stored(interpret(.s3Post, response(201, Self.postResponse, type: "application/xml")))
        #expect(receipt.fileId == "uploads/photo.jpg")
        #expect(receipt.url == "https://examplebucket.s3.amazonaws.com/uploads%2Fphoto.jpg")
        #expect(receipt.data["Bucket"] == .string("examplebucket"))
        #expect(receipt.data["ETag"] == .string("\"9b2cf535f27731c974343645a3985328\""))
    }

    @Test("s3-post: MinIO's PostResponse (quotes as character references) reads the same")
    func minioCreated() throws {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <PostResponse><Bucket>media</Bucket><Key>a/b &amp; c.jpg</Key><ETag>&#34;d41d8cd98f00b204e9800998ecf8427e&#34;</ETag><Location>http://127.0.0.1:9000/media/a/b%20&amp;%20c.jpg</Location></PostResponse>
            """
        let receipt = try stored(interpret(.s3Post, response(201, body, type: "application/xml")))
        #expect(receipt.fileId == "a/b & c.jpg")
        #expect(receipt.data["ETag"] == .string("\"d41d8cd98f00b204e9800998ecf8427e\""))
        #expect(receipt.url == "http://127.0.0.1:9000/media/a/b%20&%20c.jpg")
    }

    @Test("s3-post: S3's default 204 is a success; Location and ETag kept from the headers")
    func s3NoContent() throws {
        let receipt = try stored(
            interpret(
                .s3Post,
                response(
                    204, "", type: nil,
                    headers: [
                        HeaderField(name: "Location", value: "https://examplebucket.s3.amazonaws.com/uploads%2Fphoto.jpg"),
                        HeaderField(name: "ETag", value: "\"9b2cf535f27731c974343645a3985328\""), HeaderField(name: "x-amz-request-id", value: "7A5C2B1E8F3D4A6B"),
                    ])))
        #expect(receipt.fileId == nil)
        #expect(receipt.url == "https://examplebucket.s3.amazonaws.com/uploads%2Fphoto.jpg")
        #expect(
            receipt.data
                == .object([
                    "Location": .string("https://examplebucket.s3.amazonaws.com/uploads%2Fphoto.jpg"),
                    "ETag": .string("\"9b2cf535f27731c974343645a3985328\""),
                ]))
        // An empty 200 (success_action_status=200) too.
        #expect(try stored(interpret(.s3Post, response(200, "", type: nil))).data == .object([:]))
    }

    /// S3's error documents, as S3 sends them for a presigned POST.
    static let s3Errors: [(status: Int, code: String, message: String, body: String)] = [
        (
            403, "AccessDenied", "Invalid according to Policy: Policy expired.",
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>AccessDenied</Code><Message>Invalid according to Policy: Policy expired.</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>eftixk72aD6Ap51TnqcoF8eFidJG9Z/2mkiDFu8yU9AS1ed4OpIszj7UDNEHGran</HostId></Error>
            """
        ),
        (
            403, "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message><AWSAccessKeyId>AKIAIOSFODNN7EXAMPLE</AWSAccessKeyId><StringToSign>eyJleHBpcmF0aW9uIjoiMjAxNS0xMi0zMFQxMjowMDowMC4wMDBaIn0=</StringToSign><SignatureProvided>8afdbf4008c03f22c2cd3cdb72e4afbb1f6a588f3255ac628749a66d7f09699e</SignatureProvided><StringToSignBytes>65 79 4a 6c</StringToSignBytes><RequestId>8E0F9C1D2B3A4F56</RequestId><HostId>2c9b1f0a</HostId></Error>
            """
        ),
        (
            400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size",
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>EntityTooLarge</Code><Message>Your proposed upload exceeds the maximum allowed size</Message><ProposedSize>20971520</ProposedSize><MaxSizeAllowed>10485760</MaxSizeAllowed><RequestId>0C1D2E3F4A5B6C7D</RequestId><HostId>9f8e7d6c</HostId></Error>
            """
        ),
        (
            403, "AccessDenied", "Invalid according to Policy: Extra input fields: mimeType",
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>AccessDenied</Code><Message>Invalid according to Policy: Extra input fields: mimeType</Message><RequestId>1A2B3C4D5E6F7A8B</RequestId><HostId>abc</HostId></Error>
            """
        ),
    ]

    @Test("s3-post: S3's XML errors are rejections carrying S3's code and message", arguments: 0..<4)
    func s3Errors(index: Int) throws {
        let sample = Self.s3Errors[index]
        let rejection = try refused(interpret(.s3Post, response(sample.status, sample.body, type: "application/xml")))
        #expect(rejection.reason == .status)
        #expect(rejection.status == sample.status)
        #expect(rejection.businessCode == sample.code)
        #expect(rejection.message == sample.message)
        #expect(rejection.description.contains(sample.code))
    }

    @Test("s3-post: SlowDown (503) and RequestTimeout (400) are retried")
    func s3Retryable() throws {
        let slowDown = try retried(
            interpret(
                .s3Post,
                response(
                    503, "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>",
                    type: "application/xml", headers: [HeaderField(name: "Retry-After", value: "2")])))
        #expect(slowDown.reason.contains("SlowDown"))
        #expect(slowDown.retryAfter == .seconds(2))
        let timeout = try retried(
            interpret(
                .s3Post,
                response(
                    400,
                    "<Error><Code>RequestTimeout</Code><Message>Your socket connection to the server was not read from or written to within the timeout period. Idle connections will be closed.</Message></Error>",
                    type: "application/xml")))
        #expect(timeout.status == 400)
    }

    @Test("s3-post: an Error document in a 2xx is a rejection; a JSON body is unreadable")
    func s3Odd() throws {
        // InternalError is one S3 says to retry; another code in a 200 is a business rejection.
        #expect(
            try retried(
                interpret(.s3Post, response(200, "<Error><Code>InternalError</Code><Message>x</Message></Error>", type: "application/xml"))
            ).status == 200)
        let business = try refused(
            interpret(.s3Post, response(200, "<Error><Code>AccessDenied</Code><Message>no</Message></Error>", type: "application/xml")))
        #expect(business.reason == .business)
        #expect(business.businessCode == "AccessDenied")
        #expect(try refused(interpret(.s3Post, response(200, #"{"ok":true}"#))).reason == .badResponse)
    }

    // MARK: telegram

    static let sendPhoto = """
        {"ok":true,"result":{"message_id":42,"from":{"id":6123456789,"is_bot":true,"first_name":"Files","username":"files_bot"},\
        "chat":{"id":-1001234567890,"title":"Team","type":"supergroup"},"date":1700000000,"photo":[\
        {"file_id":"AgACAgQAAxkDAAMqZsmall","file_unique_id":"AQADs","file_size":1342,"width":90,"height":67},\
        {"file_id":"AgACAgQAAxkDAAMqZlarge","file_unique_id":"AQADl","file_size":61234,"width":1280,"height":960},\
        {"file_id":"AgACAgQAAxkDAAMqZmedium","file_unique_id":"AQADm","file_size":15022,"width":320,"height":240}]}}
        """

    @Test("telegram: the largest photo's file_id; result kept whole")
    func telegramPhoto() throws {
        let receipt = try stored(interpret(.telegram, response(200, Self.sendPhoto)))
        #expect(receipt.fileId == "AgACAgQAAxkDAAMqZlarge")
        #expect(receipt.data["message_id"]?.intValue == 42)
        #expect(receipt.data["chat"]?["id"]?.intValue == -1001234567890)
        #expect(receipt.data["ok"] == nil)
    }

    @Test("telegram: document, video, voice, audio, sticker, animation, video_note", arguments: [
        "document", "video", "voice", "audio", "sticker", "animation", "video_note",
    ])
    func telegramMedia(member: String) throws {
        let body = """
            {"ok":true,"result":{"message_id":43,"chat":{"id":1,"type":"private"},"date":1700000001,\
            "\(member)":{"file_name":"a","mime_type":"application/pdf","thumbnail":{"file_id":"THUMB","file_unique_id":"t",\
            "file_size":900,"width":90,"height":90},"file_id":"BQACAgQAAxkDAAMr\(member)","file_unique_id":"AgADx","file_size":12345}}}
            """
        #expect(try stored(interpret(.telegram, response(200, body))).fileId == "BQACAgQAAxkDAAMr\(member)")
    }

    @Test("telegram: 429 with parameters.retry_after is a retry after that long")
    func telegramTooManyRequests() throws {
        let advice = try retried(
            interpret(
                .telegram,
                response(
                    429,
                    #"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}"#)))
        #expect(advice.retryAfter == .seconds(3))
        #expect(advice.reason.contains("Too Many Requests"))
    }

    @Test("telegram: error_code and description become the rejection")
    func telegramErrors() throws {
        let unauthorized = try refused(
            interpret(.telegram, response(401, #"{"ok":false,"error_code":401,"description":"Unauthorized"}"#)))
        #expect(unauthorized.status == 401)
        #expect(unauthorized.businessCode == "401")
        #expect(unauthorized.message == "Unauthorized")
        #expect(unauthorized.description == "HTTP 401: Unauthorized")
        let notFound = try refused(
            interpret(.telegram, response(400, #"{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}"#)))
        #expect(notFound.message == "Bad Request: chat not found")
        // "ok":false inside a 200: the Bot API's code, retried when it says so.
        let business = try refused(
            interpret(.telegram, response(200, #"{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}"#)))
        #expect(business.reason == .business)
        #expect(business.businessCode == "403")
        let later = try retried(
            interpret(
                .telegram,
                response(200, #"{"ok":false,"error_code":429,"description":"Too Many Requests","parameters":{"retry_after":5}}"#)))
        #expect(later.retryAfter == .seconds(5))
    }

    @Test("telegram: an answer without ok is unusable")
    func telegramNoOK() throws {
        #expect(try refused(interpret(.telegram, response(200, #"{"result":{}}"#))).reason == .badResponse)
        #expect(try refused(interpret(.telegram, response(200, ""))).reason == .badResponse)
    }

    // MARK: id pointer, every profile

    @Test("the id pointer overrides where the id is read, in every profile")
    func pointerEverywhere() throws {
        var errorCode = ResponseInterpreter.Configuration.errorCode
        errorCode.idPointer = try JSONPointer("/data/files/1/name")
        #expect(
            try stored(interpret(errorCode, response(200, #"{"errorCode":0,"data":{"fileId":"no","files":[{"name":"a"},{"name":"b"}]}}"#)))
                .fileId == "b")

        var status = ResponseInterpreter.Configuration.status
        status.idPointer = try JSONPointer("/upload/key")
        #expect(
            try stored(interpret(status, response(201, #"{"id":"no","upload":{"key":"k1"}}"#, headers: [HeaderField(name: "Location", value: "/x/no")])))
                .fileId == "k1")

        var s3 = ResponseInterpreter.Configuration.s3Post
        s3.idPointer = try JSONPointer("/ETag")
        #expect(
            try stored(interpret(s3, response(201, Self.postResponse, type: "application/xml"))).fileId
                == "\"9b2cf535f27731c974343645a3985328\"")

        var telegram = ResponseInterpreter.Configuration.telegram
        telegram.idPointer = try JSONPointer("/result/photo/0/file_unique_id")
        #expect(try stored(interpret(telegram, response(200, Self.sendPhoto))).fileId == "AQADs")
    }

    @Test("a pointer that selects nothing leaves no id; the answer is still kept")
    func pointerMissing() throws {
        var telegram = ResponseInterpreter.Configuration.telegram
        telegram.idPointer = try JSONPointer("/result/document/file_id")
        let receipt = try stored(interpret(telegram, response(200, Self.sendPhoto)))
        #expect(receipt.fileId == nil)
        #expect(receipt.data["message_id"]?.intValue == 42)
    }
}
