import Attache
import FoundationEssentials
import Glibc
import TOMLKit

/// The config file of endpoints: TOML, one `[endpoints.NAME]` table per endpoint.
///
/// ```toml
/// [endpoints.files]
/// url = "https://files.example/upload"
/// bearer-env = "FILES_TOKEN"          # the variable's name, never the token
/// header-env = { "X-Api-Key" = "FILES_API_KEY" }
/// fields = { chat_id = "42" }
/// attempts = 4
///
/// [endpoints.files.seal]
/// scheme = "stream-gcm"
/// key-file = "/etc/attache/files.key"
/// ```
///
/// Where it is looked up: ``locate(explicit:environment:)``. What each key means: the README's
/// "Config file" section. The file holds no secrets by design: a token, password or key written in it
/// (`bearer = "…"`, `Authorization` under `headers`, `seal.key`) is refused with the key to use
/// instead, and so is every unknown key and every value of the wrong type, each with the file, the
/// line and the key.
package struct EndpointConfigFile: Sendable {
    /// The file's path.
    package let path: String
    /// The endpoints by name.
    package let endpoints: [String: Endpoint]

    /// The answer profiles `answer-profile` may name.
    package static let answerProfiles = ["errorcode", "status", "s3-post", "telegram"]
    /// The values `thumbnails` may take.
    package static let thumbnailPlacements = ["separate", "inline", "none"]

    /// The file to read: `explicit` (`--config`), else `$ATTACHE_CONFIG`, else
    /// `$XDG_CONFIG_HOME/attache/config.toml`, else `~/.config/attache/config.toml`; `named` says
    /// whether it was named (by the flag or the variable), in which case it must exist.
    package static func locate(explicit: String?, environment: [String: String]) -> (path: String, named: Bool)? {
        if let explicit { return (explicit, true) }
        if let named = environment["ATTACHE_CONFIG"], !named.isEmpty { return (named, true) }
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return (xdg + "/attache/config.toml", false) }
        if let home = environment["HOME"], !home.isEmpty { return (home + "/.config/attache/config.toml", false) }
        return nil
    }

    /// The endpoint `name` of the file ``locate(explicit:environment:)`` finds.
    /// - Throws: ``AttacheError`` `.configInvalid` when there is no such file or endpoint, or the file
    ///   is wrong (``load(path:)``).
    package static func endpoint(
        named name: String, explicit: String?, environment: [String: String]
    ) throws -> Endpoint {
        guard let (path, named) = locate(explicit: explicit, environment: environment) else {
            throw AttacheError(
                .configInvalid, stage: .configuration,
                "--endpoint \(name) needs a config file: give --config FILE or set ATTACHE_CONFIG")
        }
        guard named || FileManager.default.fileExists(atPath: path) else {
            throw AttacheError(
                .configInvalid, stage: .configuration,
                "--endpoint \(name) needs a config file, and there is none here (give --config FILE or set ATTACHE_CONFIG)",
                file: path)
        }
        return try load(path: path).endpoint(named: name)
    }

    /// The endpoint `name`.
    /// - Throws: ``AttacheError`` `.configInvalid` listing the endpoints the file has.
    package func endpoint(named name: String) throws -> Endpoint {
        guard let endpoint = endpoints[name] else {
            let known = endpoints.keys.sorted()
            throw AttacheError(
                .configInvalid, stage: .configuration,
                "no endpoint '\(name)' (the file has " + (known.isEmpty ? "none" : known.joined(separator: ", ")) + ")",
                file: path)
        }
        return endpoint
    }

    /// Reads and checks the file at `path`.
    /// - Throws: ``AttacheError`` `.configInvalid` naming `path` (and the line and key when it can).
    package static func load(path: String) throws -> EndpointConfigFile {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read as UTF-8 text" : "does not exist"
            throw AttacheError(.configInvalid, stage: .configuration, "the config file \(reason)", file: path)
        }
        return try parse(text, path: path)
    }

    /// Parses the text of a config file; `path` is for messages.
    /// - Throws: ``AttacheError`` `.configInvalid` naming `path`, the line and the key.
    package static func parse(_ text: String, path: String) throws -> EndpointConfigFile {
        let document: TOMLTable
        do {
            document = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw AttacheError(
                .configInvalid, stage: .configuration,
                "line \(error.source.begin.line): not valid TOML: \(error.description)", file: path)
        }
        let reader = Reader(path: path, lines: KeyLines(text))
        var endpoints: [String: Endpoint] = [:]
        for key in document.keys {
            guard key == "endpoints" else {
                throw reader.problem([key], "unknown key; the file holds [endpoints.NAME] tables only")
            }
        }
        if let value = document["endpoints"] {
            let table = try reader.table(value, ["endpoints"])
            for name in table.keys {
                endpoints[name] = try reader.endpoint(name, try reader.table(table[name]!, ["endpoints", name]))
            }
        }
        return EndpointConfigFile(path: path, endpoints: endpoints)
    }

    /// Reads the values of one file, turning every problem into an error with its line.
    private struct Reader {
        let path: String
        let lines: KeyLines

        /// Keys that would hold a secret, with the key to write instead.
        static let inlineSecrets: [String: String] = [
            "bearer": "bearer-env", "token": "bearer-env", "bearer-token": "bearer-env",
            "authorization": "bearer-env, user-env or header-env", "password": "user-env", "user": "user-env",
            "api-key": "header-env", "secret": "header-env", "key": "seal.key-env or seal.key-file",
            "aws-access-key-id": "aws-profile (or AWS_ACCESS_KEY_ID)", "aws-secret-access-key": "aws-profile (or AWS_SECRET_ACCESS_KEY)",
            "aws-session-token": "aws-profile (or AWS_SESSION_TOKEN)",
        ]

        static let endpointKeys: Set<String> = [
            "url", "answer-profile", "id-pointer", "file-field", "fields", "headers", "header-env", "bearer-env",
            "user-env", "user-agent", "ca-file", "pinned-public-key", "thumbnails", "seal", "connect-timeout",
            "stall-timeout", "attempts", "retry-budget", "clamd", "scan-failure", "aws-profile", "region", "s3-endpoint",
            "s3-addressing", "key-template",
        ]

        static let sealKeys: Set<String> = ["scheme", "key-env", "key-file", "base64"]

        func problem(_ key: [String], _ message: String) -> AttacheError {
            let line = lines.line(of: key).map { "line \($0): " } ?? ""
            return AttacheError(
                .configInvalid, stage: .configuration, "\(line)\(KeyLines.display(key)): \(message)", file: path)
        }

        func table(_ value: any TOMLValueConvertible, _ key: [String]) throws -> TOMLTable {
            guard let table = value.table else { throw problem(key, "must be a table, not \(Self.describe(value))") }
            return table
        }

        func string(_ value: any TOMLValueConvertible, _ key: [String]) throws -> String {
            guard let text = value.string else { throw problem(key, "must be a string, not \(Self.describe(value))") }
            return text
        }

        func seconds(_ value: any TOMLValueConvertible, _ key: [String]) throws -> Double {
            guard let number = value.double ?? value.int.map(Double.init) else {
                throw problem(key, "must be a number of seconds, not \(Self.describe(value))")
            }
            guard number > 0, number.isFinite else { throw problem(key, "must be more than 0 seconds") }
            return number
        }

        func variableName(_ value: any TOMLValueConvertible, _ key: [String]) throws -> String {
            let name = try string(value, key)
            let valid = !name.isEmpty && name.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0)
                || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) } && !(0x30...0x39).contains(name.utf8.first!)
            guard valid else {
                throw problem(key, "must name an environment variable (letters, digits, _), the secret itself stays in the environment")
            }
            return name
        }

        func oneOf(_ value: any TOMLValueConvertible, _ key: [String], _ choices: [String]) throws -> String {
            let text = try string(value, key)
            guard choices.contains(text) else {
                throw problem(key, "'\(text)' is not one of \(choices.joined(separator: ", "))")
            }
            return text
        }

        func refuseUnknown(_ table: TOMLTable, _ prefix: [String], known: Set<String>) throws {
            for key in table.keys.sorted() where !known.contains(key) {
                if let instead = Self.inlineSecrets[key.lowercased()] {
                    throw problem(
                        prefix + [key],
                        "the config file holds no secrets; name where the value is instead: \(instead)")
                }
                throw problem(prefix + [key], "unknown key; known keys: \(known.sorted().joined(separator: ", "))")
            }
        }

        func endpoint(_ name: String, _ table: TOMLTable) throws -> Endpoint {
            let prefix = ["endpoints", name]
            try refuseUnknown(table, prefix, known: Self.endpointKeys)
            var endpoint = Endpoint()
            endpoint.name = name
            endpoint.file = path
            for key in table.keys {
                let value = table[key]!
                let at = prefix + [key]
                switch key {
                case "url":
                    let url = try string(value, at)
                    guard url.hasPrefix("http://") || url.hasPrefix("https://") || S3Location(url) != nil else {
                        throw problem(at, "must start with http:// or https://, or be s3://BUCKET/PREFIX/")
                    }
                    endpoint.url = url
                case "aws-profile": endpoint.objectStore.awsProfile = try string(value, at)
                case "region": endpoint.objectStore.region = try string(value, at)
                case "s3-endpoint":
                    let url = try string(value, at)
                    guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                        throw problem(at, "must start with http:// or https://")
                    }
                    endpoint.objectStore.s3Endpoint = url
                case "s3-addressing":
                    endpoint.objectStore.s3Addressing = S3Addressing(rawValue: try oneOf(value, at, S3Addressing.allCases.map(\.rawValue)))
                case "key-template": endpoint.objectStore.keyTemplate = try string(value, at)
                case "answer-profile": endpoint.answerProfile = AnswerProfile(rawValue: try oneOf(value, at, EndpointConfigFile.answerProfiles))
                case "id-pointer":
                    let pointer = try string(value, at)
                    guard pointer.isEmpty || pointer.hasPrefix("/") else {
                        throw problem(at, "must be a JSON pointer (RFC 6901), such as /result/document/file_id")
                    }
                    do { endpoint.idPointer = try JSONPointer(pointer) } catch let error as AttacheError {
                        throw problem(at, error.message)
                    }
                case "file-field":
                    endpoint.fileField = try string(value, at)
                    guard endpoint.fileField?.isEmpty == false else { throw problem(at, "must not be empty") }
                case "fields": endpoint.fields = try fields(try self.table(value, at), at)
                case "headers": endpoint.headers = try headers(try self.table(value, at), at)
                case "header-env":
                    let headers = try self.table(value, at)
                    endpoint.headerEnv = try headers.keys.sorted().map { header in
                        Endpoint.Pair(name: try headerName(header, at + [header]), value: try variableName(headers[header]!, at + [header]))
                    }
                case "bearer-env": endpoint.bearerEnv = try variableName(value, at)
                case "user-env": endpoint.userEnv = try variableName(value, at)
                case "user-agent": endpoint.userAgent = try string(value, at)
                case "ca-file": endpoint.caFile = try string(value, at)
                case "pinned-public-key": endpoint.pinnedPublicKey = try string(value, at)
                case "thumbnails": endpoint.thumbnails = ThumbnailPlacement(rawValue: try oneOf(value, at, EndpointConfigFile.thumbnailPlacements))
                case "seal": endpoint.seal = try seal(try self.table(value, at), at)
                case "clamd":
                    do { endpoint.clamd = try ClamdAddress(parsing: try string(value, at)) } catch let error as AttacheError {
                        throw problem(at, error.message)
                    }
                case "scan-failure":
                    endpoint.scanFailure = ScanFailurePolicy(rawValue: try oneOf(value, at, ScanFailurePolicy.allCases.map(\.rawValue)))
                case "connect-timeout": endpoint.connectTimeout = try seconds(value, at)
                case "stall-timeout": endpoint.stallTimeout = try seconds(value, at)
                case "retry-budget": endpoint.retryBudget = try seconds(value, at)
                case "attempts":
                    guard let attempts = value.int else { throw problem(at, "must be an integer, not \(Self.describe(value))") }
                    guard attempts >= 1 else { throw problem(at, "must be at least 1") }
                    endpoint.attempts = attempts
                default: break
                }
            }
            return endpoint
        }

        /// `fields`: a string per name, or an array of strings for a list (`"tags[]" = ["a", "b"]`).
        func fields(_ table: TOMLTable, _ prefix: [String]) throws -> [Endpoint.Pair] {
            var pairs: [Endpoint.Pair] = []
            for name in table.keys.sorted() {
                let value = table[name]!
                if let array = value.array {
                    for element in array { pairs.append(.init(name: name, value: try string(element, prefix + [name]))) }
                } else {
                    pairs.append(.init(name: name, value: try string(value, prefix + [name])))
                }
            }
            return pairs
        }

        /// `headers`: values that are not secret. A header that carries credentials must come from
        /// the environment (`header-env`, `bearer-env`, `user-env`).
        func headers(_ table: TOMLTable, _ prefix: [String]) throws -> [Endpoint.Pair] {
            try table.keys.sorted().map { name in
                let lower = name.lowercased()
                let secretWords = ["authorization", "cookie", "token", "secret", "password", "key", "auth"]
                if secretWords.contains(where: { lower.contains($0) }) {
                    throw problem(
                        prefix + [name],
                        "a header that may carry a secret is not written in the config file; name its environment variable under header-env")
                }
                return Endpoint.Pair(name: try headerName(name, prefix + [name]), value: try string(table[name]!, prefix + [name]))
            }
        }

        func headerName(_ name: String, _ key: [String]) throws -> String {
            guard HeaderFieldSyntax.isValidName(name) else {
                throw problem(key, "is not a header name")
            }
            return name
        }

        func seal(_ table: TOMLTable, _ prefix: [String]) throws -> Endpoint.Seal {
            try refuseUnknown(table, prefix, known: Self.sealKeys)
            var seal = Endpoint.Seal()
            for key in table.keys {
                let value = table[key]!
                let at = prefix + [key]
                switch key {
                case "scheme": seal.scheme = SealScheme(rawValue: try oneOf(value, at, SealScheme.allCases.map(\.rawValue)))
                case "key-env": seal.keyEnv = try variableName(value, at)
                case "key-file": seal.keyFile = try string(value, at)
                case "base64":
                    guard let flag = value.bool else { throw problem(at, "must be true or false, not \(Self.describe(value))") }
                    seal.base64 = flag
                default: break
                }
            }
            if seal.keyEnv != nil, seal.keyFile != nil {
                throw problem(prefix + ["key-file"], "give only one of key-env and key-file")
            }
            return seal
        }

        static func describe(_ value: any TOMLValueConvertible) -> String {
            switch value.type {
            case .string: "a string"
            case .int: "an integer"
            case .double: "a number"
            case .bool: "a boolean"
            case .table: "a table"
            case .array: "an array"
            default: "a date or time"
            }
        }
    }
}

