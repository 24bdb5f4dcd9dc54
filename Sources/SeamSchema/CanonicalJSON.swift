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
            for (i, member) in members.sorted(by: { Self.utf8Less($0.key, $1.key) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Orders strings by their UTF-8 bytes, as canonical JSON sorts keys.
    public static func utf8Less(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    public static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most text needs no escape: its bytes go in at once.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out.append(contentsOf: s.utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
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

    /// Whether a string or key in it holds U+0000, which PostgreSQL (where sync keeps records)
    /// cannot store and C clients read as an end.
    public var holdsNUL: Bool {
        switch self {
        case .string(let text): return text.utf8.contains(0)
        case .array(let items): return items.contains { $0.holdsNUL }
        case .object(let members): return members.contains { $0.0.utf8.contains(0) || $0.1.holdsNUL }
        case .null, .bool, .number: return false
        }
    }
    public func hash(into h: inout Hasher) { h.combine(minified) }

    /// The member `key` of an object, or `nil`. Keys are compared byte for byte (schema.md: no
    /// Unicode normalisation), not by `String`'s `==`, which equates NFC and NFD spellings.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members.first { $0.0.utf8.elementsEqual(key.utf8) }?.1 }
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

    public func write(into out: inout [UInt8]) {
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

/// Parses JSON text (RFC 8259) with bounded depth; used for json defaults, embedded models and
/// json attribute values. `validate` applies the same grammar as `parse` — the one scanner below
/// runs in either mode — but builds nothing, so checking a value on its way into a store costs
/// a pass over its bytes.
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
        try scan(text, building: true)
    }

    /// Throws exactly where `parse` would, without building the value.
    public static func validate(_ text: String) throws(Invalid) {
        _ = try scan(text, building: false)
    }

    /// The minified canonical spelling of `text` (keys sorted, numbers kept exactly as written).
    public static func minify(_ text: String) throws(Invalid) -> String {
        try parse(text).minified
    }

    private static func scan(_ text: String, building: Bool) throws(Invalid) -> JSONValue {
        func run(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, Invalid> {
            var scanner = Scanner(bytes: bytes, building: building)
            return Result { () throws(Invalid) -> JSONValue in
                scanner.skipSpace()
                let v = try scanner.value(depth: 0)
                scanner.skipSpace()
                if scanner.pos != bytes.count { throw Invalid(offset: scanner.pos, reason: "trailing characters") }
                return v
            }
        }
        // Native strings hand over their UTF-8 in place; bridged ones are copied once.
        let result = text.utf8.withContiguousStorageIfAvailable(run) ?? Array(text.utf8).withUnsafeBufferPointer(run)
        return try result.get()
    }

    /// One pass over the bytes of a Swift string. They are valid UTF-8 (a `String` holds nothing
    /// else), and escapes start with an ASCII byte that never splits a sequence, so the runs
    /// between escapes need no further UTF-8 check. When not `building`, values come back as
    /// `.null`; only object keys are decoded, because duplicates are found by comparing them.
    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        let building: Bool
        var pos = 0

        init(bytes: UnsafeBufferPointer<UInt8>, building: Bool) {
            self.bytes = bytes
            self.building = building
        }

        mutating func skipSpace() {
            while pos < bytes.count {
                switch bytes[pos] {
                case 0x20, 0x09, 0x0a, 0x0d: pos += 1
                default: return
                }
            }
        }

        func fail(_ reason: String) -> Invalid { Invalid(offset: pos, reason: reason) }

        mutating func value(depth: Int) throws(Invalid) -> JSONValue {
            guard depth < JSONText.maxDepth else { throw fail("nested too deeply") }
            guard pos < bytes.count else { throw fail("unexpected end") }
            switch bytes[pos] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""):
                let s = try string(decoding: building)
                return building ? .string(s) : .null
            case UInt8(ascii: "t"): try literal("true"); return building ? .bool(true) : .null
            case UInt8(ascii: "f"): try literal("false"); return building ? .bool(false) : .null
            case UInt8(ascii: "n"): try literal("null"); return .null
            default:
                let range = try number()
                return building ? .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)) : .null
            }
        }

        mutating func object(depth: Int) throws(Invalid) -> JSONValue {
            pos += 1
            var members: [(String, JSONValue)] = []
            var keys = Keys()
            skipSpace()
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "}") { pos += 1; return building ? .object([]) : .null }
            while true {
                skipSpace()
                let keyOffset = pos
                let key = try string(decoding: true)
                guard keys.insert(key) else { throw Invalid(offset: keyOffset, reason: "duplicate key") }
                skipSpace()
                guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                pos += 1
                skipSpace()
                let v = try value(depth: depth + 1)
                if building { members.append((key, v)) }
                skipSpace()
                guard pos < bytes.count else { throw fail("unterminated object") }
                if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if bytes[pos] == UInt8(ascii: "}") { pos += 1; return building ? .object(members) : .null }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(Invalid) -> JSONValue {
            pos += 1
            var items: [JSONValue] = []
            skipSpace()
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "]") { pos += 1; return building ? .array([]) : .null }
            while true {
                skipSpace()
                let v = try value(depth: depth + 1)
                if building { items.append(v) }
                skipSpace()
                guard pos < bytes.count else { throw fail("unterminated array") }
                if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if bytes[pos] == UInt8(ascii: "]") { pos += 1; return building ? .array(items) : .null }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func literal(_ word: StaticString) throws(Invalid) {
            let n = word.utf8CodeUnitCount
            guard pos + n <= bytes.count else { throw fail("unknown literal") }
            let w = word.utf8Start
            for i in 0..<n where bytes[pos + i] != w[i] { throw fail("unknown literal") }
            pos += n
        }

        /// The bytes of a number, checked against RFC 8259's grammar.
        mutating func number() throws(Invalid) -> Range<Int> {
            let start = pos
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            let intStart = pos
            let n = skipDigits()
            guard n > 0 else { throw fail("expected a value") }
            if n > 1, bytes[intStart] == UInt8(ascii: "0") { throw fail("leading zero") }
            if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
                pos += 1
                guard skipDigits() > 0 else { throw fail("expected digits after '.'") }
            }
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E") {
                pos += 1
                if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
                guard skipDigits() > 0 else { throw fail("expected exponent digits") }
            }
            return start..<pos
        }

        mutating func skipDigits() -> Int {
            let s = pos
            while pos < bytes.count, bytes[pos] >= 0x30, bytes[pos] <= 0x39 { pos += 1 }
            return pos - s
        }

        /// A string's value when `decoding`, else "" once its escapes are checked.
        mutating func string(decoding: Bool) throws(Invalid) -> String {
            guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else { throw fail("expected a string") }
            pos += 1
            var scalars = String.UnicodeScalarView()
            var runStart = pos
            func flush(upTo end: Int) {
                guard decoding, end > runStart else { return }
                scalars.append(contentsOf: String(decoding: UnsafeBufferPointer(rebasing: bytes[runStart..<end]), as: UTF8.self).unicodeScalars)
            }
            while true {
                guard pos < bytes.count else { throw fail("unterminated string") }
                let b = bytes[pos]
                if b == UInt8(ascii: "\"") { flush(upTo: pos); pos += 1; break }
                if b < 0x20 { throw fail("control character in string") }
                if b != UInt8(ascii: "\\") { pos += 1; continue }
                flush(upTo: pos)
                pos += 1
                guard pos < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[pos]
                pos += 1
                let scalar: Unicode.Scalar
                switch e {
                case UInt8(ascii: "\""): scalar = "\""
                case UInt8(ascii: "\\"): scalar = "\\"
                case UInt8(ascii: "/"): scalar = "/"
                case UInt8(ascii: "b"): scalar = "\u{08}"
                case UInt8(ascii: "f"): scalar = "\u{0c}"
                case UInt8(ascii: "n"): scalar = "\n"
                case UInt8(ascii: "r"): scalar = "\r"
                case UInt8(ascii: "t"): scalar = "\t"
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
                    guard let s = Unicode.Scalar(code) else { throw fail("invalid escape") }
                    scalar = s
                default: throw fail("invalid escape")
                }
                if decoding { scalars.append(scalar) }
                runStart = pos
            }
            return decoding ? String(scalars) : ""
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

    /// An object's keys so far: a list while short, a set once long. Both compare UTF-8 bytes —
    /// two keys that differ only by Unicode normalisation are two keys (schema.md, rule 2), as
    /// every other implementation reads them; `String`'s `==` would make them one.
    private struct Keys {
        var list: [[UInt8]] = []
        var set: Set<[UInt8]>?

        mutating func insert(_ key: String) -> Bool {
            let bytes = Array(key.utf8)
            if set != nil { return set!.insert(bytes).inserted }
            if list.contains(bytes) { return false }
            list.append(bytes)
            if list.count > 16 { set = Set(list); list = [] }
            return true
        }
    }
}

// MARK: - Text already canonical

extension JSONText {
    /// Whether `text` is valid JSON already spelled as `parse(text).minified` spells it: no space
    /// outside strings, no escape in them, and each object's keys ASCII and in strictly
    /// increasing order of their bytes. Such text can be copied where its canonical spelling is
    /// wanted, with no tree built. (A key outside ASCII answers false, and the caller parses.)
    public static func isCanonical(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            var check = CanonicalCheck(bytes: bytes)
            return check.value(depth: 0) && check.pos == bytes.count
        } ?? false
    }

    /// One pass over the bytes, answering as soon as one is not what the canonical spelling has.
    private struct CanonicalCheck {
        let bytes: UnsafeBufferPointer<UInt8>
        var pos = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        private func at(_ byte: Unicode.Scalar) -> Bool { pos < bytes.count && bytes[pos] == UInt8(ascii: byte) }

        mutating func value(depth: Int) -> Bool {
            guard depth < JSONText.maxDepth, pos < bytes.count else { return false }
            switch bytes[pos] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string() != nil
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        mutating func object(depth: Int) -> Bool {
            pos += 1
            if at("}") { pos += 1; return true }
            var previous: Range<Int>?
            while true {
                guard let key = string(), bytes[key].allSatisfy({ $0 < 0x80 }) else { return false }
                if let p = previous, !bytes[p].lexicographicallyPrecedes(bytes[key]) { return false }
                previous = key
                guard at(":") else { return false }
                pos += 1
                guard value(depth: depth + 1) else { return false }
                if at(",") { pos += 1; continue }
                if at("}") { pos += 1; return true }
                return false
            }
        }

        mutating func array(depth: Int) -> Bool {
            pos += 1
            if at("]") { pos += 1; return true }
            while true {
                guard value(depth: depth + 1) else { return false }
                if at(",") { pos += 1; continue }
                if at("]") { pos += 1; return true }
                return false
            }
        }

        /// The range of a string's bytes between its quotes, nil if it holds an escape or a control character.
        mutating func string() -> Range<Int>? {
            guard at("\"") else { return nil }
            pos += 1
            let start = pos
            while pos < bytes.count {
                let b = bytes[pos]
                if b == UInt8(ascii: "\"") { pos += 1; return start..<(pos - 1) }
                if b < 0x20 || b == UInt8(ascii: "\\") { return nil }
                pos += 1
            }
            return nil
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let n = word.utf8CodeUnitCount
            guard pos + n <= bytes.count else { return false }
            for i in 0..<n where bytes[pos + i] != word.utf8Start[i] { return false }
            pos += n
            return true
        }

        /// RFC 8259's number grammar (the parser keeps a number's text as written).
        mutating func number() -> Bool {
            if at("-") { pos += 1 }
            let intStart = pos
            let n = digits()
            guard n > 0, n == 1 || bytes[intStart] != UInt8(ascii: "0") else { return false }
            if at(".") {
                pos += 1
                guard digits() > 0 else { return false }
            }
            if at("e") || at("E") {
                pos += 1
                if at("+") || at("-") { pos += 1 }
                guard digits() > 0 else { return false }
            }
            return true
        }

        mutating func digits() -> Int {
            let start = pos
            while pos < bytes.count, bytes[pos] >= 0x30, bytes[pos] <= 0x39 { pos += 1 }
            return pos - start
        }
    }
}
