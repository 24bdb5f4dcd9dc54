/// ASCII-only helpers: the case folding that `[c]` and SQLite's `lower()` and `NOCASE` share.
enum ASCII {
    /// `A`–`Z` to `a`–`z`; every other byte, including every byte of a non-ASCII character, unchanged.
    @inline(__always)
    static func fold(_ byte: UInt8) -> UInt8 {
        byte &- 0x41 < 26 ? byte | 0x20 : byte
    }

    /// `text` with `A`–`Z` folded to `a`–`z` and nothing else changed.
    static func lowercased(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 &- 0x41 < 26 }) else { return text }
        return String(decoding: text.utf8.map(fold), as: UTF8.self)
    }

    static func isLetter(_ b: UInt8) -> Bool { (b | 0x20) &- 0x61 < 26 }
    static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }
    static func isIdentifierStart(_ b: UInt8) -> Bool { isLetter(b) || b == UInt8(ascii: "_") }
    static func isIdentifierPart(_ b: UInt8) -> Bool { isIdentifierStart(b) || isDigit(b) }
}
