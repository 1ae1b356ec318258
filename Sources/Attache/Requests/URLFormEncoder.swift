package import FoundationEssentials

/// Turns nested ``Parameters`` into a URL query or an `application/x-www-form-urlencoded` body:
/// `a=b&c[d]=e&f[]=g`.
///
/// The default output is what the old clients' AFNetworking sent, byte for byte, for the cases its
/// documentation and tests show:
///
/// ```swift
/// let encoder = URLFormEncoder()
/// encoder.encode(["name": "bang", "phone": ["mobile": "xx"], "families": ["father"], "nums": .set([1, 2])])
/// // "families[]=father&name=bang&nums=1&nums=2&phone[mobile]=xx"
/// ```
///
/// The rules:
/// - A dictionary's members are written as `name[member]`, an array's elements as `name[]` (see
///   ``ArrayEncoding``), a set's elements as `name` repeated, in the order of their encoded text.
/// - Keys are sorted by their UTF-8 bytes (code-point order), at every level, when ``sortsKeys`` is
///   set (the default), so the same parameters always give the same string and a signature over it
///   is stable. AFNetworking sorts by `-[NSString compare:]`, which agrees for every key that has no
///   character beyond U+FFFF next to one in U+E000–U+FFFF.
/// - Names and values are percent-encoded from their UTF-8 bytes with uppercase hex digits; RFC 3986's
///   unreserved characters (`A–Z a–z 0–9 - . _ ~`) stay as they are. By default `[` and `]` also stay
///   as they are in names, as AFNetworking 2 wrote them (`phone[mobile]=xx`), and are escaped in values;
///   every parser of nested parameters (PHP, Rack, Werkzeug, qs) decodes a name before it reads the
///   brackets, so ``BracketEncoding/percentEscaped`` (`phone%5Bmobile%5D=xx`, AFNetworking 3 and 4,
///   Alamofire) means the same thing to them. ``ReservedCharacters/keepSlashAndQuestionMark`` leaves
///   `/` and `?` unescaped as AFNetworking 3+/Alamofire do (RFC 3986 §3.4 allows both in a query).
///   ``afNetworking3`` sets both.
///
/// The encoder works on UTF-8 bytes with a lookup table: no Foundation string API is involved.
package struct URLFormEncoder: Sendable {
    /// How array elements are named.
    package enum ArrayEncoding: Sendable, Hashable {
        /// `a[]=x&a[]=y`: AFNetworking's and Alamofire's default; PHP and Rack read a list.
        case brackets
        /// `a=x&a=y`: the name repeated; what servlet, Go and Python `parse_qs` readers expect.
        case noBrackets
        /// `a[0]=x&a[1]=y`: explicit indices; PHP reads a list, Rack a hash with keys "0", "1".
        case indexInBrackets
    }

    /// How booleans are written.
    package enum BoolEncoding: Sendable, Hashable {
        /// `1` and `0`, as an `NSNumber` describes itself (AFNetworking).
        case numeric
        /// `true` and `false`.
        case literal
    }

    /// How dates are written.
    package enum DateEncoding: Sendable {
        /// Seconds since 1970-01-01T00:00:00Z, without a fraction when whole (`1700000000`, `1700000000.5`).
        case secondsSince1970
        /// Milliseconds since 1970, rounded to the nearest whole one (`1700000000500`).
        case millisecondsSince1970
        /// ISO 8601 in UTC, whole seconds: `2023-11-14T22:13:20Z`.
        case iso8601
        /// Whatever the closure returns (then percent-encoded like any value).
        case custom(@Sendable (Date) -> String)

        /// Shorthand for ``millisecondsSince1970``.
        package static let millis = DateEncoding.millisecondsSince1970
    }

    /// What a ``ParameterValue/null`` becomes.
    package enum NilEncoding: Sendable, Hashable {
        /// Nothing: the pair is left out (Alamofire's default).
        case dropKey
        /// `name=` with an empty value.
        case emptyValue
        /// `name` alone, without `=`: what AFNetworking writes for `NSNull`.
        case keyOnly
        /// `name=null`.
        case nullLiteral
    }

    /// How a space is written.
    package enum SpaceEncoding: Sendable, Hashable {
        /// `%20`, which every reader decodes (RFC 3986).
        case percentEscaped
        /// `+`, the HTML form convention (`+` itself is then always `%2B`).
        case plus
    }

    /// How `[` and `]` in names are written.
    package enum BracketEncoding: Sendable, Hashable {
        /// As they are: `phone[mobile]=xx` (AFNetworking 2, the old clients).
        case literal
        /// `phone%5Bmobile%5D=xx` (AFNetworking 3 and 4, Alamofire).
        case percentEscaped
    }

    /// Which characters besides RFC 3986's unreserved ones stay unescaped.
    package enum ReservedCharacters: Sendable, Hashable {
        /// None: every other byte is percent-encoded.
        case escapeAll
        /// `/` and `?` stay, as in AFNetworking 3+ and Alamofire (`key=a/b?c`).
        case keepSlashAndQuestionMark
    }

    /// How array elements are named; ``ArrayEncoding/brackets`` by default.
    package var arrayEncoding: ArrayEncoding
    /// How booleans are written; ``BoolEncoding/numeric`` by default.
    package var boolEncoding: BoolEncoding
    /// How dates are written; ``DateEncoding/secondsSince1970`` by default.
    package var dateEncoding: DateEncoding
    /// What a null becomes; ``NilEncoding/dropKey`` by default.
    package var nilEncoding: NilEncoding
    /// How spaces are written; ``SpaceEncoding/percentEscaped`` by default.
    package var spaceEncoding: SpaceEncoding
    /// How brackets in names are written; ``BracketEncoding/literal`` by default.
    package var bracketEncoding: BracketEncoding
    /// Which reserved characters stay unescaped; ``ReservedCharacters/escapeAll`` by default.
    package var reservedCharacters: ReservedCharacters
    /// Whether dictionary keys are sorted at every level (by UTF-8 bytes); true by default. When false
    /// they come in the dictionary's own order, which Swift does not fix between runs.
    package var sortsKeys: Bool

    /// Creates an encoder; the defaults reproduce AFNetworking 2's query strings and form bodies.
    package init(
        arrayEncoding: ArrayEncoding = .brackets,
        boolEncoding: BoolEncoding = .numeric,
        dateEncoding: DateEncoding = .secondsSince1970,
        nilEncoding: NilEncoding = .dropKey,
        spaceEncoding: SpaceEncoding = .percentEscaped,
        bracketEncoding: BracketEncoding = .literal,
        reservedCharacters: ReservedCharacters = .escapeAll,
        sortsKeys: Bool = true
    ) {
        self.arrayEncoding = arrayEncoding
        self.boolEncoding = boolEncoding
        self.dateEncoding = dateEncoding
        self.nilEncoding = nilEncoding
        self.spaceEncoding = spaceEncoding
        self.bracketEncoding = bracketEncoding
        self.reservedCharacters = reservedCharacters
        self.sortsKeys = sortsKeys
    }

    /// AFNetworking 3 and 4's `AFQueryStringFromParameters`: brackets in names escaped, `/` and `?`
    /// kept, `NSNull` written as the name alone.
    package static let afNetworking3 = URLFormEncoder(
        nilEncoding: .keyOnly, bracketEncoding: .percentEscaped, reservedCharacters: .keepSlashAndQuestionMark)

    /// Encodes `parameters` as `name=value` pairs joined by `&` (no leading `?`).
    package func encode(_ parameters: Parameters) -> String {
        String(decoding: encodedBytes(parameters), as: UTF8.self)
    }

    /// The UTF-8 bytes of ``encode(_:)-(Parameters)``, for a body without a detour through `String`.
    package func encodedBytes(_ parameters: Parameters) -> [UInt8] {
        var sink = EscapingSink(
            nameMask: nameMask, valueMask: valueMask, spaceAsPlus: spaceEncoding == .plus)
        sink.output.reserveCapacity(64 + parameters.count * 24)
        walkTopLevel(parameters, into: &sink)
        return sink.output
    }

    /// Encodes an `Encodable` (a struct or a dictionary at the top) like ``encode(_:)-(Parameters)``.
    ///
    /// ```swift
    /// struct Search: Encodable { let q: String; let page: Int }
    /// try URLFormEncoder().encode(Search(q: "a b", page: 2))   // "page=2&q=a%20b"
    /// ```
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` when the value does not encode as a keyed container.
    ///
    /// A dictionary literal passed to `encode` is read as ``Parameters`` (this overload is disfavoured),
    /// so `encode(["a": 1])` never goes through `Encodable`.
    @_disfavoredOverload
    package func encode<T: Encodable>(_ value: T) throws -> String {
        encode(try ParameterValue.parameters(encoding: value))
    }

    /// The name/value pairs ``encode(_:)-(Parameters)`` writes, in the same order, before percent-encoding.
    ///
    /// A name is the full bracketed name (`phone[mobile]`); a value written without `=`
    /// (``NilEncoding/keyOnly``) comes as the empty string. This is what a multipart body built from the
    /// same parameters needs.
    package func pairs(_ parameters: Parameters) -> [UploadField] {
        var sink = PairCollector()
        walkTopLevel(parameters, into: &sink)
        return sink.pairs.map {
            UploadField(name: String(decoding: $0.name, as: UTF8.self), value: String(decoding: $0.value ?? [], as: UTF8.self))
        }
    }

    /// `url` with the encoded parameters added to its query (after `?`, or `&` when it has a query),
    /// before any `#fragment`; `url` unchanged when the parameters encode to nothing.
    package func url(_ url: String, appending parameters: Parameters) -> String {
        let query = encode(parameters)
        guard !query.isEmpty else { return url }
        var base = Substring(url)
        var fragment: Substring = ""
        if let hash = base.firstIndex(of: "#") {
            fragment = base[hash...]
            base = base[..<hash]
        }
        let separator: String
        if let question = base.firstIndex(of: "?") {
            separator = base.index(after: question) == base.endIndex || base.hasSuffix("&") ? "" : "&"
        } else {
            separator = "?"
        }
        return base + separator + query + fragment
    }

    // MARK: - The walk

    private func walkTopLevel<Sink: PairSink>(_ parameters: Parameters, into sink: inout Sink) {
        var name: [UInt8] = []
        name.reserveCapacity(64)
        for key in orderedKeys(parameters) {
            // A top-level key is a name as it is: no brackets around it.
            name.removeAll(keepingCapacity: true)
            name.append(contentsOf: key.utf8)
            // `orderedKeys` returns keys of this dictionary, so the lookup cannot miss.
            if let value = parameters[key] { walk(value, name: &name, into: &sink) }
        }
    }

    private func walk<Sink: PairSink>(_ value: ParameterValue, name: inout [UInt8], into sink: inout Sink) {
        switch value {
        case .string(let text):
            var text = text
            text.withUTF8 { sink.emit(name: name, value: $0) }
        case .integer(let number):
            withDecimalDigits(number) { sink.emit(name: name, value: $0) }
        case .number(let number):
            emitText(Self.text(number), name: name, into: &sink)
        case .bool(let flag):
            let text: StaticString =
                boolEncoding == .numeric ? (flag ? "1" : "0") : (flag ? "true" : "false")
            sink.emit(name: name, value: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        case .date(let date):
            emitText(text(date), name: name, into: &sink)
        case .null:
            switch nilEncoding {
            case .dropKey: break
            case .emptyValue: sink.emit(name: name, value: UnsafeBufferPointer(start: nil, count: 0))
            case .keyOnly: sink.emitNameOnly(name: name)
            case .nullLiteral: emitText("null", name: name, into: &sink)
            }
        case .array(let elements):
            let base = name.count
            for (index, element) in elements.enumerated() {
                switch arrayEncoding {
                case .brackets: name.append(contentsOf: [0x5B, 0x5D])
                case .noBrackets: break
                case .indexInBrackets:
                    name.append(0x5B)
                    withDecimalDigits(Int64(index)) { name.append(contentsOf: $0) }
                    name.append(0x5D)
                }
                walk(element, name: &name, into: &sink)
                name.removeSubrange(base...)
            }
        case .set(let elements):
            walkSet(elements, name: &name, into: &sink)
        case .dictionary(let members):
            let base = name.count
            for key in orderedKeys(members) {
                name.append(0x5B)
                name.append(contentsOf: key.utf8)
                name.append(0x5D)
                if let member = members[key] { walk(member, name: &name, into: &sink) }
                name.removeSubrange(base...)
            }
        }
    }

    /// A set's elements under the same name, ordered by the pairs each one produces (for scalars: by
    /// their text, as AFNetworking orders an `NSSet` by `description`).
    private func walkSet<Sink: PairSink>(
        _ elements: Set<ParameterValue>, name: inout [UInt8], into sink: inout Sink
    ) {
        var rendered: [(order: [UInt8], pairs: [(name: [UInt8], value: [UInt8]?)])] = []
        rendered.reserveCapacity(elements.count)
        for element in elements {
            var collector = PairCollector()
            walk(element, name: &name, into: &collector)
            var order: [UInt8] = []
            for pair in collector.pairs {
                order.append(contentsOf: pair.name)
                order.append(0x3D)
                order.append(contentsOf: pair.value ?? [])
                order.append(0x26)
            }
            rendered.append((order, collector.pairs))
        }
        rendered.sort { $0.order.lexicographicallyPrecedes($1.order) }
        for element in rendered {
            for pair in element.pairs {
                if let value = pair.value {
                    value.withUnsafeBufferPointer { sink.emit(name: pair.name, value: $0) }
                } else {
                    sink.emitNameOnly(name: pair.name)
                }
            }
        }
    }

    private func orderedKeys(_ dictionary: [String: ParameterValue]) -> [String] {
        guard sortsKeys else { return Array(dictionary.keys) }
        return dictionary.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    private func emitText<Sink: PairSink>(_ text: String, name: [UInt8], into sink: inout Sink) {
        var text = text
        text.withUTF8 { sink.emit(name: name, value: $0) }
    }

    /// A double as `NSNumber` describes it for the values that matter: integral ones without a
    /// fraction, others in Swift's shortest round-tripping form (`0.1`, `1e-07`).
    static func text(_ number: Double) -> String {
        if let whole = ParameterValue.exactInteger(number) { return String(whole) }
        return String(describing: number)
    }

    func text(_ date: Date) -> String {
        switch dateEncoding {
        case .secondsSince1970: return Self.text(date.timeIntervalSince1970)
        case .millisecondsSince1970: return String(Int64((date.timeIntervalSince1970 * 1000).rounded()))
        case .iso8601: return UTCTimestamp.iso8601(date)
        case .custom(let format): return format(date)
        }
    }

    private var nameMask: UInt8 {
        var mask = PercentEncoding.unreserved
        if reservedCharacters == .keepSlashAndQuestionMark { mask |= PercentEncoding.slashQuestion }
        if bracketEncoding == .literal { mask |= PercentEncoding.brackets }
        return mask
    }

    private var valueMask: UInt8 {
        var mask = PercentEncoding.unreserved
        if reservedCharacters == .keepSlashAndQuestionMark { mask |= PercentEncoding.slashQuestion }
        return mask
    }
}

/// Writes the decimal digits of `value` into a stack buffer and passes them on, without a `String`.
@inline(__always)
func withDecimalDigits<R>(_ value: Int64, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
        var magnitude = value.magnitude
        var start = 20
        repeat {
            start -= 1
            buffer[start] = 0x30 + UInt8(magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        if value < 0 {
            start -= 1
            buffer[start] = 0x2D
        }
        return body(UnsafeBufferPointer(rebasing: buffer[start..<20]))
    }
}

/// Where the walk puts each pair.
protocol PairSink {
    mutating func emit(name: [UInt8], value: UnsafeBufferPointer<UInt8>)
    mutating func emitNameOnly(name: [UInt8])
}

/// Percent-encodes pairs straight into the output bytes.
struct EscapingSink: PairSink {
    var output: [UInt8] = []
    let nameMask: UInt8
    let valueMask: UInt8
    let spaceAsPlus: Bool
    private var first = true

    init(nameMask: UInt8, valueMask: UInt8, spaceAsPlus: Bool) {
        self.nameMask = nameMask
        self.valueMask = valueMask
        self.spaceAsPlus = spaceAsPlus
    }

    mutating func emit(name: [UInt8], value: UnsafeBufferPointer<UInt8>) {
        emitNameOnly(name: name)
        output.append(0x3D)
        PercentEncoding.append(value, mask: valueMask, spaceAsPlus: spaceAsPlus, to: &output)
    }

    mutating func emitNameOnly(name: [UInt8]) {
        if first { first = false } else { output.append(0x26) }
        name.withUnsafeBufferPointer {
            PercentEncoding.append($0, mask: nameMask, spaceAsPlus: spaceAsPlus, to: &output)
        }
    }
}

/// Keeps pairs unescaped.
struct PairCollector: PairSink {
    var pairs: [(name: [UInt8], value: [UInt8]?)] = []

    mutating func emit(name: [UInt8], value: UnsafeBufferPointer<UInt8>) {
        pairs.append((name, Array(value)))
    }

    mutating func emitNameOnly(name: [UInt8]) {
        pairs.append((name, nil))
    }
}

/// RFC 3986 percent-encoding over UTF-8 bytes, with a 256-entry class table.
enum PercentEncoding {
    /// `A–Z a–z 0–9 - . _ ~`.
    static let unreserved: UInt8 = 1
    /// `/` and `?`.
    static let slashQuestion: UInt8 = 2
    /// `[` and `]`.
    static let brackets: UInt8 = 4

    static let classes: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 256)
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(byte)] = unreserved }
        for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(byte)] = unreserved }
        for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(byte)] = unreserved }
        for byte in "-._~".utf8 { table[Int(byte)] = unreserved }
        for byte in "/?".utf8 { table[Int(byte)] = slashQuestion }
        for byte in "[]".utf8 { table[Int(byte)] = brackets }
        return table
    }()

    private static let hex: [UInt8] = Array("0123456789ABCDEF".utf8)

    static func append(
        _ bytes: UnsafeBufferPointer<UInt8>, mask: UInt8, spaceAsPlus: Bool, to output: inout [UInt8]
    ) {
        classes.withUnsafeBufferPointer { table in
            hex.withUnsafeBufferPointer { digits in
                for byte in bytes {
                    if table[Int(byte)] & mask != 0 {
                        output.append(byte)
                    } else if byte == 0x20, spaceAsPlus {
                        output.append(0x2B)
                    } else {
                        output.append(0x25)
                        output.append(digits[Int(byte >> 4)])
                        output.append(digits[Int(byte & 0x0F)])
                    }
                }
            }
        }
    }

    /// Percent-encodes `text` with only the unreserved characters left as they are.
    static func escape(_ text: String) -> String {
        var output: [UInt8] = []
        var text = text
        text.withUTF8 { append($0, mask: unreserved, spaceAsPlus: false, to: &output) }
        return String(decoding: output, as: UTF8.self)
    }
}
