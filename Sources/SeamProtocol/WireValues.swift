import SeamJSON
import SeamSchema

/// Attribute values on the wire: how a row travels as JSON.
///
/// string and uuid → JSON strings; integer → integers; double → numbers; bool → true/false;
/// date → RFC 3339 UTC strings with fractional seconds (`2026-11-30T22:16:10.250000Z`); binary →
/// base64 strings; json → the JSON value itself; nil → null.
public enum WireValues {
    public static func encode(_ value: AttributeValue) -> JSON {
        switch value {
        case .null: return .null
        case .string(let s), .uuid(let s): return .string(s)
        case .integer(let i): return .integer(i)
        case .double(let d): return .double(d)
        case .bool(let b): return .bool(b)
        case .date(let d): return .string(RFC3339.format(d))
        case .binary(let bytes): return .string(Base64.encode(bytes))
        case .json(let text):
            if let v = try? JSON.decode(Array(text.utf8)) { return v }
            return .string(text)
        }
    }

    /// Writes `value` as `encode(_:)` would, straight into a stream.
    public static func write(_ value: AttributeValue, into w: inout JSONStreamWriter) {
        switch value {
        case .null: w.null()
        case .string(let s), .uuid(let s): w.string(s)
        case .integer(let i): w.integer(i)
        case .double(let d): w.double(d)
        case .bool(let b): w.bool(b)
        case .date(let d): w.string(RFC3339.format(d))
        case .binary, .json: w.value(encode(value))
        }
    }

    /// Writes one row as a JSON object, members in the order of `attributes`.
    public static func writeRow(_ attributes: [Attribute], _ values: [AttributeValue], into w: inout JSONStreamWriter) {
        w.beginObject()
        for i in 0..<min(attributes.count, values.count) {
            w.key(attributes[i].name)
            write(values[i], into: &w)
        }
        w.endObject()
    }

    /// Writes one row held as a dictionary, members in the order of `fields` (absent ones skipped).
    public static func writeRow(_ fields: [String], _ values: [String: AttributeValue], into w: inout JSONStreamWriter) {
        w.beginObject()
        for name in fields {
            guard let v = values[name] else { continue }
            w.key(name)
            write(v, into: &w)
        }
        w.endObject()
    }

    /// The JSON object of a row.
    public static func encode(_ values: [String: AttributeValue], order: [String]) -> JSON {
        .object(JSONObject(uniqueKeysWithValues: order.compactMap { name in values[name].map { (name, encode($0)) } }))
    }

    /// A wire value read as attribute type `type`, or a message saying why it cannot be.
    static func dateInRange(_ d: Double) -> Result<AttributeValue, WireValueError> {
        guard RFC3339.range.contains(d) else {
            return .failure(WireValueError(AttributeValue.dateRangeText))
        }
        return .success(.date(d))
    }

    public static func decode(_ json: JSON, as type: AttributeType) -> Result<AttributeValue, WireValueError> {
        switch (type, json) {
        case (_, .null): return .success(.null)
        case (.string, .string(let s)): return .success(.string(s))
        case (.uuid, .string(let s)): return .success(.uuid(s))
        case (.integer, .integer(let i)): return .success(.integer(i))
        case (.double, .double(let d)): return .success(.double(d))
        case (.double, .integer(let i)): return .success(.double(Double(i)))
        case (.bool, .bool(let b)): return .success(.bool(b))
        case (.date, .string(let s)):
            guard let d = RFC3339.parse(s) else { return .failure(WireValueError("'\(s.prefix(40))' is not an RFC 3339 date")) }
            return dateInRange(d)
        case (.date, .integer(let i)): return dateInRange(Double(i))
        case (.date, .double(let d)): return dateInRange(d)
        case (.binary, .string(let s)):
            guard let b = Base64.decode(s) else { return .failure(WireValueError("not base64")) }
            return .success(.binary(b))
        case (.json, let v): return .success(.json(String(decoding: v.encoded(), as: UTF8.self)))
        default: return .failure(WireValueError("expected \(type.rawValue), got \(json.kindName)"))
        }
    }

