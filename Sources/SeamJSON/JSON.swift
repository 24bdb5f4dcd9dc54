/// A JSON value: what the broker protocol reads from and writes to the wire.
///
/// Numbers keep the distinction the text made: an integer literal that fits `Int64` is
/// `.integer`; any other number (a fraction, an exponent, or an integer beyond 64 bits) is
/// `.double`. `.integer(1)` and `.double(1)` are different values.
///
/// Equality is by content, in the sense of the encoded bytes: strings and keys compare by their
/// UTF-8 bytes (not by Swift's canonical equivalence, so `"é"` precomposed differs from `"e"` plus
/// a combining accent), doubles by `==`, objects regardless of member order.
///
/// Decode with `JSON.decode(_:limits:)`, encode with `encoded()` or `encode(into:)`.
public enum JSON: Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object(JSONObject)
}

// MARK: - Reading values

extension JSON {
    /// The member `key` of an object; `nil` when this is not an object or has no such member.
    ///
    /// Lookup is a linear scan for small objects and a hash lookup for large ones.
    public subscript(key: String) -> JSON? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// The element at `index` of an array; `nil` when this is not an array or `index` is out of range.
    public subscript(index: Int) -> JSON? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    /// The integer, when this is an integer; a `.double` gives `nil` even when it is integral.
    public var int64Value: Int64? {
        guard case .integer(let value) = self else { return nil }
        return value
    }

    /// The number as a `Double`, when this is a double or an integer (rounded to the nearest
    /// double beyond 2^53).
    public var doubleValue: Double? {
        switch self {
        case .double(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// The truth value, when this is `true` or `false`.
    public var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    /// The elements, when this is an array.
    public var arrayValue: [JSON]? {
        guard case .array(let value) = self else { return nil }
        return value
    }

    /// The members, when this is an object.
    public var objectValue: JSONObject? {
        guard case .object(let value) = self else { return nil }
        return value
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

// MARK: - Equality and hashing

extension JSON: Hashable {
    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.string(let a), .string(let b)): JSONObject.IndexKey.bytesEqual(a, b)
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0 as UInt8)
        case .bool(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .integer(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value)
        case .double(let value):
            hasher.combine(3 as UInt8)
            hasher.combine(value)
        // String's hash agrees with byte equality: byte-equal strings are canonically equal too.
        case .string(let value):
            hasher.combine(4 as UInt8)
            hasher.combine(value)
        case .array(let value):
            hasher.combine(5 as UInt8)
            hasher.combine(value)
        case .object(let value):
            hasher.combine(6 as UInt8)
            hasher.combine(value)
        }
    }
}

// MARK: - Text

extension JSON: CustomStringConvertible {
    /// The compact encoding, as text.
    public var description: String { String(decoding: encoded(), as: UTF8.self) }
}
