import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// The `s3-put` answer profile: how an object store's answers to a `PUT` and to the steps of a multipart
/// upload are read.
@Suite("s3-put answers")
struct ObjectAnswerTests {
    let interpreter = ResponseInterpreter(configuration: .init(profile: .s3Put))

    func response(_ status: Int, _ body: String = "", headers: [(String, String)] = []) -> ServerResponse {
        ServerResponse(
            status: status, headers: headers.map { HeaderField(name: $0.0, value: $0.1) }, body: Array(body.utf8))
    }

    @Test("an empty 200: ETag, version id and checksum from the headers")
    func emptyOK() throws {
        let outcome = interpreter.interpret(
            response(
                200,
                headers: [("ETag", "\"0123abcd\""), ("x-amz-version-id", "v1"), ("x-amz-checksum-crc32c", "AAAAAA==")]))
        guard case .success(let receipt) = outcome else { Issue.record("\(outcome)"); return }
        #expect(receipt.data["ETag"]?.stringValue == "\"0123abcd\"")
        #expect(receipt.data["VersionId"]?.stringValue == "v1")
        #expect(receipt.data["ChecksumCRC32C"]?.stringValue == "AAAAAA==")
        #expect(ObjectReceipt.unquoted(receipt.data["ETag"]?.stringValue) == "0123abcd")
    }

    @Test("a 200 whose body is S3's <Error> is a refusal, not a receipt")
    func errorInOK() {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>InvalidPart</Code><Message>One or more of the specified parts could not be found.</Message></Error>
            """
        guard case .rejection(let rejection) = interpreter.interpret(response(200, body)) else {
            Issue.record("a 200 with an Error body was taken as success")
            return
        }
        #expect(rejection.businessCode == "InvalidPart")
        #expect(rejection.message.contains("could not be found"))
        // InternalError in a 200 is S3's "try the complete again".
        let retried = interpreter.interpret(response(200, "<Error><Code>InternalError</Code><Message>x</Message></Error>"))
        guard case .retry = retried else { Issue.record("\(retried)"); return }
    }

    @Test("an XML result's members are the receipt's data; a 403 carries S3's code")
    func xmlResult() {
        let body = "<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>\"e-2\"</ETag></CompleteMultipartUploadResult>"
        guard case .success(let receipt) = interpreter.interpret(response(200, body)) else {
            Issue.record("not a success")
            return
        }
        #expect(receipt.data["Key"]?.stringValue == "k")
        #expect(receipt.fileId == "k")
        #expect(receipt.data["ETag"]?.stringValue == "\"e-2\"")
        let denied = interpreter.interpret(
            response(403, "<Error><Code>SignatureDoesNotMatch</Code><Message>no</Message></Error>"))
        guard case .rejection(let rejection) = denied else { Issue.record("\(denied)"); return }
        #expect(rejection.businessCode == "SignatureDoesNotMatch")
        guard case .rejection = interpreter.interpret(response(200, "not xml")) else {
            Issue.record("text taken as success")
            return
        }
    }
}
