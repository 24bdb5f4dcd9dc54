import SeamSchema

/// Splits predicate and sort text into tokens.
///
/// Works on UTF-8 bytes and reports byte offsets. Non-ASCII characters are allowed only inside
/// string literals; identifiers are ASCII (`[A-Za-z_][A-Za-z0-9_]*`), as schema names are.
struct Lexer {
    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Every token of `bytes`, the last one `.end`.
    ///
    /// Throws `tooLong`, `invalidUTF8` or a lexical error at the first problem.
    static func tokens(of bytes: [UInt8]) throws(QueryError) -> [Token] {
        guard bytes.count <= QueryLimits.maxSourceBytes else {
            throw QueryError(
                .tooLong, at: QueryLimits.maxSourceBytes,
                "the text is \(bytes.count) bytes; at most \(QueryLimits.maxSourceBytes) are allowed")
        }
        if let bad = UTF8Validation.firstInvalidOffset(bytes) {
            throw QueryError(
                .invalidUTF8, at: bad, "byte 0x\(Hex.encode([bytes[bad]])) does not start a valid UTF-8 character")
        }
        var lexer = Lexer(bytes)
        var out: [Token] = []
        while true {
            let token = try lexer.next()
            out.append(token)
            if token.kind == .end { return out }
        }
    }

    // MARK: - Dispatch