    /// A predicate parameter: JSON to the nearest attribute value (strings stay strings; the
    /// predicate checker turns them into uuids or dates where the attribute needs it).
    public static func parameter(_ json: JSON) -> AttributeValue? {
        switch json {
        case .null: return .null
        case .string(let s): return .string(s)
        case .integer(let i): return .integer(i)
        case .double(let d): return .double(d)
        case .bool(let b): return .bool(b)
        default: return nil
        }
    }
}

public struct WireValueError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}

extension JSON {
    /// A word for the value's kind, for error messages.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .integer: return "an integer"
        case .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

/// RFC 3339 timestamps in UTC, without Foundation.
public enum RFC3339 {
    /// The dates a timestamp can write: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z.
    public static let range = AttributeValue.dateRange

    /// `2026-11-30T22:16:10.250000Z` (microseconds). Written byte by byte: dates are in every row.
    /// A value outside `range` (only a file written behind the broker's back holds one) is
    /// written as the nearest end of it, never trapped on.
    public static func format(_ seconds: Double) -> String {
        let clamped = seconds.isNaN ? 0 : min(max(seconds, range.lowerBound), range.upperBound)
        // The last microsecond of 9999 is no double: its nearest rounds up into year 10000, so
        // the microseconds are held within the range too.
        let micros = min(max(Int64((clamped * 1_000_000).rounded()), -62_135_596_800_000_000), 253_402_300_799_999_999)
        var secs = micros / 1_000_000
        var frac = micros % 1_000_000
        if frac < 0 { frac += 1_000_000; secs -= 1 }
        var days = secs / 86400
        var rem = secs % 86400
        if rem < 0 { rem += 86400; days -= 1 }
        let (y, m, d) = civil(days)
        return String(unsafeUninitializedCapacity: 32) { buffer in
            var i = 0
            func put(_ v: Int64, _ width: Int) {
                var v = v
                var j = i + width - 1
                while j >= i {
                    buffer[j] = UInt8(48 + v % 10)
                    v /= 10
                    j -= 1
                }
                i += width
            }
            func char(_ c: UInt8) { buffer[i] = c; i += 1 }
            if y < 0 || y > 9999 { put(0, 4) } else { put(y, 4) }
            char(45); put(m, 2); char(45); put(d, 2); char(84)
            put(rem / 3600, 2); char(58); put(rem / 60 % 60, 2); char(58); put(rem % 60, 2)
            char(46); put(frac, 6); char(90)
            return i
        }
    }

    /// Unix seconds of an RFC 3339 timestamp (`Z` or `±hh:mm`), rounded to the microsecond (as
    /// dates are stored, `DecimalSeconds.microseconds`), or nil.
    public static func parse(_ text: String) -> Double? {
        // Read where the text's bytes lie: a save of a thousand rows parses a date or two a row.
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    private static func parse(bytes b: UnsafeBufferPointer<UInt8>) -> Double? {
        func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in from..<(from + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, let y = num(0, 4), b[4] == 45, let mo = num(5, 2), b[7] == 45, let d = num(8, 2),
              b[10] == 84 || b[10] == 116, let h = num(11, 2), b[13] == 58, let mi = num(14, 2), b[16] == 58, let s = num(17, 2),
              (1...12).contains(mo), (1...daysIn(y, mo)).contains(d), h < 24, mi < 60, s < 60
        else { return nil }
        var i = 19
        var fraction = b[0..<0]
        if i < b.count, b[i] == 46 {
            i += 1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
            guard i > start else { return nil }
            fraction = b[start..<i]
        }
        var offset: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45, let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == 58, let om = num(i + 4, 2),
                  oh < 24, om < 60 {
            offset = (oh * 3600 + om * 60) * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(y, mo, d)
        return DecimalSeconds.microseconds(whole: days * 86400 + h * 3600 + mi * 60 + s - offset, fraction: fraction)
    }

    /// The days of month `m` of year `y` (proleptic Gregorian): a date past them is refused,
    /// not carried into the next month.
    static func daysIn(_ y: Int64, _ m: Int64) -> Int64 {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civil(_ z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
