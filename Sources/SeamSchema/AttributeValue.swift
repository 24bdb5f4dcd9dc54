/// One attribute's value, typed.
///
/// Used for defaults in schemas, for rows handed to custom migration stages, and by the query
/// and store layers. Dates are Unix seconds; uuids are lowercase text; json values are JSON text.
public enum AttributeValue: Sendable, Hashable {
    case null
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case date(Double)
    case uuid(String)
    case binary([UInt8])
    case json(String)

    /// The type this value belongs to, or `nil` for `.null`.
    public var type: AttributeType? {
        switch self {
        case .null: return nil
        case .string: return .string
        case .integer: return .integer
        case .double: return .double
        case .bool: return .bool
        case .date: return .date
        case .uuid: return .uuid
        case .binary: return .binary
        case .json: return .json
        }
    }

    public var isNull: Bool { if case .null = self { return true } else { return false } }

    public var stringValue: String? {
        switch self {
        case .string(let s), .uuid(let s), .json(let s): return s
        default: return nil
        }
    }

    public var integerValue: Int64? {
        switch self {
        case .integer(let i): return i
        case .bool(let b): return b ? 1 : 0
        default: return nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case .double(let d), .date(let d): return d
        case .integer(let i): return Double(i)
        default: return nil
        }
    }
}

extension AttributeValue: CustomStringConvertible {
    public var description: String {
        switch self {
        case .null: return "nil"
        case .string(let s): return "\"\(s)\""
        case .integer(let i): return String(i)
        case .double(let d): return String(d)
        case .bool(let b): return String(b)
        case .date(let d): return "date(\(d))"
        case .uuid(let u): return u
        case .binary(let b): return "<\(b.count) bytes>"
        case .json(let j): return j
        }
    }
}

// MARK: - UUID text

public enum UUIDText {
    /// Whether `text` is a UUID in canonical lowercase form (8-4-4-4-12 hex digits).
    public static func isCanonical(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (i, b) in bytes.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if b != UInt8(ascii: "-") { return false }
            } else if !((b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66)) {
                return false
            }
        }
        return true
    }

    /// A random version-4 UUID in lowercase text form.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> String {
        let high = generator.next(), low = generator.next()
        // Version 4 (random), variant 1: byte 6's high nibble is 4, byte 8's top bits are 10.
        func byte(_ i: Int) -> UInt8 {
            let b = UInt8(truncatingIfNeeded: (i < 8 ? high : low) >> (8 * (i % 8)))
            switch i {
            case 6: return (b & 0x0f) | 0x40
            case 8: return (b & 0x3f) | 0x80
            default: return b
            }
        }
        return String(unsafeUninitializedCapacity: 36) { out in
            var o = 0
            for i in 0..<16 {
                if i == 4 || i == 6 || i == 8 || i == 10 {
                    out[o] = UInt8(ascii: "-")
                    o += 1
                }
                let b = byte(i)
                out[o] = Hex.digit(b >> 4)
                out[o + 1] = Hex.digit(b & 0x0f)
                o += 2
            }
            return o
        }
    }

    public static func random() -> String {
        var g = SystemRandomNumberGenerator()
        return random(using: &g)
    }
}

extension AttributeValue {
    /// Whether two values are the same as the store keeps them: text by its UTF-8 bytes (Swift's
    /// `==` calls canonically equivalent strings equal, "é" and "e\u{301}", which SQLite keeps
    /// and sorts apart), doubles by their bits (0.0 and -0.0 differ; a NaN equals itself).
    public func isIdentical(to other: AttributeValue) -> Bool {
        switch (self, other) {
        case (.double(let x), .double(let y)), (.date(let x), .date(let y)):
            return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
        case (.string(let x), .string(let y)), (.uuid(let x), .uuid(let y)), (.json(let x), .json(let y)):
            return x.utf8.elementsEqual(y.utf8)
        default:
            return self == other
        }
    }
}

public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// The lowercase hexadecimal digit of `nibble` (0…15).
    @inline(__always)
    static func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 48 + nibble : 87 + nibble }

    /// Lowercase hexadecimal text of `bytes`.
    public static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension AttributeValue {
    /// The dates a store holds, in Unix seconds: 0001-01-01T00:00:00Z to
    /// 9999-12-31T23:59:59.999999Z, what an RFC 3339 timestamp can write.
    public static let dateRange: ClosedRange<Double> = -62_135_596_800 ... 253_402_300_799.999_999
    /// `dateRange` in words, for errors.
    public static let dateRangeText = "a date is between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z "
        + "(Unix seconds -62135596800 to 253402300799.999999)"
}
