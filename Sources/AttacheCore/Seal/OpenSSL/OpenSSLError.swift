internal import COpenSSL

extension NativeError {
    /// The oldest error on OpenSSL's per-thread queue, which is then cleared so a later failure is not
    /// blamed on this one.
    static func openSSL(_ function: String) -> NativeError {
        let code = ERR_get_error()
        ERR_clear_error()
        var text = [CChar](repeating: 0, count: 256)
        if code != 0 { ERR_error_string_n(code, &text, text.count) }
        let detail = code == 0 ? "no detail" : String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return NativeError(library: "openssl", code: Int(code), text: "\(function): \(detail)")
    }
}

extension AttacheError {
    /// A failed OpenSSL call: a bug or an exhausted resource, never a property of the user's data.
    static func openSSL(_ function: String) -> AttacheError {
        AttacheError(.nativeLibrary, stage: .seal, "\(function) failed", cause: NativeError.openSSL(function))
    }
}
