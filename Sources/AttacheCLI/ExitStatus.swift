package import AttacheCore

/// Exit statuses of every `attache` command: sysexits(3) codes, one per ``AttacheError/Code`` in
/// ``table``, which `docs/EXIT-STATUS.md` shows (a test checks that the two agree).
package enum ExitStatus {
    package static let success: Int32 = 0
    /// `attache batch` only: the run finished but some files are not stored.
    package static let someFailed: Int32 = 3
    /// EX_USAGE: the command line is wrong.
    package static let usage: Int32 = 64
    /// EX_DATAERR: the input's content is wrong.
    package static let badInput: Int32 = 65
    /// EX_NOINPUT: an input file cannot be read.
    package static let cannotRead: Int32 = 66
    /// EX_UNAVAILABLE: the server is not there.
    package static let unavailable: Int32 = 69
    /// EX_SOFTWARE: a bug, or a native library failing.
    package static let internalError: Int32 = 70
    /// EX_IOERR: an output file or the journal cannot be written.
    package static let ioError: Int32 = 74
    /// EX_TEMPFAIL: trying again later may work.
    package static let temporaryFailure: Int32 = 75
    /// EX_PROTOCOL: the server's answer cannot be used.
    package static let badResponse: Int32 = 76
    /// EX_NOPERM: the server refused.
    package static let rejected: Int32 = 77
    /// EX_CONFIG: the config file of endpoints is wrong (syntax, a key, a value, a missing endpoint).
    package static let configError: Int32 = 78
    /// The Scan stage found malware: the file was refused and nothing of it was sent (beyond
    /// sysexits(3), which has no such case).
    package static let infected: Int32 = 79
    /// The server refused the credentials (a token, a password): a status of its own, not in
    /// sysexits(3).
    package static let unauthorized: Int32 = 80
    /// 128 + SIGINT.
    package static let cancelled: Int32 = 130

    /// Every error code and the one status it ends a command with.
    package static let table: [(code: AttacheError.Code, status: Int32)] = [
        (.invalidArgument, usage),
        (.corruptInput, badInput),
        (.unsupportedInput, badInput),
        (.limitExceeded, badInput),
        (.kindMismatch, badInput),
        (.invalidKey, badInput),
        (.authenticationFailed, badInput),
        (.sealedHeaderInvalid, badInput),
        (.sealedDataTruncated, badInput),
        (.sealedSegmentMisplaced, badInput),
        (.sealedPaddingInvalid, badInput),
        (.base64Invalid, badInput),
        (.fileNotFound, cannotRead),
        (.fileUnreadable, cannotRead),
        (.connectionFailed, unavailable),
        (.tlsFailure, unavailable),
        (.queue, unavailable),
        (.nativeLibrary, internalError),
        (.internalError, internalError),
        (.fileUnwritable, ioError),
        (.journal, ioError),
        (.connectionLost, temporaryFailure),
        (.timedOut, temporaryFailure),
        (.retriesExhausted, temporaryFailure),
        (.fileChanged, temporaryFailure),
        (.journalBusy, temporaryFailure),
        (.badResponse, badResponse),
        (.replayMismatch, badResponse),
        (.rejected, rejected),
        (.unauthorized, unauthorized),
        (.configInvalid, configError),
        (.infected, infected),
        (.scanFailed, unavailable),
        (.cancelled, cancelled),
    ]

    private static let byCode: [AttacheError.Code: Int32] = Dictionary(
        table.map { ($0.code, $0.status) }, uniquingKeysWith: { first, _ in first })

    /// The status for `error`, from ``table``; 70 (a bug) for a code the table does not list.
    package static func forError(_ error: AttacheError) -> Int32 {
        byCode[error.code] ?? internalError
    }
}

extension AttacheError.Code {
    /// The config file of endpoints cannot be used: not found, not TOML, an unknown key, a value of the
    /// wrong type, a secret written inline, an endpoint it does not name, or a variable it names unset.
    package static let configInvalid = Self("config-invalid")
}
