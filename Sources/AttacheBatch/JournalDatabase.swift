import Attache
import AttacheCore
import GRDB
import Glibc

/// Runs one operation on a journal database, turning GRDB's and SQLite's errors into an
/// ``AttacheCore/AttacheError`` `.journal` of `stage` that names the file and keeps SQLite's extended result code.
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

/// `error` as an ``AttacheCore/AttacheError`` `.journal`, its message after `message`.
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

/// One step of a journal's schema: a name GRDB records once it is applied, and its SQL statements.
struct JournalMigration: Sendable {
    let name: String
    let sql: String

    init(_ name: String, _ sql: String) {
        self.name = name
        self.sql = sql
    }
}

/// Opens the journal database at `path`: the one way both journals (uploads and downloads) open theirs.
///
/// Writable: the file is created 0600 (``restrictJournalAccess(_:stage:)``) and the `migrations` not
/// yet applied run, in order. Read-only: the file must exist and hold `table`, or it is not this kind of journal.
/// - Parameter name: what the messages call the file ("journal", "download journal").
/// - Throws: ``AttacheCore/AttacheError`` `.journal` of `stage` naming the file.
func openJournalDatabase(
    at path: String, name: String, table: String, stage: AttacheError.Stage, migrations: [JournalMigration],
    configuration: Configuration
) throws -> DatabaseQueue {
    do {
        if !configuration.readonly { try restrictJournalAccess(path, stage: stage) }
        let database = try DatabaseQueue(path: path, configuration: configuration)
        if configuration.readonly {
            guard try database.read({ db in try db.tableExists(table) }) else {
                throw AttacheError(.journal, stage: stage, "not an attache \(name)", file: path)
            }
        } else {
            var migrator = DatabaseMigrator()
            for migration in migrations {
                migrator.registerMigration(migration.name) { db in try db.execute(sql: migration.sql) }
            }
            try migrator.migrate(database)
        }
        return database
    } catch var error as AttacheError {
        error.stage = stage
        throw error
    } catch {
        throw journalError(error, "cannot open the \(name)", file: path, stage: stage)
    }
}

/// Creates the database file readable and writable by its owner only (0600, whatever the umask),
/// and takes those rights back from files an older version created 0644. A journal holds every
/// file's seal key and nonce seed. SQLite gives the `-wal` and `-shm` files it creates the main
/// file's mode; existing ones are narrowed here too.
func restrictJournalAccess(_ path: String, stage: AttacheError.Stage) throws {
    let fd = FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
    guard fd >= 0 else { throw AttacheError.system("cannot create the journal", .journal, stage: stage, file: path) }
    defer { close(fd) }
    guard fchmod(fd, 0o600) == 0 else {
        throw AttacheError.system("cannot make the journal private", .journal, stage: stage, file: path)
    }
    for companion in ["-wal", "-shm", "-journal"] {
        _ = chmod(path + companion, 0o600)
    }
}
