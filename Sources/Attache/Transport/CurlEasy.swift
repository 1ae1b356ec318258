internal import CCurl
import FoundationEssentials
import Glibc

/// Owns one libcurl easy handle: created in `init`, cleaned up in `deinit`.
///
/// Used by one thread at a time (the transport's loop). Every setter checks curl's return code on the next line and throws
/// a ``TransportError`` carrying curl's own code and text.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    /// Keeps the header list alive for as long as curl may read it.
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// Keeps option strings alive; curl copies most, not all (CURLOPT_POSTFIELDS, for instance).
    private var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    /// `CURLOPT_BUFFERSIZE` was set: curl then refuses it on this handle after a transfer, even after a
    /// reset, so the handle is not reused (``reset()``).
    var receiveBufferSet = false

    init() throws {
        try CurlGlobal.ensureInitialized()
        guard let handle = attache_curl_easy_init() else {
            throw TransportError(.nativeLibrary, "curl_easy_init failed")
        }
        self.handle = handle
    }

    deinit {
        attache_curl_easy_cleanup(handle)
        if let headerList { attache_curl_slist_free_all(headerList) }
    }

    /// Makes the handle like a new one for the next transfer (`curl_easy_reset`): every option back to its
    /// default, the header list freed. Connections live in the multi handle, not here.
    func reset() {
        attache_curl_easy_reset(handle)
        if let headerList { attache_curl_slist_free_all(headerList) }
        headerList = nil
        errorBuffer[0] = 0
    }

    func set(_ option: CURLoption, _ value: Int) throws {
        try check(attache_curl_setopt_long(handle, option, value), option)
    }

    func set(_ option: CURLoption, _ value: Bool) throws {
        try check(attache_curl_setopt_long(handle, option, value ? 1 : 0), option)
    }

    func set(_ option: CURLoption, size value: Int64) throws {
        try check(attache_curl_setopt_off_t(handle, option, curl_off_t(value)), option)
    }

    func set(_ option: CURLoption, _ value: String) throws {
        // curl copies string options (since 7.17) except the few the project never passes this way.
        try check(attache_curl_setopt_string(handle, option, value), option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws {
        try check(attache_curl_setopt_pointer(handle, option, value), option)
    }

    func setHeaders(_ lines: [String]) throws {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = attache_curl_slist_append(list, line) else {
                if let list { attache_curl_slist_free_all(list) }
                throw TransportError(.nativeLibrary, "curl_slist_append failed")
            }
            list = appended
        }
        if let headerList { attache_curl_slist_free_all(headerList) }
        headerList = list
        try check(attache_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list), CURLOPT_HTTPHEADER)
    }

    func setReadFunction(_ function: curl_read_callback) throws {
        try check(attache_curl_setopt_read_function(handle, function), CURLOPT_READFUNCTION)
    }

    func setSeekFunction(_ function: curl_seek_callback) throws {
        try check(attache_curl_setopt_seek_function(handle, function), CURLOPT_SEEKFUNCTION)
    }

    func setWriteFunction(_ function: curl_write_callback) throws {
        try check(attache_curl_setopt_write_function(handle, function), CURLOPT_WRITEFUNCTION)
    }

    func setHeaderFunction(_ function: curl_write_callback) throws {
        try check(attache_curl_setopt_header_function(handle, function), CURLOPT_HEADERFUNCTION)
    }

    func setProgressFunction(_ function: curl_xferinfo_callback) throws {
        try check(attache_curl_setopt_xferinfo_function(handle, function), CURLOPT_XFERINFOFUNCTION)
    }

    /// Enables curl's detailed error text for the next transfer.
    func captureErrorText() throws {
        try errorBuffer.withUnsafeMutableBufferPointer { buffer in
            try check(
                attache_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, buffer.baseAddress),
                CURLOPT_ERRORBUFFER)
        }
    }

    /// curl's detailed text for `code` from the last transfer, or its generic text.
    func errorText(for code: CURLcode) -> String {
        if code == CURLE_OK { return "" }
        let detail = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return detail.isEmpty ? String(cString: attache_curl_easy_strerror(code)) : detail
    }

    func info(long info: CURLINFO) -> Int {
        var value = 0
        return attache_curl_getinfo_long(handle, info, &value) == CURLE_OK ? value : 0
    }

    func info(size info: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        return attache_curl_getinfo_off_t(handle, info, &value) == CURLE_OK ? Int64(value) : 0
    }

    func info(string info: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard attache_curl_getinfo_string(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    /// The finished transfer's timings and byte counts (`CURLINFO_*_TIME_T` are microseconds).
    func timings() -> TransferTimings {
        func time(_ what: CURLINFO) -> Duration { .microseconds(info(size: what)) }
        return TransferTimings(
            nameLookup: time(CURLINFO_NAMELOOKUP_TIME_T), connect: time(CURLINFO_CONNECT_TIME_T),
            tlsHandshake: time(CURLINFO_APPCONNECT_TIME_T), firstByte: time(CURLINFO_STARTTRANSFER_TIME_T),
            total: time(CURLINFO_TOTAL_TIME_T), bytesSent: info(size: CURLINFO_SIZE_UPLOAD_T),
            bytesReceived: info(size: CURLINFO_SIZE_DOWNLOAD_T))
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws {
        guard code == CURLE_OK else {
            throw TransportError(
                code == CURLE_UNKNOWN_OPTION || code == CURLE_NOT_BUILT_IN ? .invalidArgument : .nativeLibrary,
                "curl rejected option \(option.rawValue): \(String(cString: attache_curl_easy_strerror(code)))",
                cause: NativeError(
                    library: "curl", code: Int(code.rawValue), text: String(cString: attache_curl_easy_strerror(code))))
        }
    }
}

/// Loads libcurl on first use and runs `curl_global_init` once, before any other thread uses curl.
///
/// libcurl is opened with `dlopen` rather than linked, so commands that never upload (detect, encrypt,
/// recompress) do not map it and its thirty-odd dependencies at start-up (8 ms of CPU; Package.swift).
enum CurlGlobal {
    /// Loads libcurl (once per process) and initialises it.
    ///
    /// - Throws: `nativeLibrary` naming the library when it cannot be loaded (not installed, or too old
    ///   to have a function the project calls) or when `curl_global_init` fails.
    static func ensureInitialized() throws {
        let status = attache_curl_load()
        guard status == 0 else {
            let text = String(cString: attache_curl_load_error())
            let library = String(cString: attache_curl_library_name())
            throw TransportError(
                .nativeLibrary,
                status < 0 ? "cannot load \(library): \(text)" : "cannot initialise \(library): \(text)",
                cause: NativeError(library: "curl", code: Int(status), text: text))
        }
    }
}
