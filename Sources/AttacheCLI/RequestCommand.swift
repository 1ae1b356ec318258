package import ArgumentParser
import Attache
import FoundationEssentials
import Glibc
import Logging

/// `attache request [METHOD] URL`: one HTTP request in the manner of httpie and curl, through the
/// library's ``RequestClient``.
package struct RequestCommand: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Send one HTTP request and print the answer's body.",
        discussion: """
            METHOD defaults to GET, or to POST when a body is given. Parameters with nested names are \
            encoded as the old clients did (AFNetworking, PHP, Rack): phone[mobile]=1 becomes \
            phone%5Bmobile%5D=1, families[]=a families[]=b a list. Every request carries a User-Agent, \
            an Accept-Language from the locale (LC_ALL, LC_MESSAGES, LANG), Accept-Encoding with \
            transparent decompression, and the --system-param parameters (in the query of GET, HEAD \
            and DELETE, in the form or JSON body otherwise; a parameter given with --query, --form or \
            --json-field wins). GET, HEAD, PUT and DELETE are retried on connection errors, 408, 429 \
            and 5xx.

            The body goes to standard output (or to -o FILE, streamed); --json prints one object \
            instead: {"status", "headers", "body" (JSON, text or base64, as "bodyEncoding" says), \
            "timings"}. -v logs one line per exchange with curl's timings on standard error, \
            --log-level trace the headers, bounded body previews and an equivalent curl command; \
            credentials, cookies and secret fields (token, password, sign, secret, key, ...) are \
            redacted in every line.

            Examples:
              attache request https://api.example/users --query 'filter[role]=admin'
              attache request POST https://api.example/people --form 'phone[mobile]=1'
              attache request POST https://api.example/people --form 'families[]=a'
              attache request PUT https://api.example/users/7 --json-field age:=37
              attache request POST https://api.example/items --json-body @item.json
              attache request https://api.example/me --bearer-env API_TOKEN --json
              attache request https://files.example/report.pdf -o report.pdf -v
              attache request POST https://old.example/send --json-field text=hi
                --seal-json legacy-cbc --key-file server.pass (one command line)

            Exit status: 0 for a 1xx-3xx answer; 77 for a 4xx (rejected), 75 for 408/429/5xx once the \
            retries are spent, 76 for an answer --expect-json cannot read, 65 a sealed answer that does \
            not decrypt, 64 usage, 66 a body or key file that cannot be read, 69 server unreachable or \
            TLS failure, 74 -o FILE cannot be written, 130 cancelled. The body is printed in every case.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("[METHOD] URL: the method (default GET, or POST with a body) and the http:// or https:// URL.", valueName: "method-and-url"))
    var words: [String]

    @Option(name: .customLong("query"), help: ArgumentHelp("A query parameter NAME=VALUE; nested names as name[key] and name[]. Repeatable.", valueName: "name=value"))
    var queries: [String] = []

    @Option(name: .customLong("form"), help: ArgumentHelp("A form field NAME=VALUE of an application/x-www-form-urlencoded body (in the query for GET, HEAD and DELETE); nested names as for --query. Repeatable.", valueName: "name=value"))
    var forms: [String] = []

    @Option(name: .customLong("json-field"), help: ArgumentHelp("A member of a JSON object body: NAME=TEXT for a string, NAME:=JSON for any JSON value (7, true, null, [1,2], {\"a\":1}). Repeatable.", valueName: "name=value"))
    var jsonFields: [String] = []

    @Option(help: ArgumentHelp("A JSON body: @FILE, or the JSON text itself.", valueName: "@file"))
    var jsonBody: String?

    @Option(help: ArgumentHelp("An XML property list body (AFNetworking's plist serializer) made from the JSON in @FILE.", valueName: "@file"))
    var plistBody: String?

    @Option(help: ArgumentHelp("Send the JSON body (--json-field or --json-body) as the old servers' encrypted form: JSON sealed with SCHEME (legacy-cbc or legacy-ecb with a passphrase, INSECURE; stream-gcm with a 32-byte key), base64, application/x-www-form-urlencoded; an answer sent back the same way is decrypted (docs/FORMAT.md).", valueName: "scheme"))
    var sealJson: SealScheme?

    @Option(help: ArgumentHelp("With --seal-json: send the base64 text in this form field instead of as the bare body.", valueName: "name"))
    var sealField: String?

    @Option(help: ArgumentHelp("With --seal-json: the key file (32 raw bytes or base64; legacy schemes: a passphrase).", valueName: "file"))
    var keyFile: String?

    @Option(help: ArgumentHelp("With --seal-json: the environment variable holding the key (base64; legacy schemes: a passphrase).", valueName: "name"))
    var keyEnv: String?

    @Option(name: .customLong("system-param"), help: ArgumentHelp("A parameter added to the request as the client's system parameters are (the request's own wins). Repeatable.", valueName: "name=value"))
    var systemParameters: [String] = []

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the answer's body to this file (streamed) instead of standard output.", valueName: "file"))
    var output: String?

    @Flag(help: "Print one JSON object: status, headers, body (JSON, text or base64) and timings.")
    var json = false

    @Flag(help: "Fail with 76 unless the answer is JSON.")
    var expectJson = false

    @Flag(inversion: .prefixedNo, help: "Offer Accept-Encoding and decompress the answer (default: yes).")
    var compressed = true

    @Option(help: ArgumentHelp("The longest answer body kept in memory, in bytes (default: 67108864); -o streams any size.", valueName: "bytes"))
    var maxResponseSize = 64 << 20

    @OptionGroup var connection: ConnectionOptions

    @OptionGroup var endpointSelection: EndpointOptions

    package func validate() throws {
        guard (1...2).contains(words.count) else { throw ValidationError("expected [METHOD] URL") }
        let url = words.last ?? ""
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw ValidationError("the URL must start with http:// or https://")
        }
        if words.count == 2, !HeaderFieldSyntax.isValidName(words[0]) {
            throw ValidationError("'\(words[0])' is not an HTTP method")
        }
        let bodies = [!forms.isEmpty && !Self.parametersInQuery(method), !jsonFields.isEmpty || jsonBody != nil, plistBody != nil]
        guard bodies.filter({ $0 }).count <= 1 else {
            throw ValidationError("give one kind of body: --form, --json-field/--json-body, or --plist-body")
        }
        if !jsonFields.isEmpty, jsonBody != nil { throw ValidationError("give --json-field or --json-body, not both") }
        if let sealJson {
            guard [.legacyCBC, .legacyECB, .streamGCM].contains(sealJson) else {
                throw ValidationError("--seal-json takes legacy-cbc, legacy-ecb or stream-gcm")
            }
            guard !jsonFields.isEmpty || jsonBody != nil else {
                throw ValidationError("--seal-json seals a JSON body: give --json-field or --json-body")
            }
            guard (keyFile == nil) != (keyEnv == nil) else {
                throw ValidationError("--seal-json needs exactly one of --key-file and --key-env")
            }
        } else if keyFile != nil || keyEnv != nil || sealField != nil {
            throw ValidationError("--key-file, --key-env and --seal-field go with --seal-json")
        }
        if json, output == "-" { throw ValidationError("--json prints to standard output; give -o a file") }
        guard maxResponseSize > 0 else { throw ValidationError("--max-response-size must be positive") }
        _ = try ParameterNames.parameters(from: queries, option: "--query")
        _ = try ParameterNames.parameters(from: forms, option: "--form")
        _ = try ParameterNames.parameters(from: systemParameters, option: "--system-param")
        _ = try JSONFields.object(from: jsonFields)
    }

    /// The method: the first word, else POST when a body is given, else GET.
    var method: RequestMethod {
        if words.count == 2 { return RequestMethod(rawValue: words[0]) }
        let hasBody = !jsonFields.isEmpty || jsonBody != nil || plistBody != nil || !forms.isEmpty
        return hasBody ? .post : .get
    }

    static func parametersInQuery(_ method: RequestMethod) -> Bool { method.encodesParametersInQuery }

    package func run() async throws {
        let logger = global.bootstrapLogging()
        try await reportingErrors {
            var configuration = RequestClient.Configuration(logger: logger)
            // An endpoint of the config file gives its headers, credentials, TLS and timeouts (not its
            // URL: the URL is the argument); flags given as well win.
            let endpoint = try endpointSelection.load()
            try connection.apply(to: &configuration.connection, endpoint: endpoint, environment: CommandIO.environment)
            configuration.acceptsCompressedResponses = compressed
            configuration.maximumResponseBodySize = maxResponseSize
            configuration.systemParameters = try ParameterNames.parameters(from: systemParameters, option: "--system-param")
            // The credentials read from the environment are masked wherever they would appear in a log line.
            configuration.redaction.secretValues = try secretValues()
            let client = RequestClient(configuration: configuration)

            var request = ClientRequest(method: method, url: words.last ?? "")
            request.query = try ParameterNames.parameters(from: queries, option: "--query")
            request.parameters = try ParameterNames.parameters(from: forms, option: "--form")
            let sealing = try sealedForm()
            request.body = try body(sealing: sealing)
            request.bodyIsSecret = sealing != nil
            let destination = output == "-" ? nil : output
            var response = try await client.send(request, writingBodyTo: destination)
            if let sealing, destination == nil { response = try Self.opened(response, with: sealing) }
            try report(response, destination: destination)
            if expectJson { _ = try response.validate(statusCodes: 0..<1000, contentTypes: ["application/json", "application/*+json"]) }
            try response.validate(statusCodes: 100..<400)
        }
    }

    /// The explicit body of --json-field, --json-body or --plist-body, sealed with `sealing` when
    /// given; nil for none (--form's fields become the body through the request's parameters).
    func body(sealing: SealedJSONForm?) throws -> RequestBody? {
        var json: JSONValue?
        if !jsonFields.isEmpty { json = .object(try JSONFields.object(from: jsonFields)) }
        if let jsonBody { json = try Self.readJSON(jsonBody, option: "--json-body") }
        if let json { return try sealing?.body(json: json) ?? .json(json) }
        if let plistBody { return .propertyList(try PropertyListValue(Self.readJSON(plistBody, option: "--plist-body"))) }
        return nil
    }

    /// The encrypted JSON form of --seal-json, its key read from --key-file or --key-env.
    func sealedForm() throws -> SealedJSONForm? {
        guard let sealJson else { return nil }
        let scheme = sealJson
        let key = try SealKeyOptions.loadKey(file: keyFile, environmentVariable: keyEnv, for: scheme)
        return SealedJSONForm(scheme: scheme, key: key, field: sealField)
    }

    /// The answer with its body decrypted when it came back sealed: a 2xx answer that is not JSON is
    /// opened with the request's form (a JSON answer is plain already).
    static func opened(_ response: ServerResponse, with form: SealedJSONForm) throws -> ServerResponse {
        guard (200..<300).contains(response.status), !response.body.isEmpty,
            response.mediaType?.contains("json") != true, (try? JSONValue.parse(response.body)) == nil
        else { return response }
        var opened = response
        opened.body = try form.open(response.body)
        opened.headers = response.headers.map { header in
            header.name.lowercased() == "content-type" ? HeaderField(name: header.name, value: "application/json") : header
        }
        if !opened.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            opened.headers.append(HeaderField(name: "Content-Type", value: "application/json"))
        }
        return opened
    }

    /// JSON from `@FILE` or the text itself.
    static func readJSON(_ argument: String, option: String) throws -> JSONValue {
        let bytes: [UInt8]
        if argument.hasPrefix("@") {
            let path = String(argument.dropFirst())
            guard FileManager.default.fileExists(atPath: path) else {
                throw AttacheError(.fileNotFound, stage: .read, "\(option): no such file", file: path)
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw AttacheError(.fileUnreadable, stage: .read, "\(option): cannot read the file", file: path)
            }
            bytes = Array(data)
        } else {
            bytes = Array(argument.utf8)
        }
        do {
            return try JSONValue.parse(bytes)
        } catch {
            throw AttacheError(
                .invalidArgument, stage: .request, "\(option): not JSON",
                file: argument.hasPrefix("@") ? String(argument.dropFirst()) : nil)
        }
    }

    private func secretValues() throws -> [String] {
        let environment = CommandIO.environment
        var values: [String] = []
        if let name = connection.bearerEnv, let token = environment[name] { values.append(token) }
        if let name = connection.userEnv, let text = environment[name] {
            values.append(text)
            if let colon = text.firstIndex(of: ":") { values.append(String(text[text.index(after: colon)...])) }
        }
        return values
    }

    /// Writes bytes to standard output as they are (a body need not be text).
    static func writeToStandardOutput(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { CommandIO.write($0, to: STDOUT_FILENO) }
    }

    private func report(_ response: ServerResponse, destination: String?) throws {
        if json {
            Console.outJSON(AnswerObject(response: response, bodyFile: destination).value)
        } else if destination == nil {
            Self.writeToStandardOutput(response.body)
        } else if global.verbose {
            Console.err("\(destination ?? ""): HTTP \(response.status)")
        }
    }
}

/// The `--json` object: status, headers, body by its kind, timings.
struct AnswerObject {
    let value: JSONValue

    init(response: ServerResponse, bodyFile: String?) {
        var headers: [String: JSONValue] = [:]
        for (name, value) in response.headers.map({ ($0.name, $0.value) }) {
            let key = name.lowercased()
            if case .string(let earlier)? = headers[key] {
                headers[key] = .string(earlier + ", " + value)
            } else {
                headers[key] = .string(value)
            }
        }
        var object: [String: JSONValue] = ["status": .number(Double(response.status)), "headers": .object(headers)]
        if let bodyFile {
            object["bodyFile"] = .string(bodyFile)
            object["bodyEncoding"] = .string("file")
        } else if response.body.isEmpty {
            object["bodyEncoding"] = .string("none")
        } else if response.mediaType?.contains("json") == true, let parsed = try? JSONValue.parse(response.body) {
            object["body"] = parsed
            object["bodyEncoding"] = .string("json")
        } else if let text = String(validating: response.body, as: UTF8.self), !text.unicodeScalars.contains(where: { $0.value == 0 }) {
            object["body"] = .string(text)
            object["bodyEncoding"] = .string("text")
        } else {
            object["body"] = .string(Base64.encode(response.body))
            object["bodyEncoding"] = .string("base64")
        }
        if response.bodyExceededCap { object["bodyTruncated"] = .bool(true) }
        if let timings = response.timings {
            func ms(_ duration: Duration) -> JSONValue { .number(duration.seconds * 1000) }
            object["timings"] = .object([
                "dnsMs": ms(timings.nameLookup), "connectMs": ms(timings.connect), "tlsMs": ms(timings.tlsHandshake),
                "firstByteMs": ms(timings.firstByte), "totalMs": ms(timings.total),
                "bytesSent": .number(Double(timings.bytesSent)), "bytesReceived": .number(Double(timings.bytesReceived)),
            ])
        }
        value = .object(object)
    }
}

/// Parameters from `NAME=VALUE` words with nested names, as PHP and Rack read them: `a[b]=1` a
/// member of a dictionary, `a[]=1` an element of a list, `a[b][]=1` both.
enum ParameterNames {
    enum Step: Equatable {
        case key(String)
        case append
    }

    /// The parameters of `words`.
    /// - Throws: `ValidationError` naming `option` for a word without `=`, a malformed name, or a name
    ///   given twice (use `name[]=` for a list).
    static func parameters(from words: [String], option: String) throws -> Parameters {
        var parameters: Parameters = [:]
        for word in words {
            guard let equals = word.firstIndex(of: "="), equals != word.startIndex else {
                throw ValidationError("\(option) needs NAME=VALUE, got '\(word)'")
            }
            let name = String(word[..<equals])
            let value = ParameterValue.string(String(word[word.index(after: equals)...]))
            let (base, steps) = try path(name, option: option)
            parameters[base] = try insert(value, steps: steps[...], into: parameters[base], name: name, option: option)
        }
        return parameters
    }

    /// `a[b][]` → ("a", [.key("b"), .append]).
    static func path(_ name: String, option: String) throws -> (String, [Step]) {
        guard let open = name.firstIndex(of: "[") else { return (name, []) }
        let base = String(name[..<open])
        guard !base.isEmpty else { throw ValidationError("\(option): the name '\(name)' starts with '['") }
        var steps: [Step] = []
        var rest = name[open...]
        while !rest.isEmpty {
            guard rest.first == "[", let close = rest.firstIndex(of: "]") else {
                throw ValidationError("\(option): cannot read the name '\(name)' (expected name[key] or name[])")
            }
            let key = rest[rest.index(after: rest.startIndex)..<close]
            steps.append(key.isEmpty ? .append : .key(String(key)))
            rest = rest[rest.index(after: close)...]
        }
        return (base, steps)
    }

    private static func insert(
        _ value: ParameterValue, steps: ArraySlice<Step>, into container: ParameterValue?, name: String, option: String
    ) throws -> ParameterValue {
        guard let step = steps.first else {
            guard container == nil else {
                throw ValidationError("\(option): '\(name)' is given twice (use \(name)[]= for a list)")
            }
            return value
        }
        switch step {
        case .key(let key):
            var members: Parameters = [:]
            if case .dictionary(let existing)? = container {
                members = existing
            } else if container != nil {
                throw ValidationError("\(option): '\(name)' mixes a value or a list with named members")
            }
            members[key] = try insert(value, steps: steps.dropFirst(), into: members[key], name: name, option: option)
            return .dictionary(members)
        case .append:
            var items: [ParameterValue] = []
            if case .array(let existing)? = container {
                items = existing
            } else if container != nil {
                throw ValidationError("\(option): '\(name)' mixes a value or named members with a list")
            }
            items.append(try insert(value, steps: steps.dropFirst(), into: nil, name: name, option: option))
            return .array(items)
        }
    }
}

/// The members of a JSON object from httpie-style words: `name=text` a string, `name:=json` any value.
enum JSONFields {
    static func object(from words: [String]) throws -> [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        for word in words {
            if let typed = word.firstRange(of: ":="), typed.lowerBound != word.startIndex,
                word.firstIndex(of: "=").map({ $0 > typed.lowerBound }) ?? false
            {
                let name = String(word[..<typed.lowerBound])
                let text = String(word[typed.upperBound...])
                guard let value = try? JSONValue.parse(Array(text.utf8)) else {
                    throw ValidationError("--json-field \(name):= needs JSON after :=, got '\(text)'")
                }
                object[name] = value
            } else if let equals = word.firstIndex(of: "="), equals != word.startIndex {
                object[String(word[..<equals])] = .string(String(word[word.index(after: equals)...]))
            } else {
                throw ValidationError("--json-field needs NAME=TEXT or NAME:=JSON, got '\(word)'")
            }
        }
        return object
    }
}
