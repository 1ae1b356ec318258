/// A read-only table keyed by media type, looked up once or twice per detection.
///
/// `Dictionary<String, _>` hashes its key with SipHash through `String`'s Unicode-aware hashing, which
/// costs more than the rest of classifying a detection. Media types are short ASCII strings, so an
/// FNV-1a hash over their UTF-8 bytes into an open-addressed table of twice the entries does the
/// same job for a fraction of the cost. Lookups compare the whole key, so collisions cost a probe,
/// never a wrong answer.
struct TypeTable<Value: Sendable>: Sendable {
    private let keys: [String]
    private let values: [Value]
    /// Index into `keys`/`values` per slot, or -1 for an empty slot.
    private let slots: [Int32]
    private let mask: Int

    /// A table of `entries`; a later duplicate key replaces an earlier one.
    init(_ entries: [(key: String, value: Value)]) {
        var keys: [String] = []
        var values: [Value] = []
        var capacity = 16
        while capacity < entries.count * 2 { capacity <<= 1 }
        var slots = [Int32](repeating: -1, count: capacity)
        let mask = capacity - 1
        for (key, value) in entries {
            var slot = Self.hash(key) & mask
            while slots[slot] >= 0, keys[Int(slots[slot])] != key { slot = (slot + 1) & mask }
            if slots[slot] >= 0 {
                values[Int(slots[slot])] = value
            } else {
                slots[slot] = Int32(keys.count)
                keys.append(key)
                values.append(value)
            }
        }
        self.keys = keys
        self.values = values
        self.slots = slots
        self.mask = mask
    }

    /// The value for `key`, or nil.
    subscript(key: String) -> Value? {
        var slot = Self.hash(key) & mask
        while true {
            let index = Int(slots[slot])
            if index < 0 { return nil }
            if keys[index] == key { return values[index] }
            slot = (slot + 1) & mask
        }
    }

    private static func hash(_ key: String) -> Int {
        key.utf8.withContiguousStorageIfAvailable { fnv1a($0) } ?? fnv1a(key.utf8)
    }

    @inline(__always) private static func fnv1a(_ bytes: some Sequence<UInt8>) -> Int {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return Int(truncatingIfNeeded: hash ^ hash >> 29)
    }
}
