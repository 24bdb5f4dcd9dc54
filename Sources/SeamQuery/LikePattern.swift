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
    /// For a pattern of literals and `*` only: the literals between the `*`s (the first empty
    /// when the pattern starts with one, the last when it ends with one), each with its
    /// Knuth–Morris–Pratt table. Worked out once, here, not at every match. Nil when a `?` is in it.
    private let literals: [Literal]?

    struct Literal: Sendable, Hashable {
        var bytes: [UInt8]
        /// For each prefix, the length of its longest proper prefix that is also its suffix.
        var failure: [Int]

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            failure = [Int](repeating: 0, count: bytes.count)
            var k = 0
            for i in bytes.indices.dropFirst() {
                while k > 0 && bytes[i] != bytes[k] { k = failure[k - 1] }
                if bytes[i] == bytes[k] { k += 1 }
                failure[i] = k
            }
        }
    }

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
        literals = Self.literals(of: pieces)
    }

    private static func literals(of pieces: [Piece]) -> [Literal]? {
        var literals: [Literal] = []
        var current: [UInt8] = []
        for piece in pieces {
            switch piece {
            case .one: return nil
            case .literal(let bytes): current += bytes
            case .any:
                literals.append(Literal(current))
                current = []
            }
        }
        literals.append(Literal(current))
        return literals
    }

    // MARK: - In memory

    /// Whether `text` matches. A pattern of literals and `*` only (the usual kind) is matched in
    /// time linear in the text: the first literal where the text starts, the last where it ends,
    /// each one between at its leftmost place after the one before (found with Knuth–Morris–Pratt,
    /// so a long literal in a long text costs no more than their lengths). A pattern with `?` is
    /// backtracked to its last `*`: never exponential, O(text × pattern) at worst.
    func matches(_ text: UnsafeBufferPointer<UInt8>, folded: Bool) -> Bool {
        if text.contains(0) { return false }
        if let literals { return Self.matches(text, literals, folded: folded) }
        return backtracking(text, folded: folded)
    }

    private static func matches(_ text: UnsafeBufferPointer<UInt8>, _ literals: [Literal], folded: Bool) -> Bool {
        let first = literals[0].bytes
        if literals.count == 1 { return text.count == first.count && hasPrefix(text, at: 0, first, folded: folded) }
        // The first literal is the text's start and the last its end (empty after a leading or
        // before a trailing `*`), and they may not overlap what the others took.
        guard hasPrefix(text, at: 0, first, folded: folded) else { return false }
        var t = first.count
        let last = literals[literals.count - 1].bytes
        let end = text.count - last.count
        guard end >= t, hasPrefix(text, at: end, last, folded: folded) else { return false }
        for middle in literals[1..<(literals.count - 1)] where !middle.bytes.isEmpty {
            guard let found = find(middle, in: text, from: t, before: end, folded: folded) else { return false }
            t = found + middle.bytes.count
        }
        return true
    }

    /// The leftmost place at or after `from` where `needle` lies wholly before `limit`
    /// (Knuth–Morris–Pratt).
    static func find(_ needle: Literal, in text: UnsafeBufferPointer<UInt8>, from: Int, before limit: Int, folded: Bool) -> Int? {
        let bytes = needle.bytes
        guard limit - from >= bytes.count else { return nil }
        var matched = 0
        var i = from
        while i < limit {
            let c = folded ? ASCII.fold(text[i]) : text[i]
            while matched > 0 && c != bytes[matched] { matched = needle.failure[matched - 1] }
            if c == bytes[matched] { matched += 1 }
            if matched == bytes.count { return i + 1 - bytes.count }
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
