internal import AttacheCore
package import FoundationEssentials
import Logging

/// A multipart upload a store holds that nobody completed or aborted.
package struct PendingMultipartUpload: Sendable, Hashable, Codable {
    /// The object key it is for.
    package var key: String
    /// The store's upload id.
    package var uploadId: String
    /// When it was started, as the store says (`Initiated`); nil when it did not say or the date cannot be read.
    package var initiated: Date?
}

extension ObjectStoreEndpoint {
    /// The multipart uploads under ``location``'s prefix that were started before `cutoff`
    /// (`ListMultipartUploads`, every page).
    ///
    /// - Throws: ``AttacheCore/AttacheError``: the store's refusal (`.rejected`), transport failures.
    package func pendingMultipartUploads(startedBefore cutoff: Date, client: AttacheClient) async throws
        -> [PendingMultipartUpload]
    {
        let requester = ObjectRequester(client: client, signer: signer, logger: Logger(label: "attache.s3"))
        var found: [PendingMultipartUpload] = []
        var markers: (key: String, upload: String)?
        repeat {
            var query = [("uploads", ""), ("prefix", location.prefix)]
            if let markers { query += [("key-marker", markers.key), ("upload-id-marker", markers.upload)] }
            let answer = try await requester.send(ObjectRequest(method: "GET", target: .signed(try address(forKey: "", query: query))))
            guard case .stored(let page) = answer.outcome else {
                if case .rejected(let rejection) = answer.outcome {
                    throw AttacheError(refusal: rejection, "the store refused to list its multipart uploads", file: nil)
                }
                break
            }
            for upload in MultipartObjectUpload.elements(page.data["Upload"]) {
                guard let key = upload["Key"]?.stringValue, let id = upload["UploadId"]?.stringValue else { continue }
                let initiated = upload["Initiated"]?.stringValue.flatMap { UTCTimestamp.parse($0) }
                if let initiated, initiated >= cutoff { continue }
                found.append(PendingMultipartUpload(key: key, uploadId: id, initiated: initiated))
            }
            if page.data["IsTruncated"]?.stringValue == "true", let key = page.data["NextKeyMarker"]?.stringValue,
                let upload = page.data["NextUploadIdMarker"]?.stringValue
            {
                markers = (key, upload)
            } else {
                markers = nil
            }
        } while markers != nil
        return found
    }

    /// `AbortMultipartUpload`: the store deletes the upload's parts.
    ///
    /// - Throws: ``AttacheCore/AttacheError``: the store's refusal (`.rejected`; `NoSuchUpload` when it is gone already),
    ///   transport failures.
    package func abort(_ upload: PendingMultipartUpload, client: AttacheClient) async throws {
        let requester = ObjectRequester(client: client, signer: signer, logger: Logger(label: "attache.s3"))
        let answer = try await requester.send(
            ObjectRequest(method: "DELETE", target: .signed(try address(forKey: upload.key, query: [("uploadId", upload.uploadId)]))))
        if case .rejected(let rejection) = answer.outcome {
            throw AttacheError(refusal: rejection, "the store refused to abort the upload of \(upload.key)", file: nil)
        }
    }
}
