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

    /// Whether `text` matches. Linear in practice; O(text × pattern) at worst, never exponential
    /// (only the last `*` is ever backtracked to).
    func matches(_ text: UnsafeBufferPointer<UInt8>, folded: Bool) -> Bool {
        if text.contains(0) { return false }
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
