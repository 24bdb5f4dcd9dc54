/// An NSPredicate-style `LIKE` pattern: `*` matches any run of characters, `?` exactly one
/// character (one Unicode scalar), and `\` makes the next character literal.
///
/// The same parsed pattern is matched in memory, where nothing backtracks (see `matches`), and
/// in SQLite: by the same matcher through the store's `seam_like`, or, for a literal prefix, as
/// a `GLOB` pattern (`glob`). Text containing U+0000 never matches (SQLite's GLOB would stop
/// reading at the NUL); a pattern cannot contain U+0000.
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
    /// What comes before the first `*` (all of it when there is none): matched where the text
    /// starts.
    private let head: [Piece]
    /// What comes after the last `*`: matched where the text ends. Nil when there is no `*`.
    private let tail: [Piece]?
    /// What lies between two `*`s, in order, each ready to be found: worked out once, here, not
    /// at every match.
    private let middles: [Finder]

    /// How a piece between two `*`s is found in a text.
    private enum Finder: Sendable {
        /// Literal text only: Knuth–Morris–Pratt.
        case literal(Literal)
        /// Literal text and `?`: bit-parallel matching.
        case wildcards(WildcardFinder)
    }

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
        let segments = pieces.split(separator: .any, omittingEmptySubsequences: false).map(Array.init)
        head = segments[0]
        tail = segments.count > 1 ? segments[segments.count - 1] : nil
        middles = segments.dropFirst().dropLast().map { segment in
            if segment.contains(.one) { return .wildcards(WildcardFinder(segment)) }
            return .literal(Literal(segment.flatMap { piece -> [UInt8] in
                if case .literal(let bytes) = piece { return bytes }
                return []
            }))
        }
    }

    // Two patterns are the same when their pieces are: the rest is worked out from them.
    static func == (a: LikePattern, b: LikePattern) -> Bool { a.pieces == b.pieces }
    func hash(into hasher: inout Hasher) { hasher.combine(pieces) }

    // MARK: - In memory

    /// Whether `text` matches, in time linear in the text for literals and `*`, and in the text
    /// times ⌈segment / 64⌉ for a segment holding `?` between two `*`s:
    /// - what precedes the first `*` is matched where the text starts, and what follows the last
    ///   `*` where it ends (each `?` is one character, so from a fixed end there is one way);
    /// - each segment between is taken at its leftmost place after the one before, which leaves
    ///   the most room for the rest (Knuth–Morris–Pratt for a literal, Shift-And for one with `?`).
    func matches(_ text: UnsafeBufferPointer<UInt8>, folded: Bool) -> Bool {
        if text.contains(0) { return false }
        guard var t = Self.forward(head, text, from: 0, folded: folded) else { return false }
        guard let tail else { return t == text.count }
        guard let end = Self.backward(tail, text, to: text.count, notBefore: t, folded: folded) else { return false }
        for middle in middles {
            switch middle {
            case .literal(let literal):
                if literal.bytes.isEmpty { continue }
                guard let found = Self.find(literal, in: text, from: t, before: end, folded: folded) else { return false }
                t = found + literal.bytes.count
            case .wildcards(let finder):
                guard let found = finder.firstEnd(in: text, from: t, before: end, folded: folded) else { return false }
                t = found
            }
        }
        return true
    }

    /// Where `segment` (literals and `?`) ends when matched from `start`, or nil.
    private static func forward(_ segment: [Piece], _ text: UnsafeBufferPointer<UInt8>, from start: Int, folded: Bool) -> Int? {
        var t = start
        for piece in segment {
            switch piece {
            case .one:
                guard t < text.count else { return nil }
                t = min(text.count, t + UTF8Validation.scalarLength(lead: text[t]))
            case .literal(let bytes):
                guard hasPrefix(text, at: t, bytes, folded: folded) else { return nil }
                t += bytes.count
            case .any:
                preconditionFailure("a segment holds no *")
            }
        }
        return t
    }

    /// Where `segment` starts when matched so that it ends at `end`, not before `floor`, or nil.
    private static func backward(
        _ segment: [Piece], _ text: UnsafeBufferPointer<UInt8>, to end: Int, notBefore floor: Int, folded: Bool
    ) -> Int? {
        var t = end
        for piece in segment.reversed() {
            switch piece {
            case .one:
                guard t > floor else { return nil }
                t -= 1
                // Back over continuation bytes to the character's first byte.
                while t > floor && text[t] & 0xC0 == 0x80 { t -= 1 }
            case .literal(let bytes):
                guard t - bytes.count >= floor, hasPrefix(text, at: t - bytes.count, bytes, folded: folded) else { return nil }
                t -= bytes.count
            case .any:
                preconditionFailure("a segment holds no *")
            }
        }
        return t
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

    static func hasPrefix(_ text: UnsafeBufferPointer<UInt8>, at start: Int, _ prefix: [UInt8], folded: Bool) -> Bool {
        guard text.count - start >= prefix.count else { return false }
        for (k, b) in prefix.enumerated() {
            let c = text[start + k]
            if (folded ? ASCII.fold(c) : c) != b { return false }
        }
        return true
    }

    // MARK: - SQL

    /// The pattern as LIKE text again (`*`, `?` and `\` in literals escaped): what `seam_like`
    /// parses back, to the same pieces.
    var source: String {
        spelled { b, out in
            if b == UInt8(ascii: "*") || b == UInt8(ascii: "?") || b == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(b)
        }
    }

    /// Whether SQLite's GLOB matches this pattern without backtracking, so that the query may
    /// keep it (and the index a prefix uses): literal text, then at most one `*`, at the end.
    var globIsLinear: Bool {
        switch pieces.count {
        case 0: return true
        case 1: return pieces[0] != .one
        case 2: if case .literal = pieces[0] { return pieces[1] == .any } else { return false }
        default: return false
        }
    }

    /// The equivalent SQLite GLOB pattern: `*` and `?` as themselves, literal `*`, `?` and `[`
    /// in brackets (GLOB has no escape character).
    var glob: String {
        spelled { b, out in
            if b == UInt8(ascii: "*") || b == UInt8(ascii: "?") || b == UInt8(ascii: "[") {
                out.append(contentsOf: [UInt8(ascii: "["), b, UInt8(ascii: "]")])
            } else {
                out.append(b)
            }
        }
    }

    /// The pieces written out: `*` and `?` as themselves, each literal byte as `literal` writes it.
    private func spelled(_ literal: (UInt8, inout [UInt8]) -> Void) -> String {
        var out: [UInt8] = []
        for piece in pieces {
            switch piece {
            case .any: out.append(UInt8(ascii: "*"))
            case .one: out.append(UInt8(ascii: "?"))
            case .literal(let bytes): for b in bytes { literal(b, &out) }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A LIKE pattern, parsed once, for SQLite's `seam_like(pattern, text, folded)` (which the
/// store registers on every connection): a query runs the broker's own matcher, which never
/// backtracks, rather than GLOB, which does.
public final class LikeMatcher: Sendable {
    private let pattern: LikePattern
    private let folded: Bool

    /// Nil when `pattern` is no LIKE pattern (a trailing `\`, a NUL).
    public init?(pattern: String, folded: Bool) {
        guard let parsed = try? LikePattern(pattern, folded: folded) else { return nil }
        self.pattern = parsed
        self.folded = folded
    }

    /// Whether `text` (UTF-8) matches.
    public func matches(_ text: UnsafeBufferPointer<UInt8>) -> Bool { pattern.matches(text, folded: folded) }
}