/// The line each key of a TOML text is written on, for messages: TOMLKit gives positions for syntax
/// errors only. Table headers (`[endpoints.bot]`), `key = value` lines and the keys of an inline
/// table on the same line are found; a key it cannot place is reported without a line.
package struct KeyLines: Sendable {
    private var lineByKey: [[String]: Int] = [:]

    package init(_ text: String) {
        var table: [String] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            var scanner = Scanner(Array(rawLine.utf8))
            scanner.skipSpaces()
            if scanner.peek == UInt8(ascii: "[") {
                scanner.advance()
                let isArray = scanner.peek == UInt8(ascii: "[")
                if isArray { scanner.advance() }
                guard let path = scanner.keyPath() else { continue }
                table = path
                record(table, number)
                continue
            }
            guard let key = scanner.keyPath(), scanner.take(UInt8(ascii: "=")) else { continue }
            record(table + key, number)
            // An inline table on the same line: `header-env = { "X-Api-Key" = "API_KEY", ... }`.
            scanner.skipSpaces()
            if scanner.take(UInt8(ascii: "{")) {
                while let inner = scanner.keyPath(), scanner.take(UInt8(ascii: "=")) {
                    record(table + key + inner, number)
                    scanner.skipValue()
                    guard scanner.take(UInt8(ascii: ",")) else { break }
                }
            }
        }
    }

    private mutating func record(_ key: [String], _ line: Int) {
        if lineByKey[key] == nil { lineByKey[key] = line }
    }

    /// The line of `key`, else of the nearest table that holds it.
    package func line(of key: [String]) -> Int? {
        var key = key
        while !key.isEmpty {
            if let line = lineByKey[key] { return line }
            key.removeLast()
        }
        return nil
    }

    /// `endpoints.bot."X-Api-Key"`: the key as TOML would write it.
    package static func display(_ key: [String]) -> String {
        key.map { part in
            let bare = !part.isEmpty && part.utf8.allSatisfy {
                $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0)
                    || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            }
            return bare ? part : "\"\(part)\""
        }.joined(separator: ".")
    }

    /// Just enough of TOML's key syntax: bare keys, "basic" and 'literal' quoted keys, dots.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }
        mutating func advance() { index += 1 }

        mutating func skipSpaces() {
            while let byte = peek, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { advance() }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            skipSpaces()
            guard peek == byte else { return false }
            advance()
            return true
        }

        /// A dotted key, or nil when there is none here.
        mutating func keyPath() -> [String]? {
            var parts: [String] = []
            repeat {
                skipSpaces()
                guard let part = keyPart() else { return nil }
                parts.append(part)
            } while take(UInt8(ascii: "."))
            return parts
        }

        private mutating func keyPart() -> String? {
            guard let first = peek else { return nil }
            if first == UInt8(ascii: "\"") || first == UInt8(ascii: "'") {
                advance()
                var part: [UInt8] = []
                while let byte = peek, byte != first {
                    if first == UInt8(ascii: "\""), byte == UInt8(ascii: "\\") { advance() }
                    if let escaped = peek { part.append(escaped) }
                    advance()
                }
                guard peek == first else { return nil }
                advance()
                return String(decoding: part, as: UTF8.self)
            }
            let start = index
            while let byte = peek, byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || (0x30...0x39).contains(byte)
                || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            {
                advance()
            }
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// Skips one value of an inline table: a string, or anything up to `,` or `}` outside brackets.
        mutating func skipValue() {
            skipSpaces()
            var depth = 0
            while let byte = peek {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    advance()
                    while let inner = peek, inner != byte {
                        if byte == UInt8(ascii: "\""), inner == UInt8(ascii: "\\") { advance() }
                        advance()
                    }
                    advance()
                    continue
                }
                if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") { depth += 1 }
                if byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") {
                    if depth == 0 { return }
                    depth -= 1
                }
                if byte == UInt8(ascii: ","), depth == 0 { return }
                advance()
            }
        }
    }
}
