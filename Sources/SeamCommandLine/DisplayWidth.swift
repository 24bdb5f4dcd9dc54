/// How many terminal columns text takes: 2 for East Asian wide and fullwidth characters and for
/// emoji drawn as pictures, 0 for combining marks and other zero-width characters, 1 otherwise.
///
/// A table of its own rather than `wcwidth(3)`, whose answer depends on the process's locale
/// (-1 for anything beyond ASCII in the C locale) and on the C library's Unicode version: this
/// one is the same everywhere, and testable. Text is measured by grapheme cluster (`Character`),
/// so a cut never parts a letter from its accent, and an emoji sequence joined by ZWJ counts as
/// the one picture a terminal draws for it.
public enum DisplayWidth {
    /// The columns `text` takes on a terminal.
    public static func columns(_ text: String) -> Int {
        // Printable ASCII, most text a listing shows: one column a byte.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) { return text.utf8.count }
        var total = 0
        for c in text { total += columns(c) }
        return total
    }

    /// The columns one character takes: 0, 1 or 2.
    public static func columns(_ c: Character) -> Int {
        if let ascii = c.asciiValue, ascii >= 0x20, ascii < 0x7f { return 1 }
        let scalars = c.unicodeScalars
        if scalars.contains(where: isWide) { return 2 }
        // A text-style emoji (☺, ❤, a keycap digit) asked to look like a picture (VS16).
        if let first = scalars.first, first.properties.isEmoji, scalars.contains("\u{FE0F}") { return 2 }
        return scalars.allSatisfy(isZeroWidth) ? 0 : 1
    }

    /// `text` in at most `width` columns: whole when it fits, else as much as fits before a "…".
    public static func cut(_ text: String, to width: Int) -> String {
        guard columns(text) > width else { return text }
        guard width > 0 else { return "" }
        var out = ""
        var used = 0
        for c in text {
            let w = columns(c)
            if used + w > width - 1 { break }
            out.append(c)
            used += w
        }
        return out + "…"
    }

    /// `text` followed by spaces up to `width` columns (unchanged when it is that wide already).
    public static func padded(_ text: String, to width: Int) -> String {
        let w = columns(text)
        return w >= width ? text : text + String(repeating: " ", count: width - w)
    }

    // MARK: - The table

    /// East Asian Wide (W) and Fullwidth (F) blocks, from Unicode's EastAsianWidth.txt, merged
    /// where neighbours agree. Emoji are not listed: `isEmojiPresentation` says which are wide.
    static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F,  // Hangul Jamo initial consonants
        0x2329...0x232A,  // angle brackets
        0x2E80...0x303E,  // CJK radicals, Kangxi radicals, ideographic description, CJK symbols and punctuation
        0x3041...0x33FF,  // Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, Kanbun, enclosed CJK, CJK compatibility
        0x3400...0x4DBF,  // CJK unified ideographs extension A
        0x4E00...0x9FFF,  // CJK unified ideographs
        0xA000...0xA4CF,  // Yi
        0xA960...0xA97F,  // Hangul Jamo extended A
        0xAC00...0xD7A3,  // Hangul syllables
        0xF900...0xFAFF,  // CJK compatibility ideographs
        0xFE10...0xFE19,  // vertical forms
        0xFE30...0xFE6F,  // CJK compatibility forms, small form variants
        0xFF00...0xFF60,  // fullwidth forms
        0xFFE0...0xFFE6,  // fullwidth signs
        0x16FE0...0x16FE4,  // ideographic symbols
        0x17000...0x18CFF,  // Tangut, Khitan
        0x1B000...0x1B2FF,  // Kana supplement and extensions, Nushu
        0x1F200...0x1F265,  // enclosed ideographic supplement
        0x20000...0x2FFFD,  // CJK extensions B to F, compatibility supplement
        0x30000...0x3FFFD,  // CJK extensions G and H
    ]

    static func isWide(_ s: Unicode.Scalar) -> Bool {
        guard s.value >= 0x1100 else { return false }  // nothing wide before Hangul Jamo
        return s.properties.isEmojiPresentation || wideRanges.contains { $0.contains(s.value) }
    }

    /// Marks drawn over the character before them, joiners and other format characters, and the
    /// Hangul vowels and finals that join a syllable.
    static func isZeroWidth(_ s: Unicode.Scalar) -> Bool {
        switch s.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return true
        default: return (0x1160...0x11FF).contains(s.value) || (0xD7B0...0xD7FF).contains(s.value)
        }
    }
}
