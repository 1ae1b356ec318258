internal import AttacheCore

/// The kinds of work a client does: what its metrics, spans and log lines name, and the stage an
/// operation's errors are reported in.
package enum ClientOperation: String, Sendable, Hashable, CustomStringConvertible {
    /// A multipart upload.
    case upload
    /// A tus or IETF resumable upload (each of its requests).
    case resumableUpload = "resumable-upload"
    /// A download (also of the download manager).
    case download
    /// A request of the request layer.
    case request
    /// A request to an object store: a presigned or signed `PUT`, a step of a multipart upload.
    case objectUpload = "object-upload"

    /// The stage an error of this operation is reported in.
    var stage: AttacheError.Stage {
        switch self {
        case .upload, .resumableUpload, .objectUpload: .upload
        case .download: .download
        case .request: .request
        }
    }

    /// The raw value.
    package var description: String { rawValue }
}
