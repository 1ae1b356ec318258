package import AttacheCore

/// Exit statuses, documented in the README. One switch maps error codes to them.
package enum ExitStatus {
    package static let success: Int32 = 0
    package static let failure: Int32 = 1
    package static let usage: Int32 = 64
    package static let badInput: Int32 = 65
    package static let cannotRead: Int32 = 66
    package static let internalError: Int32 = 70
    package static let unavailable: Int32 = 69
    package static let ioError: Int32 = 74
    package static let temporaryFailure: Int32 = 75
    package static let badResponse: Int32 = 76
    package static let rejected: Int32 = 77
    package static let cancelled: Int32 = 130

    package static func forError(_ error: AttacheError) -> Int32 {
        switch error.code {
        case .invalidArgument: return usage
        case .fileNotFound, .fileUnreadable: return cannotRead
        case .corruptInput, .unsupportedInput, .limitExceeded, .invalidKey, .authenticationFailed:
            return badInput
        case .fileUnwritable: return ioError
        case .connectionFailed, .tlsFailure: return unavailable
        case .connectionLost, .timedOut, .retriesExhausted, .fileChanged, .journalBusy: return temporaryFailure
        case .badResponse, .replayMismatch: return badResponse
        case .rejected: return rejected
        case .cancelled: return cancelled
        case .internalError, .nativeLibrary: return internalError
        default: return failure
        }
    }
}
