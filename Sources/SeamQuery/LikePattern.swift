/// An NSPredicate-style `LIKE` pattern: `*` matches any run of characters, `?` exactly one
/// character (one Unicode scalar), and `\` makes the next character literal.
///
/// The same parsed pattern is matched in memory and translated to an SQLite `GLOB` pattern, so
/// both sides agree by construction. Text containing U+0000 never matches (SQLite's GLOB would
/// stop reading at the NUL); a pattern cannot contain U+0000.
struct LikePattern: Sendable, Hashable {
    enum Piece: Sendable, Hashable {
        case literal([UInt8])
        /// `?`: one character.
        case one
        /// `*`: any run of characters, possibly empty.
        case any
    }

    /// Why a pattern is refused; the checker turns it into a `QueryError` at the value.
    enum Problem: Error {
        case trailingBackslash
        case containsNUL
    }

    let pieces: [Piece]

    /// Parses `pattern`; with `folded`, literal text is ASCII-folded (the matcher folds the text).
    init(_ pattern: String, folded: Bool) throws(Problem) {
        var pieces: [Piece] = []
        var literal: [UInt8] = []
        func flush() {
            if !literal.isEmpty { pieces.append(.literal(literal)) }
            literal = []
        }
        var bytes = Array(pattern.utf8).makeIterator()
        while let b = bytes.next() {
            switch b {
            case 0: throw .containsNUL
            case UInt8(ascii: "*"):
                flush()
                if pieces.last != .any { pieces.append(.any) }
            case UInt8(ascii: "?"):
                flush()
                pieces.append(.one)
            case UInt8(ascii: "\\"):
                guard let next = bytes.next() else { throw .trailingBackslash }
                if next == 0 { throw .containsNUL }
                literal.append(folded ? ASCII.fold(next) : next)
            default:
                literal.append(folded ? ASCII.fold(b) : b)
            }
        }
        flush()
        self.pieces = pieces
    }

    // MARK: - In memory

    /// Whether `text` matches. A pattern of literals and `*` only (the usual kind) is matched in
    /// time linear in the text: the first literal where the text starts, the last where it ends,
    /// each one between at its leftmost place after the one before (found with Knuth–Morris–Pratt,
    /// so a long literal in a long text costs no more than their lengths). A pattern with `?` is
    /// backtracked to its last `*`: never exponential, O(text × pattern) at worst.
    func matches(_ text: UnsafeBufferPointer<UInt8>, folded: Bool) -> Bool {
        if text.contains(0) { return false }
        if let segments = literalSegments { return Self.matches(text, segments, folded: folded) }
        return backtracking(text, folded: folded)
    }

    /// The literals between `*`s, with whether the pattern starts and ends with one; nil when a
    /// `?` is in it.
    private var literalSegments: (literals: [[UInt8]], leadingStar: Bool, trailingStar: Bool)? {
        var literals: [[UInt8]] = []
        var current: [UInt8] = []
        for piece in pieces {
            switch piece {
            case .one: return nil
            case .literal(let bytes): current += bytes
            case .any:
                literals.append(current)
                current = []
            }
        }
        literals.append(current)
        return (literals, pieces.first == .any, pieces.last == .any)
    }

    private static func matches(
        _ text: UnsafeBufferPointer<UInt8>, _ s: (literals: [[UInt8]], leadingStar: Bool, trailingStar: Bool), folded: Bool
    ) -> Bool {
        let literals = s.literals
        if literals.count == 1 { return text.count == literals[0].count && hasPrefix(text, at: 0, literals[0], folded: folded) }
        // Without a leading `*` the first literal is the text's start; without a trailing one
        // the last is its end (and may not overlap what the others took).
        var t = 0
        guard hasPrefix(text, at: 0, literals[0], folded: folded) else { return false }
        t = literals[0].count
        let last = literals[literals.count - 1]
        let end = text.count - last.count
        guard end >= t, hasPrefix(text, at: end, last, folded: folded) else { return false }
        for middle in literals[1..<(literals.count - 1)] where !middle.isEmpty {
            guard let found = find(middle, in: text, from: t, before: end, folded: folded) else { return false }
            t = found + middle.count
        }
        return true
    }

    /// The leftmost place at or after `from` where `needle` lies wholly before `limit`
    /// (Knuth–Morris–Pratt).
    private static func find(_ needle: [UInt8], in text: UnsafeBufferPointer<UInt8>, from: Int, before limit: Int, folded: Bool) -> Int? {
        guard limit - from >= needle.count else { return nil }
        var failure = [Int](repeating: 0, count: needle.count)
        var k = 0
        for i in 1..<max(1, needle.count) {
            while k > 0 && needle[i] != needle[k] { k = failure[k - 1] }
            if needle[i] == needle[k] { k += 1 }
            failure[i] = k
        }
        var matched = 0
        var i = from
        while i < limit {
            let c = folded ? ASCII.fold(text[i]) : text[i]
            while matched > 0 && c != needle[matched] { matched = failure[matched - 1] }
            if c == needle[matched] { matched += 1 }
            if matched == needle.count { return i + 1 - needle.count }
            i += 1
        }
        return nil
    }

    /// Matching by backtracking to the last `*` (for patterns with `?`, which may stand for a
    /// character of more than one byte).
    private func backtracking(_ text: UnsafeBufferPointer<UInt8>, folded: Bool) -> Bool {
        var t = 0
        var p = 0
        var star: (piece: Int, text: Int)? = nil
        while true {
            if p < pieces.count {
                switch pieces[p] {
                case .any:
                    star = (p, t)
                    p += 1
                    continue
                case .one where t < text.count:
                    t += UTF8Validation.scalarLength(lead: text[t])
                    p += 1
                    continue
                case .literal(let bytes) where Self.hasPrefix(text, at: t, bytes, folded: folded):
                    t += bytes.count
                    p += 1
                    continue
                default: break
                }
            } else if t == text.count {
                return true
            }
            // Mismatch: let the last `*` swallow one more character, or fail.
            guard let s = star, s.text < text.count else { return false }
            let resume = s.text + UTF8Validation.scalarLength(lead: text[s.text])
            star = (s.piece, resume)
            t = resume
            p = s.piece + 1
        }
    }

    static func hasPrefix(_ text: UnsafeBufferPointer<UInt8>, at start: Int, _ prefix: [UInt8], folded: Bool) -> Bool {
        guard text.count - start >= prefix.count else { return false }
        for (k, b) in prefix.enumerated() {
            let c = text[start + k]
            if (folded ? ASCII.fold(c) : c) != b { return false }
        }
        return true
    }

    // MARK: - SQL

    /// The equivalent SQLite GLOB pattern: `*` and `?` as themselves, literal `*`, `?` and `[`
    /// in brackets (GLOB has no escape character).
    var glob: String {
        var out: [UInt8] = []
        for piece in pieces {
            switch piece {
            case .any: out.append(UInt8(ascii: "*"))
            case .one: out.append(UInt8(ascii: "?"))
            case .literal(let bytes):
                for b in bytes {
                    if b == UInt8(ascii: "*") || b == UInt8(ascii: "?") || b == UInt8(ascii: "[") {
                        out.append(contentsOf: [UInt8(ascii: "["), b, UInt8(ascii: "]")])
                    } else {
                        out.append(b)
                    }
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
