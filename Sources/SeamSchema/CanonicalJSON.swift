/// A JSON document in Seam's canonical form, used for everything that is hashed.
///
/// The form is fixed byte for byte (see `Protocol/schema.md`): object keys sorted by their UTF-8
/// bytes, no whitespace, strings escaped minimally (`\"`, `\\`, and control characters below
/// U+0020 as `\b \f \n \r \t` or `\u00xx` in lowercase hex; everything else as UTF-8), integers
/// in plain decimal, and no floating-point numbers at all.
public indirect enum CanonicalJSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case string(String)
    case array([CanonicalJSON])
    case object([String: CanonicalJSON])

    /// The canonical text.
    public var text: String {
        var out = [UInt8]()
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the canonical bytes to `out`.
    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .integer(let i): out += Array(String(i).utf8)
        case .string(let s): Self.writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            let keys = members.keys.sorted { Self.utf8Less($0, $1) }
            for (i, key) in keys.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                members[key]!.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Orders strings by their UTF-8 bytes, as canonical JSON sorts keys.
    public static func utf8Less(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x08: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0c: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x0a: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0d: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                out += Array("\\u00".utf8)
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0f)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

// MARK: - Parsing JSON text

/// A parsed JSON value. Numbers keep the exact text they were written with, so nothing is lost
/// to floating point on the way through.
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number as written (`-12`, `2.50`, `1e3`).
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in the order written; duplicate keys are rejected by the parser.
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.minified == b.minified }
    public func hash(into h: inout Hasher) { h.combine(minified) }

    /// The member `key` of an object, or `nil`.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members.first { $0.0 == key }?.1 }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var int64Value: Int64? { if case .number(let n) = self { return Int64(n) } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var objectValue: [(String, JSONValue)]? { if case .object(let o) = self { return o } else { return nil } }

    /// The canonical minified text: keys sorted by UTF-8 bytes, no whitespace, numbers verbatim.
    public var minified: String {
        var out = [UInt8]()
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .number(let n): out += Array(n.utf8)
        case .string(let s): CanonicalJSON.writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, m) in members.sorted(by: { CanonicalJSON.utf8Less($0.0, $1.0) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                CanonicalJSON.writeString(m.0, into: &out)
                out.append(UInt8(ascii: ":"))
                m.1.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}

/// Parses JSON text (RFC 8259) with bounded depth; used for json defaults and embedded models.
public enum JSONText {
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// The deepest nesting accepted.
    public static let maxDepth = 64

    /// Parses `text`, or throws naming the byte where it broke.
    public static func parse(_ text: String) throws(Invalid) -> JSONValue {
        var parser = Parser(bytes: Array(text.utf8))
        parser.skipSpace()
        let v = try parser.value(depth: 0)
        parser.skipSpace()
        if parser.pos != parser.bytes.count { throw Invalid(offset: parser.pos, reason: "trailing characters") }
        return v
    }

    /// The minified canonical spelling of `text` (keys sorted, numbers kept exactly as written).
    public static func minify(_ text: String) throws(Invalid) -> String {
        try parse(text).minified
    }

    private struct Parser {
        let bytes: [UInt8]
        var pos = 0

        mutating func skipSpace() {
            while pos < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[pos]) { pos += 1 }
        }

        func fail(_ reason: String) -> Invalid { Invalid(offset: pos, reason: reason) }

        mutating func value(depth: Int) throws(Invalid) -> JSONValue {
            guard depth < JSONText.maxDepth else { throw fail("nested too deeply") }
            guard pos < bytes.count else { throw fail("unexpected end") }
            switch bytes[pos] {
            case UInt8(ascii: "{"):
                pos += 1
                var members: [(String, JSONValue)] = []
                var keys = Set<String>()
                skipSpace()
                if pos < bytes.count, bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object([]) }
                while true {
                    skipSpace()
                    let keyOffset = pos
                    let key = try string()
                    guard keys.insert(key).inserted else { throw Invalid(offset: keyOffset, reason: "duplicate key") }
                    skipSpace()
                    guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    pos += 1
                    skipSpace()
                    members.append((key, try value(depth: depth + 1)))
                    skipSpace()
                    guard pos < bytes.count else { throw fail("unterminated object") }
                    if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                    if bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object(members) }
                    throw fail("expected ',' or '}'")
                }
            case UInt8(ascii: "["):
                pos += 1
                var items: [JSONValue] = []
                skipSpace()
                if pos < bytes.count, bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array([]) }
                while true {
                    skipSpace()
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard pos < bytes.count else { throw fail("unterminated array") }
                    if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                    if bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array(items) }
                    throw fail("expected ',' or ']'")
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return .number(try number())
            }
        }

        mutating func literal(_ word: String) throws(Invalid) {
            let w = Array(word.utf8)
            guard pos + w.count <= bytes.count, Array(bytes[pos..<pos + w.count]) == w else { throw fail("unknown literal") }
            pos += w.count
        }

        mutating func number() throws(Invalid) -> String {
            let start = pos
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            func digits(_ p: inout Int) -> Int {
                let s = p
                while p < bytes.count, bytes[p] >= 0x30, bytes[p] <= 0x39 { p += 1 }
                return p - s
            }
            let intStart = pos
            let n = digits(&pos)
            guard n > 0 else { throw fail("expected a value") }
            if n > 1, bytes[intStart] == UInt8(ascii: "0") { throw fail("leading zero") }
            if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
                pos += 1
                guard digits(&pos) > 0 else { throw fail("expected digits after '.'") }
            }
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E") {
                pos += 1
                if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
                guard digits(&pos) > 0 else { throw fail("expected exponent digits") }
            }
            return String(decoding: bytes[start..<pos], as: UTF8.self)
        }

        mutating func string() throws(Invalid) -> String {
            guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else { throw fail("expected a string") }
            pos += 1
            var scalars = String.UnicodeScalarView()
            var raw = [UInt8]()
            func flush() throws(Invalid) {
                guard !raw.isEmpty else { return }
                guard let s = String(validating: raw, as: UTF8.self) else { throw fail("invalid UTF-8") }
                scalars.append(contentsOf: s.unicodeScalars)
                raw.removeAll()
            }
            while true {
                guard pos < bytes.count else { throw fail("unterminated string") }
                let b = bytes[pos]
                if b == UInt8(ascii: "\"") { pos += 1; break }
                if b < 0x20 { throw fail("control character in string") }
                if b != UInt8(ascii: "\\") { raw.append(b); pos += 1; continue }
                try flush()
                pos += 1
                guard pos < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[pos]
                pos += 1
                switch e {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0c}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard pos + 1 < bytes.count, bytes[pos] == UInt8(ascii: "\\"), bytes[pos + 1] == UInt8(ascii: "u")
                        else { throw fail("unpaired surrogate") }
                        pos += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw fail("invalid escape") }
                    scalars.append(scalar)
                default: throw fail("invalid escape")
                }
            }
            try flush()
            return String(scalars)
        }

        mutating func hex4() throws(Invalid) -> UInt32 {
            guard pos + 4 <= bytes.count else { throw fail("short \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[pos]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                default: throw fail("bad hex digit")
                }
                v = v << 4 | d
                pos += 1
            }
            return v
        }
    }
}
