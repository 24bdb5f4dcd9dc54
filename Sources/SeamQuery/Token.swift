/// One lexical unit of a predicate or sort text, with where it is in the source.
struct Token: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// An identifier or a keyword, as written (keywords are recognised by the parser).
        case word(String)
        /// `#name`: always an attribute name, even when it spells a keyword.
        case escapedWord(String)
        /// `$name`, without the `$`.
        case parameter(String)
        /// A string literal with its escapes resolved.
        case string(String)
        case integer(Int64)
        case double(Double)
        case symbol(Symbol)
        case end
    }

    /// Punctuation and operators. Alternative spellings (`=`, `<>`, `=<`, `=>`) map to one case.
    enum Symbol: String, Sendable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case and = "&&"
        case or = "||"
        case not = "!"
        case minus = "-"
        case leftParen = "("
        case rightParen = ")"
        case leftBrace = "{"
        case rightBrace = "}"
        case leftBracket = "["
        case rightBracket = "]"
        case comma = ","
    }

    var kind: Kind
    var range: SourceRange
    /// The keyword a `.word` spells, recognised once by the lexer.
    let keyword: Keyword?

    init(_ kind: Kind, _ start: Int, _ end: Int) {
        self.kind = kind
        self.range = SourceRange(start, end)
        if case .word(let w) = kind { keyword = Keyword(w) } else { keyword = nil }
    }

    /// The token as an error message names it.
    var display: String {
        switch kind {
        case .word(let w): return "'\(w)'"
        case .escapedWord(let w): return "'#\(w)'"
        case .parameter(let p): return "parameter '$\(p)'"
        case .string: return "a string"
        case .integer(let i): return "the number \(i)"
        case .double(let d): return "the number \(d)"
        case .symbol(let s): return "'\(s.rawValue)'"
        case .end: return "the end of the text"
        }
    }
}

/// The words with a meaning of their own, matched without regard to ASCII case.
///
/// Write `#word` to use one of them as an attribute name.
enum Keyword: String, CaseIterable, Sendable {
    case and, or, not, `in`, between, beginswith, contains, endswith, like
    case `true`, `false`, yes, no, `nil`, null, truepredicate, falsepredicate
    case asc, desc, ascending, descending

    init?(_ word: String) {
        // Every keyword is 2 to 14 ASCII letters; most words are attribute names, so skip them fast.
        guard (2...14).contains(word.utf8.count) else { return nil }
        self.init(rawValue: ASCII.lowercased(word))
    }

    /// NSPredicate words this language deliberately lacks; naming them gives a clear error.
    static let unsupported: Set<String> = [
        "matches", "any", "all", "some", "none", "subquery", "function", "cast", "self", "size",
    ]

    /// Whether `word` is one of `unsupported`, in any ASCII case.
    static func isUnsupported(_ word: String) -> Bool {
        (3...8).contains(word.utf8.count) && unsupported.contains(ASCII.lowercased(word))
    }

    /// How an attribute is written in canonical text: with a `#` when its name would otherwise
    /// read as a keyword or as one of the NSPredicate words the parser refuses.
    static func written(attribute: String) -> String {
        Keyword(attribute) == nil && !isUnsupported(attribute) ? attribute : "#" + attribute
    }
}
