package import Attache
import AttacheCore
import GRDB

extension UploadJournal {
    /// Records the multipart upload to an object store of the file at `path` (its upload id and the parts
    /// the store confirmed), or forgets it (nil: completed or aborted).
    /// - Throws: ``AttacheCore/AttacheError`` `.journal`.
    package func recordMultipart(path: String, record: MultipartRecord?) throws {
        let key = Self.absolute(path)
        try journalAccess("record a multipart upload in the journal", file: self.path, stage: .batch) {
            try database.write { db in
                try db.cachedStatement(sql: "UPDATE file SET multipartUpload = ? WHERE path = ?")
                    .execute(arguments: [record?.json, key])
            }
        }
    }

    /// The multipart upload recorded for the file at `path`, if any (nil too for a row of a journal from
    /// before such records, or one that cannot be read: the store is asked instead).
    /// - Throws: ``AttacheCore/AttacheError`` `.journal`.
    package func multipartRecord(path: String) throws -> MultipartRecord? {
        let key = Self.absolute(path)
        return try journalAccess("read the journal", file: self.path, stage: .batch) {
            try database.read { db in
                let json = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT multipartUpload FROM file WHERE path = ?"), arguments: [key])
                return json.flatMap { MultipartRecord(json: $0) }
            }
        }
    }
}
