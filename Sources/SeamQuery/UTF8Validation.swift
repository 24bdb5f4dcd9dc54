/// Checks that bytes are well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
/// above U+10FFFF), so that every offset the lexer reports is at a character boundary.
enum UTF8Validation {
    /// The offset of the first byte that starts no valid character, or `nil` when all are valid.
    static func firstInvalidOffset(_ bytes: [UInt8]) -> Int? {
        var i = 0
        while i < bytes.count {
            guard let length = sequenceLength(bytes, at: i) else { return i }
            i += length
        }
        return nil
    }

    /// The length of the valid sequence starting at `i`, or `nil`.
    private static func sequenceLength(_ bytes: [UInt8], at i: Int) -> Int? {
        let lead = bytes[i]
        if lead < 0x80 { return 1 }
        let (length, low, high): (Int, UInt8, UInt8)
        switch lead {
        case 0xC2...0xDF: (length, low, high) = (2, 0x80, 0xBF)
        case 0xE0: (length, low, high) = (3, 0xA0, 0xBF)  // no overlong forms
        case 0xE1...0xEC, 0xEE...0xEF: (length, low, high) = (3, 0x80, 0xBF)
        case 0xED: (length, low, high) = (3, 0x80, 0x9F)  // no surrogates
        case 0xF0: (length, low, high) = (4, 0x90, 0xBF)
        case 0xF1...0xF3: (length, low, high) = (4, 0x80, 0xBF)
        case 0xF4: (length, low, high) = (4, 0x80, 0x8F)  // nothing above U+10FFFF
        default: return nil
        }
        guard i + length <= bytes.count, (low...high).contains(bytes[i + 1]) else { return nil }
        for k in 2..<length where bytes[i + k] & 0xC0 != 0x80 { return nil }
        return length
    }

    /// The number of bytes of the character whose lead byte is `lead`, for valid UTF-8.
    @inline(__always)
    static func scalarLength(lead: UInt8) -> Int {
        lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
    }
}
