import SeamJSON

/// The reader under `QuickFetch` and `QuickSave`: a frame's bytes, one narrow token at a time.
/// Each method consumes its token and answers it, or consumes nothing and answers nil (or false).
struct FrameScanner {
    let bytes: ArraySlice<UInt8>
    var pos: Int

    init(bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        pos = bytes.startIndex
    }

    var atEnd: Bool { pos == bytes.endIndex }

    mutating func take(_ b: UInt8) -> Bool {
        guard pos < bytes.endIndex, bytes[pos] == b else { return false }
        pos += 1
        return true
    }

    /// A string of printable ASCII without `"` or `\` (so without escapes), or nil.
    mutating func plainString() -> String? {
        let before = pos
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = pos
        while pos < bytes.endIndex {
            let b = bytes[pos]
            if b == UInt8(ascii: "\"") {
                pos += 1
                return String(decoding: bytes[start..<pos - 1], as: UTF8.self)
            }
            guard b >= 0x20, b < 0x7f, b != UInt8(ascii: "\\") else { break }
            pos += 1
        }
        pos = before
        return nil
    }

    /// A non-negative integer of 1 to 18 digits without a leading zero (so it fits an Int64
    /// and the general decoder reads the same integer), or nil.
    mutating func smallInteger() -> Int64? {
        let start = pos
        var n: Int64 = 0
        while pos < bytes.endIndex, bytes[pos] >= 0x30, bytes[pos] <= 0x39, pos - start < 18 {
            n = n * 10 + Int64(bytes[pos] - 0x30)
            pos += 1
        }
        let digits = pos - start
        // More digits than allowed, or a number that goes on (a fraction, an exponent).
        var goesOn = false
        if pos < bytes.endIndex {
            switch bytes[pos] {
            case 0x30...0x39, UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): goesOn = true
            default: break
            }
        }
        guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0"), !goesOn else {
            pos = start
            return nil
        }
        return n
    }

    /// A call's `id` as the quick paths take it: a plain string or a small integer.
    mutating func plainID() -> JSON? {
        if let text = plainString() { return .string(text) }
        if let n = smallInteger() { return .integer(n) }
        return nil
    }

    /// A value as `QuickSave` takes it: a plain string, a small integer, `true`, `false` or `null`.
    mutating func plainScalar() -> JSON? {
        if let text = plainString() { return .string(text) }
        if let n = smallInteger() { return .integer(n) }
        if word("true") { return .bool(true) }
        if word("false") { return .bool(false) }
        if word("null") { return .null }
        return nil
    }

    /// An array or object written exactly as `JSON.encoded()` writes the value it holds — no
    /// whitespace; keys and strings plain (`plainString`); numbers small non-negative integers
    /// (`smallInteger`); `true`, `false`, `null`; no key twice in one object — so that its bytes
    /// are its own canonical text, which it returns; nil (nothing consumed) for anything else.
    ///
    /// Bounded below the general decoder's limits wherever the frame puts it, so that it never
    /// takes what the general path refuses: at most `maxContainerDepth` deep, and at most
    /// `maxContainerMembers` members in any one array or object (which also keeps the scan for a
    /// repeated key from going quadratic).
    mutating func canonicalContainer() -> String? {
        let start = pos
        guard container(depth: 1) else {
            pos = start
            return nil
        }
        return String(decoding: bytes[start..<pos], as: UTF8.self)
    }

    /// The deepest container `canonicalContainer` takes (the general path's limit is 32, counted
    /// from the frame's root, where a save's values are five deep).
    static let maxContainerDepth = 16
    /// The most members of one array or object `canonicalContainer` takes.
    static let maxContainerMembers = 64

    private mutating func container(depth: Int) -> Bool {
        guard depth <= Self.maxContainerDepth, pos < bytes.endIndex else { return false }
        let isObject: Bool
        switch bytes[pos] {
        case UInt8(ascii: "{"): isObject = true
        case UInt8(ascii: "["): isObject = false
        default: return false
        }
        pos += 1
        if take(isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) { return true }
        var keys: [String] = []
        var members = 0
        repeat {
            members += 1
            guard members <= Self.maxContainerMembers else { return false }
            if isObject {
                guard let key = plainString(), take(UInt8(ascii: ":")), !keys.contains(key) else { return false }
                keys.append(key)
            }
            guard plainScalar() != nil || container(depth: depth + 1) else { return false }
        } while take(UInt8(ascii: ","))
        return take(isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
    }

    /// The literal `w`, followed by a delimiter (`,`, `}` or `]`) or the end.
    private mutating func word(_ w: StaticString) -> Bool {
        let count = w.utf8CodeUnitCount
        guard bytes.endIndex - pos >= count else { return false }
        for i in 0..<count where bytes[pos + i] != w.utf8Start[i] { return false }
        let after = pos + count
        if after < bytes.endIndex {
            switch bytes[after] {
            case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"): break
            default: return false
            }
        }
        pos = after
        return true
    }
}
