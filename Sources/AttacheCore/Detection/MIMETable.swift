/// The extension table and the relations between types that detection uses for fallback, mismatch
/// reports and preferred extensions. See docs/DETECTION.md for the tree.
package enum MIMETable {
    /// Lower-case filename extension → the IANA type it stands for.
    package static let byExtension: [String: String] = [
        // Images
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "jpe": "image/jpeg", "jfif": "image/jpeg",
        "pjpeg": "image/jpeg", "pjp": "image/jpeg",
        "png": "image/png", "apng": "image/apng", "gif": "image/gif", "webp": "image/webp",
        "heic": "image/heic", "heif": "image/heif", "heics": "image/heic-sequence",
        "heifs": "image/heif-sequence", "hif": "image/heif", "avif": "image/avif",
        "bmp": "image/bmp", "dib": "image/bmp", "tif": "image/tiff", "tiff": "image/tiff",
        "dng": "image/tiff", "ico": "image/vnd.microsoft.icon", "svg": "image/svg+xml",
        "psd": "image/vnd.adobe.photoshop", "jxl": "image/jxl", "jp2": "image/jp2",
        // Audio
        "mp3": "audio/mpeg", "mpga": "audio/mpeg", "aac": "audio/aac", "adts": "audio/aac",
        "m4a": "audio/mp4", "m4b": "audio/mp4", "ogg": "audio/ogg", "oga": "audio/ogg",
        "opus": "audio/ogg", "spx": "audio/ogg", "flac": "audio/flac", "wav": "audio/wav",
        "wave": "audio/wav", "amr": "audio/amr", "awb": "audio/amr-wb", "caf": "audio/x-caf",
        "mid": "audio/midi", "midi": "audio/midi", "aif": "audio/aiff", "aiff": "audio/aiff",
        "aifc": "audio/aiff", "weba": "audio/webm", "mka": "audio/matroska", "wma": "audio/x-ms-wma",
        // Video
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "qt": "video/quicktime",
        "3gp": "video/3gpp", "3gpp": "video/3gpp", "3g2": "video/3gpp2", "webm": "video/webm",
        "mkv": "video/matroska", "mk3d": "video/matroska", "avi": "video/x-msvideo",
        "ts": "video/mp2t", "m2ts": "video/mp2t", "mts": "video/mp2t", "flv": "video/x-flv",
        "wmv": "video/x-ms-wmv", "asf": "video/x-ms-asf", "mpg": "video/mpeg", "mpeg": "video/mpeg",
        "ogv": "video/ogg", "ogx": "application/ogg",
        // Documents
        "pdf": "application/pdf", "rtf": "application/rtf", "ps": "application/postscript",
        "eps": "application/postscript", "doc": "application/msword", "dot": "application/msword",
        "xls": "application/vnd.ms-excel", "xlt": "application/vnd.ms-excel",
        "ppt": "application/vnd.ms-powerpoint", "pps": "application/vnd.ms-powerpoint",
        "pot": "application/vnd.ms-powerpoint", "msg": "application/vnd.ms-outlook",
        "msi": "application/x-msi",
        "docx": docx, "xlsx": xlsx, "pptx": pptx,
        "odt": "application/vnd.oasis.opendocument.text",
        "ods": "application/vnd.oasis.opendocument.spreadsheet",
        "odp": "application/vnd.oasis.opendocument.presentation",
        "odg": "application/vnd.oasis.opendocument.graphics",
        "epub": "application/epub+zip",
        // Archives, executables, data
        "zip": "application/zip", "apk": "application/vnd.android.package-archive",
        "jar": "application/java-archive", "war": "application/java-archive",
        "rar": "application/vnd.rar", "7z": "application/x-7z-compressed", "gz": "application/gzip",
        "tgz": "application/gzip", "bz2": "application/x-bzip2", "xz": "application/x-xz",
        "zst": "application/zstd", "tar": "application/x-tar", "lz": "application/x-lzip",
        "exe": "application/vnd.microsoft.portable-executable",
        "dll": "application/vnd.microsoft.portable-executable",
        "so": "application/x-sharedlib", "o": "application/x-object",
        "dylib": "application/x-mach-binary", "wasm": "application/wasm",
        "sqlite": "application/vnd.sqlite3", "sqlite3": "application/vnd.sqlite3",
        "db": "application/vnd.sqlite3", "tgs": "application/x-tgsticker",
        "class": "application/java-vm", "woff": "font/woff", "woff2": "font/woff2",
        "ttf": "font/ttf", "otf": "font/otf", "deb": "application/vnd.debian.binary-package",
        "rpm": "application/x-rpm", "cab": "application/vnd.ms-cab-compressed",
        // Text
        "txt": "text/plain", "text": "text/plain", "log": "text/plain", "md": "text/markdown",
        "markdown": "text/markdown", "csv": "text/csv", "tsv": "text/tab-separated-values",
        "json": "application/json", "geojson": "application/geo+json", "xml": "application/xml",
        "html": "text/html", "htm": "text/html", "xhtml": "application/xhtml+xml", "css": "text/css",
        "js": "text/javascript", "mjs": "text/javascript", "vcf": "text/vcard", "vcard": "text/vcard",
        "ics": "text/calendar", "ifb": "text/calendar", "yaml": "application/yaml",
        "yml": "application/yaml", "toml": "application/toml", "sh": "text/x-shellscript",
        "py": "text/x-python", "swift": "text/x-swift", "c": "text/x-c", "h": "text/x-c",
        "cpp": "text/x-c++", "java": "text/x-java", "go": "text/x-go", "rs": "text/x-rust",
        "srt": "application/x-subrip", "vtt": "text/vtt", "sql": "application/sql",
        "rss": "application/rss+xml", "atom": "application/atom+xml",
        "kml": "application/vnd.google-earth.kml+xml", "gpx": "application/gpx+xml",
    ]

    /// Extensions that mean something else when the content is text (`.ts` is TypeScript, not an
    /// MPEG transport stream, when the file is text).
    static let textAlternatives: [String: String] = ["ts": "text/x-typescript"]

    package static let docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    package static let xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    package static let pptx = "application/vnd.openxmlformats-officedocument.presentationml.presentation"

    /// Type → the usual extension.
    package static let preferredExtension: [String: String] = [
        "image/jpeg": "jpg", "image/png": "png", "image/apng": "png", "image/gif": "gif",
        "image/webp": "webp", "image/heic": "heic", "image/heif": "heif",
        "image/heic-sequence": "heics", "image/heif-sequence": "heifs", "image/avif": "avif",
        "image/bmp": "bmp", "image/tiff": "tiff", "image/vnd.microsoft.icon": "ico",
        "image/svg+xml": "svg", "image/vnd.adobe.photoshop": "psd", "image/jxl": "jxl",
        "image/jp2": "jp2",
        "audio/mpeg": "mp3", "audio/aac": "aac", "audio/mp4": "m4a", "audio/ogg": "ogg",
        "audio/flac": "flac", "audio/wav": "wav", "audio/amr": "amr", "audio/amr-wb": "awb",
        "audio/x-caf": "caf", "audio/midi": "mid", "audio/aiff": "aiff", "audio/webm": "weba",
        "audio/matroska": "mka", "audio/3gpp": "3gp", "audio/3gpp2": "3g2",
        "video/mp4": "mp4", "video/quicktime": "mov", "video/3gpp": "3gp", "video/3gpp2": "3g2",
        "video/webm": "webm", "video/matroska": "mkv", "video/x-msvideo": "avi", "video/mp2t": "ts",
        "video/x-flv": "flv", "video/x-ms-asf": "asf", "video/mpeg": "mpg", "video/ogg": "ogv",
        "application/ogg": "ogx",
        "application/pdf": "pdf", "application/rtf": "rtf", "application/postscript": "ps",
        "application/msword": "doc", "application/vnd.ms-excel": "xls",
        "application/vnd.ms-powerpoint": "ppt", "application/vnd.ms-outlook": "msg",
        "application/x-msi": "msi", docx: "docx", xlsx: "xlsx", pptx: "pptx",
        "application/vnd.oasis.opendocument.text": "odt",
        "application/vnd.oasis.opendocument.spreadsheet": "ods",
        "application/vnd.oasis.opendocument.presentation": "odp",
        "application/vnd.oasis.opendocument.graphics": "odg", "application/epub+zip": "epub",
        "application/zip": "zip", "application/vnd.android.package-archive": "apk",
        "application/java-archive": "jar", "application/vnd.rar": "rar",
        "application/x-7z-compressed": "7z", "application/gzip": "gz", "application/x-bzip2": "bz2",
        "application/x-xz": "xz", "application/zstd": "zst", "application/x-tar": "tar",
        "application/x-lzip": "lz", "application/vnd.microsoft.portable-executable": "exe",
        "application/x-sharedlib": "so", "application/x-object": "o", "application/wasm": "wasm",
        "application/vnd.sqlite3": "sqlite", "application/x-tgsticker": "tgs",
        "application/java-vm": "class", "font/woff": "woff", "font/woff2": "woff2", "font/ttf": "ttf",
        "font/otf": "otf", "application/vnd.debian.binary-package": "deb", "application/x-rpm": "rpm",
        "application/vnd.ms-cab-compressed": "cab",
        "text/plain": "txt", "text/markdown": "md", "text/csv": "csv",
        "text/tab-separated-values": "tsv", "application/json": "json",
        "application/geo+json": "geojson", "application/xml": "xml", "text/html": "html",
        "application/xhtml+xml": "xhtml", "text/css": "css", "text/javascript": "js",
        "text/vcard": "vcf", "text/calendar": "ics", "application/yaml": "yaml",
        "text/x-shellscript": "sh", "text/x-python": "py",
        "application/rss+xml": "rss", "application/atom+xml": "atom",
        "application/vnd.google-earth.kml+xml": "kml", "application/gpx+xml": "gpx",
        "text/x-typescript": "ts", "application/x-subrip": "srt", "text/vtt": "vtt",
        "application/toml": "toml", "application/sql": "sql", "audio/x-ms-wma": "wma",
        "video/x-ms-wmv": "wmv",
    ]

    /// Child → parent in the detection tree: a file of the child type is also a valid file of the
    /// parent type (a DOCX is a zip, an SVG is XML, JSON is text).
    package static let parent: [String: String] = [
        docx: "application/zip", xlsx: "application/zip", pptx: "application/zip",
        "application/vnd.oasis.opendocument.text": "application/zip",
        "application/vnd.oasis.opendocument.spreadsheet": "application/zip",
        "application/vnd.oasis.opendocument.presentation": "application/zip",
        "application/vnd.oasis.opendocument.graphics": "application/zip",
        "application/epub+zip": "application/zip",
        "application/java-archive": "application/zip",
        "application/vnd.android.package-archive": "application/java-archive",
        "application/msword": "application/x-ole-storage",
        "application/vnd.ms-excel": "application/x-ole-storage",
        "application/vnd.ms-powerpoint": "application/x-ole-storage",
        "application/vnd.ms-outlook": "application/x-ole-storage",
        "application/x-msi": "application/x-ole-storage",
        "application/x-tgsticker": "application/gzip",
        "image/svg+xml": "application/xml", "application/rss+xml": "application/xml",
        "application/atom+xml": "application/xml", "application/xhtml+xml": "application/xml",
        "application/vnd.google-earth.kml+xml": "application/xml",
        "application/gpx+xml": "application/xml",
        "application/geo+json": "application/json",
        "application/xml": "text/plain", "application/json": "text/plain",
        "text/html": "text/plain", "text/csv": "text/plain", "text/tab-separated-values": "text/plain",
        "text/markdown": "text/plain", "text/css": "text/plain", "text/javascript": "text/plain",
        "text/vcard": "text/plain", "text/calendar": "text/plain", "application/yaml": "text/plain",
        "application/toml": "text/plain",
        "text/x-shellscript": "text/plain", "text/x-python": "text/plain",
        "text/x-swift": "text/plain", "text/x-c": "text/plain", "text/x-c++": "text/plain",
        "text/x-java": "text/plain", "text/x-go": "text/plain", "text/x-rust": "text/plain",
        "application/x-subrip": "text/plain", "text/vtt": "text/plain", "application/sql": "text/plain",
        "text/x-typescript": "text/plain",
        "application/x-executable": "application/x-elf", "application/x-sharedlib": "application/x-elf",
        "application/x-object": "application/x-elf", "application/x-coredump": "application/x-elf",
    ]

    /// Types that differ only in which tracks a shared container holds, or in a variant a player
    /// handles the same way; an extension of one on content of another is not a mismatch.
    static let family: [String: Int] = [
        "video/mp4": 1, "audio/mp4": 1, "video/quicktime": 1, "video/3gpp": 1, "audio/3gpp": 1,
        "video/3gpp2": 1, "audio/3gpp2": 1,
        "video/webm": 2, "audio/webm": 2, "video/matroska": 2, "audio/matroska": 2,
        "audio/ogg": 3, "video/ogg": 3, "application/ogg": 3,
        "image/png": 4, "image/apng": 4,
        "image/heic": 5, "image/heif": 5, "image/heic-sequence": 5, "image/heif-sequence": 5,
        "video/x-ms-asf": 6, "video/x-ms-wmv": 6, "audio/x-ms-wma": 6,
        "audio/amr": 7, "audio/amr-wb": 7,
    ]

    /// Whether `type` is a (possibly indirect) child of `ancestor`.
    /// ``byExtension`` and ``parent`` as `TypeTable`s, for the lookups made on every detection of a file.
    static let extensionLookup = TypeTable(byExtension.map { (key: $0.key, value: $0.value) })
    private static let parentLookup = TypeTable(parent.map { (key: $0.key, value: $0.value) })

    package static func isDescendant(_ type: String, of ancestor: String) -> Bool {
        var current = type
        for _ in 0..<8 {
            guard let next = parentLookup[current] else { return false }
            if next == ancestor { return true }
            current = next
        }
        return false
    }

    /// Whether `type` is text a person could read (text/*, JSON, XML and their children).
    static func isTextual(_ type: String) -> Bool {
        type.hasPrefix("text/") || isDescendant(type, of: "text/plain")
    }

    /// Whether a file whose content is `content` may harmlessly carry an extension meaning `claimed`.
    static func isCompatible(content: String, claimed: String) -> Bool {
        if content == claimed { return true }
        if let a = family[content], let b = family[claimed], a == b { return true }
        // A more general extension is still true: `.zip` on a DOCX, `.txt` on JSON.
        return isDescendant(content, of: claimed)
    }
}
