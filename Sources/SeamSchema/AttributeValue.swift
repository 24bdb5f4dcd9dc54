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
    public var isJSON: Bool { if case .json = self { return true } else { return false } }

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

/// A UUID's 128 bits, its first 64 in `high` (`UUIDText.bits`).
public struct UUIDBits: Hashable, Sendable {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }
}

public enum UUIDText {
    /// Whether `text` is a UUID in canonical lowercase form (8-4-4-4-12 hex digits).
    public static func isCanonical(_ text: String) -> Bool { bits(text) != nil }

    /// The 128 bits of a UUID in canonical lowercase form, or nil for any other text: a key
    /// that hashes and compares as two words, not 36 bytes.
    public static func bits(_ text: String) -> UUIDBits? {
        guard text.utf8.count == 36 else { return nil }
        var text = text
        return text.withUTF8 { bytes -> UUIDBits? in
            var high: UInt64 = 0, low: UInt64 = 0, digits = 0
            for i in 0..<36 {
                let b = bytes[i]
                if i == 8 || i == 13 || i == 18 || i == 23 {
                    guard b == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let nibble: UInt8
                if b &- UInt8(ascii: "0") < 10 {
                    nibble = b &- UInt8(ascii: "0")
                } else if b &- UInt8(ascii: "a") < 6 {
                    nibble = b &- UInt8(ascii: "a") &+ 10
                } else {
                    return nil
                }
                if digits < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
                digits += 1
            }
            return UUIDBits(high: high, low: low)
        }
    }

    /// A random version-4 UUID in lowercase text form.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> String {
        let high = generator.next(), low = generator.next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 { bytes[i] = UInt8(truncatingIfNeeded: (i < 8 ? high : low) >> (8 * (i % 8))) }
        // Version 4 (random), variant 1: byte 6's high nibble is 4, byte 8's top bits are 10.
        bytes[6] = (bytes[6] & 0x0f) | 0x40
        bytes[8] = (bytes[8] & 0x3f) | 0x80
        return text(bytes)
    }

    /// Sixteen bytes as a UUID's lowercase text (8-4-4-4-12 hex digits).
    public static func text(_ bytes: [UInt8]) -> String {
        precondition(bytes.count == 16, "a UUID has 16 bytes")
        return String(unsafeUninitializedCapacity: 36) { out in
            var o = 0
            for i in 0..<16 {
                if i == 4 || i == 6 || i == 8 || i == 10 {
                    out[o] = UInt8(ascii: "-")
                    o += 1
                }
                out[o] = Hex.digit(bytes[i] >> 4)
                out[o + 1] = Hex.digit(bytes[i] & 0x0f)
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

/// Version-7 UUIDs (RFC 9562): 48 bits of Unix time in milliseconds, then a 12-bit counter, then
/// 62 random bits — so that rows inserted one after another get keys in the order they came, and
/// a table keyed by them grows at its end instead of touching a page per row. Each is greater
/// (as text, as bytes) than every one this generator made before, whatever the clock does: within
/// one millisecond the counter counts up from a random start below 1,024; past 4,095 it borrows
/// the next millisecond; a clock that steps back keeps the last millisecond. Pure: the clock and
/// the random numbers are given.
public struct TimeOrderedUUIDs: Sendable {
    private var millisecond: UInt64 = 0
    private var counter: UInt64 = 0

    public init() {}

    /// The next UUID for a clock reading `now` (milliseconds since 1970), in lowercase text.
    public mutating func next<G: RandomNumberGenerator>(now: UInt64, using generator: inout G) -> String {
        let now = min(now, (1 << 48) - 1)
        if now > millisecond {
            millisecond = now
            counter = generator.next() & 0x3ff
        } else {
            counter += 1
            if counter > 0xfff {
                millisecond += 1
                counter = generator.next() & 0x3ff
            }
        }
        let random = generator.next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: millisecond >> (8 * (5 - i))) }
        bytes[6] = 0x70 | UInt8(counter >> 8)  // version 7, the counter's high four bits
        bytes[7] = UInt8(truncatingIfNeeded: counter)
        for i in 8..<16 { bytes[i] = UInt8(truncatingIfNeeded: random >> (8 * (15 - i))) }
        bytes[8] = (bytes[8] & 0x3f) | 0x80  // variant 10
        return UUIDText.text(bytes)
    }

    /// The millisecond a version-7 UUID's text holds, or nil for any other text.
    public static func millisecond(of text: String) -> UInt64? {
        let u = Array(text.utf8)
        guard UUIDText.isCanonical(text), u[14] == UInt8(ascii: "7") else { return nil }
        var ms: UInt64 = 0
        for c in u[0..<8] + u[9..<13] { ms = ms << 4 | UInt64(c <= 57 ? c - 48 : c - 87) }  // canonical: 0-9, a-f
        return ms
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
    /// The dates a store holds, in Unix seconds: 0001-01-01T00:00:00Z to the double nearest
    /// 9999-12-31T23:59:59.999999Z, what an RFC 3339 timestamp can write. That double is
    /// 253402300800 exactly (10000-01-01T00:00:00Z; written on the wire as …59.999999Z), and
    /// is written so here, as schema.md states it: the bounds are compared as doubles.
    public static let dateRange: ClosedRange<Double> = -62_135_596_800 ... 253_402_300_800
    /// `dateRange` in words, for errors.
    public static let dateRangeText = "a date is between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z "
        + "(Unix seconds -62135596800 to 253402300800, as doubles)"
}