    private mutating func next() throws(QueryError) -> Token {
        skipWhiteSpace()
        guard let b = peek() else { return Token(.end, index, index) }
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "'"): return try string()
        case _ where ASCII.isDigit(b): return try number()
        case UInt8(ascii: "-") where peek(1).map(ASCII.isDigit) == true: return try number()
        case _ where ASCII.isIdentifierStart(b): return word()
        case UInt8(ascii: "#"): return try prefixed(escaped: true)
        case UInt8(ascii: "$"): return try prefixed(escaped: false)
        default: return try symbol()
        }
    }

    private func peek(_ ahead: Int = 0) -> UInt8? {
        index + ahead < bytes.count ? bytes[index + ahead] : nil
    }

    private mutating func skipWhiteSpace() {
        while let b = peek(), b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { index += 1 }
    }

    // MARK: - Names

    /// Reads `[A-Za-z_][A-Za-z0-9_]*` at the current position (the first byte is already known to fit).
    private mutating func identifier() -> String {
        let start = index
        while let b = peek(), ASCII.isIdentifierPart(b) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func word() -> Token {
        let start = index
        let name = identifier()
        return Token(.word(name), start, index)
    }

    /// `#name` (an attribute, even if it spells a keyword) or `$name` (a parameter).
    private mutating func prefixed(escaped: Bool) throws(QueryError) -> Token {
        let start = index
        index += 1
        guard let b = peek(), ASCII.isIdentifierStart(b) else {
            let what =
                escaped
                ? "'#' escapes an attribute name: write #name" : "a parameter is '$' followed by a name: write $name"
            throw QueryError(.unexpectedCharacter, at: start, what)
        }
        let name = identifier()
        return Token(escaped ? .escapedWord(name) : .parameter(name), start, index)
    }

    // MARK: - Numbers

    /// `-?digits(.digits)?([eE][+-]?digits)?`: an integer when it has neither fraction nor exponent.
    private mutating func number() throws(QueryError) -> Token {
        let start = index
        if peek() == UInt8(ascii: "-") { index += 1 }
        skipDigits()
        var isInteger = true
        if peek() == UInt8(ascii: ".") {
            index += 1
            try requireDigits(start: start, after: "a decimal point")
            isInteger = false
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            try requireDigits(start: start, after: "an exponent")
            isInteger = false
        }
        if let b = peek(), ASCII.isIdentifierPart(b) || b == UInt8(ascii: ".") {
            throw QueryError(
                .invalidNumber, at: start,
                "a number cannot run into '\(Character(Unicode.Scalar(b)))'; separate it with a space")
        }
        return try numberToken(
            String(decoding: bytes[start..<index], as: UTF8.self), isInteger: isInteger, start: start)
    }

    private mutating func skipDigits() {
        while let b = peek(), ASCII.isDigit(b) { index += 1 }
    }

    /// Consumes digits, throwing `invalidNumber` when there are none.
    private mutating func requireDigits(start: Int, after what: String) throws(QueryError) {
        guard let b = peek(), ASCII.isDigit(b) else {
            throw QueryError(.invalidNumber, at: start, "\(what) must be followed by digits, as in 1.5 or 2e10")
        }
        skipDigits()
    }

    private func numberToken(_ text: String, isInteger: Bool, start: Int) throws(QueryError) -> Token {
        if isInteger {
            guard let value = Int64(text) else {
                throw QueryError(
                    .numberOutOfRange, at: start,
                    "\(text) does not fit in a 64-bit integer (\(Int64.min) … \(Int64.max))")
            }
            return Token(.integer(value), start, index)
        }
        guard let value = Double(text), value.isFinite else {
            throw QueryError(.numberOutOfRange, at: start, "\(text) is beyond the range of a double")
        }
        return Token(.double(value), start, index)
    }

    // MARK: - Strings

    /// A string in `"…"` or `'…'` with the escapes `\\ \" \' \n \r \t \0 \u{X…}`.
    private mutating func string() throws(QueryError) -> Token {
        let start = index
        let quote = bytes[index]
        index += 1
        var out: [UInt8] = []
        while let b = peek() {
            if b == quote {
                index += 1
                return Token(.string(String(decoding: out, as: UTF8.self)), start, index)
            }
            if b == UInt8(ascii: "\\") {
                try escape(into: &out, stringStart: start)
            } else {
                out.append(b)
                index += 1
            }
        }
        throw QueryError(
            .unterminatedString, at: start,
            "the string that starts here has no closing \(Character(Unicode.Scalar(quote)))")
    }

    private mutating func escape(into out: inout [UInt8], stringStart: Int) throws(QueryError) {
        let at = index
        index += 1
        guard let e = peek() else {
            throw QueryError(.unterminatedString, at: stringStart, "the string that starts here ends inside an escape")
        }
        index += 1
        switch e {
        case UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: "'"): out.append(e)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "0"): out.append(0x00)
        case UInt8(ascii: "u"): out.append(contentsOf: try unicodeEscape(at: at))
        default:
            let shown = e < 0x80 ? String(Character(Unicode.Scalar(e))) : "…"
            var hint = "use \\\\ \\\" \\' \\n \\r \\t \\0 or \\u{hex}"
            if e == UInt8(ascii: "*") || e == UInt8(ascii: "?") {
                hint = "a LIKE pattern escapes \(shown) with a backslash, which a string literal writes as \\\\\(shown)"
            }
            throw QueryError(.invalidEscape, at: at, "unknown escape \\\(shown): \(hint)")
        }
    }

    /// `\u{X…}`: one to six hex digits naming a Unicode scalar (not a surrogate).
    private mutating func unicodeEscape(at: Int) throws(QueryError) -> [UInt8] {
        let invalid = QueryError(
            .invalidEscape, at: at, "write a Unicode escape as \\u{hex}, 1 to 6 hex digits naming a scalar value")
        guard peek() == UInt8(ascii: "{") else { throw invalid }
        index += 1
        var value: UInt32 = 0
        var digits = 0
        while let b = peek(), let d = Self.hexValue(b) {
            guard digits < 6 else { throw invalid }
            value = value << 4 | d
            digits += 1
            index += 1
        }
        guard digits > 0, peek() == UInt8(ascii: "}"), let scalar = Unicode.Scalar(value) else { throw invalid }
        index += 1
        return Array(String(Character(scalar)).utf8)
    }

    private static func hexValue(_ b: UInt8) -> UInt32? {
        if ASCII.isDigit(b) { return UInt32(b - 0x30) }
        let lower = b | 0x20
        if lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "f") { return UInt32(lower - UInt8(ascii: "a") + 10) }
        return nil
    }

    // MARK: - Symbols

    private mutating func symbol() throws(QueryError) -> Token {
        let start = index
        let b = bytes[index]
        if let single = Self.punctuation[b] {
            index += 1
            return Token(.symbol(single), start, index)
        }
        if let op = comparisonOrLogic(b) {
            index += op.length
            if op.symbol != .and && op.symbol != .or && op.symbol != .not, let n = peek(),
                Self.operatorBytes.contains(n)
            {
                throw unknownOperatorRun(from: start)
            }
            return Token(.symbol(op.symbol), start, index)
        }
        throw unexpected(b, at: start)
    }

    private static let punctuation: [UInt8: Token.Symbol] = [
        UInt8(ascii: "("): .leftParen, UInt8(ascii: ")"): .rightParen, UInt8(ascii: "{"): .leftBrace,
        UInt8(ascii: "}"): .rightBrace, UInt8(ascii: "["): .leftBracket, UInt8(ascii: "]"): .rightBracket,
        UInt8(ascii: ","): .comma, UInt8(ascii: "-"): .minus,
    ]

    /// Bytes that may continue an operator; after a complete comparison one of them makes a run
    /// such as `===` or `<<` that the language does not have.
    private static let operatorBytes: Set<UInt8> = Set("=<>~".utf8)

    /// The operator starting with `b`, longest spelling first.
    private func comparisonOrLogic(_ b: UInt8) -> (symbol: Token.Symbol, length: Int)? {
        let n = peek(1)
        switch (b, n) {
        case (UInt8(ascii: "="), UInt8(ascii: "=")): return (.equal, 2)
        case (UInt8(ascii: "="), UInt8(ascii: "<")): return (.lessOrEqual, 2)
        case (UInt8(ascii: "="), UInt8(ascii: ">")): return (.greaterOrEqual, 2)
        case (UInt8(ascii: "="), _): return (.equal, 1)
        case (UInt8(ascii: "!"), UInt8(ascii: "=")): return (.notEqual, 2)
        case (UInt8(ascii: "!"), _): return (.not, 1)
        case (UInt8(ascii: "<"), UInt8(ascii: "=")): return (.lessOrEqual, 2)
        case (UInt8(ascii: "<"), UInt8(ascii: ">")): return (.notEqual, 2)
        case (UInt8(ascii: "<"), _): return (.less, 1)
        case (UInt8(ascii: ">"), UInt8(ascii: "=")): return (.greaterOrEqual, 2)
        case (UInt8(ascii: ">"), _): return (.greater, 1)
        case (UInt8(ascii: "&"), UInt8(ascii: "&")): return (.and, 2)
        case (UInt8(ascii: "|"), UInt8(ascii: "|")): return (.or, 2)
        default: return nil
        }
    }

    private func unknownOperatorRun(from start: Int) -> QueryError {
        var end = start
        while end < bytes.count, Self.operatorBytes.contains(bytes[end]) || bytes[end] == UInt8(ascii: "!") { end += 1 }
        let run = String(decoding: bytes[start..<end], as: UTF8.self)
        return QueryError(.unknownOperator, at: start, "unknown operator '\(run)'; use ==, !=, <, <=, > or >=")
    }

    private func unexpected(_ b: UInt8, at offset: Int) -> QueryError {
        if Set("~^%+*/&|".utf8).contains(b) || b == UInt8(ascii: "=") {
            let c = Character(Unicode.Scalar(b))
            return QueryError(
                .unknownOperator, at: offset,
                "unknown operator '\(c)': the language has comparisons, AND, OR and NOT, no arithmetic or bit operators"
            )
        }
        if b == UInt8(ascii: ".") {
            return QueryError(
                .unexpectedCharacter, at: offset, "key paths are not supported: name an attribute of the entity itself")
        }
        if b < 0x20 || b == 0x7F {
            return QueryError(
                .unexpectedCharacter, at: offset, "unexpected control character U+\(Hex.encode([b]).uppercased())")
        }
        let scalar = String(
            decoding: bytes[offset..<min(bytes.count, offset + UTF8Validation.scalarLength(lead: b))], as: UTF8.self)
        return QueryError(
            .unexpectedCharacter, at: offset, "unexpected character '\(scalar)'; text values must be quoted")
    }
}
