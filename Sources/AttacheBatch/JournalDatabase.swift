import Attache
import AttacheCore
import GRDB

/// Runs one operation on a journal database, turning GRDB's and SQLite's errors into an
/// ``AttacheError`` `.journal` of `stage` that names the file and keeps SQLite's extended result code.
func journalAccess<T>(
    _ what: String, file: String, stage: AttacheError.Stage, _ body: () throws -> T
) throws -> T {
    do {
        return try body()
    } catch let error as AttacheError {
        throw error
    } catch {
        throw journalError(error, "cannot \(what)", file: file, stage: stage)
    }
}

/// `error` as an ``AttacheError`` `.journal`, its message after `message`.
func journalError(_ error: any Error, _ message: String, file: String, stage: AttacheError.Stage) -> AttacheError {
    if let error = error as? DatabaseError {
        return AttacheError(
            .journal, stage: stage, "\(message): \(error.message ?? "SQLite error \(error.resultCode.rawValue)")",
            file: file,
            cause: NativeError(
                library: "sqlite", code: Int(error.extendedResultCode.rawValue), text: error.message ?? ""))
    }
    return AttacheError(.journal, stage: stage, "\(message): \(error)", file: file)
}

/// GRDB's settings for a journal: WAL (so readers never block the writer), a wait when another
/// process holds SQLite's lock for a moment, and `synchronous = FULL` (`durable`) or `NORMAL`.
func journalConfiguration(label: String, readOnly: Bool, durable: Bool) -> Configuration {
    var configuration = Configuration()
    configuration.readonly = readOnly
    configuration.journalMode = readOnly ? .default : .wal
    // Another process (a reader, a second run) may hold the lock for a moment.
    configuration.busyMode = .timeout(10)
    configuration.label = label
    if !readOnly {
        configuration.prepareDatabase { db in
            try db.execute(sql: durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        }
    }
    return configuration
}
