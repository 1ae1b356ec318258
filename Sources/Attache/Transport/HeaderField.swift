import FoundationEssentials

/// One HTTP header field: a name and a value, sent in the order given.
///
/// ```swift
/// var options = SendOptions()
/// options.headers = [HeaderField(name: "Authorization", value: "Bearer \(userToken)")]
/// ```
///
/// Not named `HTTPField`: that is HTTPTypes' type, which a Hummingbird or AsyncHTTPClient service imports
/// beside Attache.
public struct HeaderField: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The field name (an RFC 9110 token), compared without regard to case.
    public var name: String
    /// The field value.
    public var value: String

    /// Creates a field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `name: …`: the value is left out, because header values are often credentials.
    public var description: String { "\(name): …" }
}

extension [HeaderField] {
    /// These fields with `overrides` applied: a field of `overrides` replaces every field of the same
    /// name (case-insensitive) here; the rest keep their order, and the overrides follow.
    func replacing(with overrides: [HeaderField]) -> [HeaderField] {
        guard !overrides.isEmpty else { return self }
        let replaced = Set(overrides.map { $0.name.lowercased() })
        return filter { !replaced.contains($0.name.lowercased()) } + overrides
    }
}
