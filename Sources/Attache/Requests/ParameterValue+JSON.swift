import FoundationEssentials

extension JSONValue {
    /// The JSON form of a parameter value, for parameters sent as a JSON body: integers and numbers
    /// as numbers, dates as ISO 8601 text (UTC), a set as an array in its sorted order (the order
    /// ``URLFormEncoder`` writes it in), a dictionary as an object.
    init(parameter: ParameterValue) {
        switch parameter {
        case .string(let text): self = .string(text)
        case .integer(let number): self = .number(Double(number))
        case .number(let number): self = .number(number)
        case .bool(let flag): self = .bool(flag)
        case .date(let date): self = .string(UTCTimestamp.iso8601(date))
        case .null: self = .null
        case .array(let elements): self = .array(elements.map(JSONValue.init(parameter:)))
        case .set(let elements):
            let sorted = elements.sorted { $0.sortText.utf8.lexicographicallyPrecedes($1.sortText.utf8) }
            self = .array(sorted.map(JSONValue.init(parameter:)))
        case .dictionary(let members): self = .object(members.mapValues(JSONValue.init(parameter:)))
        }
    }
}
