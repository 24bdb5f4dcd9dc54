/// Recursive-descent parser from tokens to a `PredicateNode`.
///
/// Grammar (see `Protocol/predicates.md`): OR binds loosest, then AND, then prefix NOT. Recursion
/// happens only at `(` and prefix `NOT`, and both count against `QueryLimits.maxDepth` (as does
/// an infix `NOT IN`, which prints as a prefix NOT), so the parser's stack is bounded whatever
/// the input.
struct Parser {
    private let tokens: [Token]
    private var position = 0
    private var depth = 0
    private var comparisons = 0
    private var values = 0

    init(tokens: [Token]) { self.tokens = tokens }

    /// Parses a whole predicate.
    static func parse(_ bytes: [UInt8]) throws(QueryError) -> PredicateNode {
        var parser = Parser(tokens: try Lexer.tokens(of: bytes))
        guard parser.current.kind != .end else {
            throw QueryError(.emptyPredicate, at: 0, "the predicate is empty; write TRUEPREDICATE to match every row")
        }
        let root = try parser.parseOr()
        try parser.expectEnd()
        return root
    }

    // MARK: - Cursor

    var current: Token { tokens[position] }

    @discardableResult
    mutating func advance() -> Token {
        let token = tokens[position]
        if position < tokens.count - 1 { position += 1 }
        return token
    }

    func isSymbol(_ s: Token.Symbol) -> Bool { current.kind == .symbol(s) }

    func isKeyword(_ k: Keyword) -> Bool { current.keyword == k }

    mutating func expectEnd() throws(QueryError) {
        switch current.kind {
        case .end: return
        case .symbol(.rightParen):
            throw QueryError(.unbalancedParentheses, at: current.range.start, "this ')' closes no '('")
        default:
            throw QueryError(
                .unexpectedToken, at: current.range.start,
                "expected AND, OR or the end of the predicate, found \(current.display)")
        }
    }

    /// Opens one nesting level at `token` (a `(` or a prefix NOT).
    private mutating func enter(_ token: Token) throws(QueryError) {
        depth += 1
        guard depth <= QueryLimits.maxDepth else {
            throw QueryError(
                .tooDeep, at: token.range.start,
                "parentheses and NOT nest more than \(QueryLimits.maxDepth) deep here; flatten the predicate")
        }
    }

    // MARK: - Logic

    private mutating func parseOr() throws(QueryError) -> PredicateNode {
        var terms = [try parseAnd()]
        while isKeyword(.or) || isSymbol(.or) {
            advance()
            terms.append(try parseAnd())
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func parseAnd() throws(QueryError) -> PredicateNode {
        var terms = [try parseUnary()]
        while isKeyword(.and) || isSymbol(.and) {
            advance()
            terms.append(try parseUnary())
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    private mutating func parseUnary() throws(QueryError) -> PredicateNode {
        guard isKeyword(.not) || isSymbol(.not) else { return try parsePrimary() }
        let op = advance()
        try enter(op)
        let operand = try parseUnary()
        depth -= 1
        return .not(operand, op.range.union(operand.range))
    }

    private mutating func parsePrimary() throws(QueryError) -> PredicateNode {
        let token = current
        switch token.kind {
        case .symbol(.leftParen):
            return try parseParenthesised()
        case .escapedWord(let name):
            return try parseComparison(attribute: name)
        case .word(let word) where Keyword.isUnsupported(word):
            throw QueryError(
                .unknownOperator, at: token.range.start,
                "'\(word)' is an NSPredicate operator this language does not have; "
                    + "an attribute of that name is written #\(word)"
            )
        case .word(let word):
            guard let keyword = token.keyword else { return try parseComparison(attribute: word) }
            if keyword == .truepredicate || keyword == .falsepredicate {
                try countComparison(at: token)
                advance()
                return .constant(keyword == .truepredicate, token.range)
            }
            throw misplacedKeyword(word, keyword: keyword, at: token)
        case .string, .integer, .double, .parameter:
            throw QueryError(
                .unexpectedToken, at: token.range.start,
                "a comparison starts with an attribute name: write 'attribute == value', not \(token.display) first")
        case .end:
            throw QueryError(
                .unexpectedEnd, at: token.range.start, "expected a comparison, found the end of the predicate")
        case .symbol(.rightParen) where depth == 0:
            throw QueryError(.unbalancedParentheses, at: token.range.start, "this ')' closes no '('")
        case .symbol:
            throw QueryError(.unexpectedToken, at: token.range.start, "expected a comparison, found \(token.display)")
        }
    }

    private mutating func parseParenthesised() throws(QueryError) -> PredicateNode {
        let open = advance()
        try enter(open)
        let inner = try parseOr()
        depth -= 1
        switch current.kind {
        case .symbol(.rightParen):
            advance()
            return inner
        case .end:
            throw QueryError(.unbalancedParentheses, at: open.range.start, "this '(' is never closed")
        default:
            throw QueryError(
                .unexpectedToken, at: current.range.start, "expected AND, OR or ')', found \(current.display)")
        }
    }

    private func misplacedKeyword(_ word: String, keyword: Keyword, at token: Token) -> QueryError {
        switch keyword {
        case .true, .false, .yes, .no, .nil, .null:
            return QueryError(
                .unexpectedToken, at: token.range.start,
                "a comparison starts with an attribute name: write 'attribute == \(word)'; "
                    + "an attribute named '\(word)' is written #\(word)"
            )
        default:
            return QueryError(
                .unexpectedToken, at: token.range.start,
                "expected a comparison, found the keyword '\(word)'; an attribute of that name is written #\(word)")
        }
    }

    // MARK: - Comparisons

    private mutating func countComparison(at token: Token) throws(QueryError) {
        comparisons += 1
        guard comparisons <= QueryLimits.maxComparisons else {
            throw QueryError(
                .tooManyComparisons, at: token.range.start,
                "a predicate holds at most \(QueryLimits.maxComparisons) comparisons; use IN {…} for many values")
        }
    }

    private mutating func parseComparison(attribute: String) throws(QueryError) -> PredicateNode {
        let name = advance()
        try countComparison(at: name)
        let negated: Token? = isKeyword(.not) ? advance() : nil
        if let negated { try enter(negated) }
        defer { if negated != nil { depth -= 1 } }
        let negatedAt = negated?.range
        let (op, opRange) = try parseOperator(after: name)
        if let negatedAt, !(op.isTextMatch || op == .in || op == .between) {
            throw QueryError(
                .unknownOperator, at: negatedAt.start,
                "NOT may precede IN, BETWEEN, BEGINSWITH, CONTAINS, ENDSWITH or LIKE, not \(op.rawValue)")
        }
        let caseInsensitive = try parseOptions()
        let operand = try parseOperand(for: op)
        let comparison = PredicateNode.comparison(
            .init(
                attribute: attribute, attributeRange: name.range, op: op, opRange: opRange,
                caseInsensitive: caseInsensitive, operand: operand))
        guard let negatedAt else { return comparison }
        return .not(comparison, name.range.union(negatedAt).union(operand.range))
    }

    private mutating func parseOperator(after name: Token) throws(QueryError) -> (PredicateNode.Operator, SourceRange) {
        let token = current
        let op: PredicateNode.Operator
        switch token.kind {
        case .symbol(let s):
            guard let found = Self.symbolOperators[s] else {
                throw QueryError(
                    .unknownOperator, at: token.range.start,
                    "expected a comparison operator after \(name.display), found \(token.display)")
            }
            op = found
        case .word(let word):
            guard let found = token.keyword.flatMap({ Self.keywordOperators[$0] }) else {
                throw unknownOperator(word, at: token)
            }
            op = found
        case .end:
            throw QueryError(
                .unexpectedEnd, at: token.range.start, "expected an operator such as == after \(name.display)")
        default:
            throw QueryError(
                .unknownOperator, at: token.range.start,
                "expected a comparison operator after \(name.display), found \(token.display)")
        }
        advance()
        return (op, token.range)
    }

    private func unknownOperator(_ word: String, at token: Token) -> QueryError {
        let why =
            Keyword.isUnsupported(word)
            ? "'\(word)' is an NSPredicate operator this language does not have"
            : "unknown operator '\(word)'"
        return QueryError(
            .unknownOperator, at: token.range.start,
            "\(why); use ==, !=, <, <=, >, >=, IN, BETWEEN, BEGINSWITH, CONTAINS, ENDSWITH or LIKE")
    }

    private static let symbolOperators: [Token.Symbol: PredicateNode.Operator] = [
        .equal: .equal, .notEqual: .notEqual, .less: .less, .lessOrEqual: .lessOrEqual,
        .greater: .greater, .greaterOrEqual: .greaterOrEqual,
    ]

    private static let keywordOperators: [Keyword: PredicateNode.Operator] = [
        .in: .in, .between: .between, .beginswith: .beginsWith, .contains: .contains, .endswith: .endsWith,
        .like: .like,
    ]

    /// `[c]` after an operator; `[d]` and other letters are refused.
    mutating func parseOptions() throws(QueryError) -> Bool {
        guard isSymbol(.leftBracket) else { return false }
        let open = advance()
        guard case .word(let letters) = current.kind else {
            throw QueryError(
                .invalidOption, at: current.range.start, "expected an option letter after '[', as in ==[c]")
        }
        let at = advance()
        guard isSymbol(.rightBracket) else {
            throw QueryError(
                .unexpectedToken, at: current.range.start,
                "expected ']' to close the option opened at byte \(open.range.start)")
        }
        advance()
        guard ASCII.lowercased(letters) == "c" else {
            let why =
                letters.lowercased().contains("d")
                ? "[d] (diacritic-insensitive) is not supported: store a folded copy of the text and compare with that"
                : "unknown option [\(letters)]; the only option is [c], which folds ASCII case"
            throw QueryError(.invalidOption, at: at.range.start, why)
        }
        return true
    }

    // MARK: - Operands

    private mutating func parseOperand(for op: PredicateNode.Operator) throws(QueryError) -> PredicateNode.Operand {
        switch op {
        case .in: return try parseList()
        case .between: return try parseRange()
        default: return .value(try parseValue())
        }
    }

    /// `{v, …}` after IN.
    private mutating func parseList() throws(QueryError) -> PredicateNode.Operand {
        let open = try expectBrace(after: "IN", example: "IN {1, 2}")
        var items: [PredicateNode.Value] = []
        if isSymbol(.rightBrace) { return .list(items, open.range.union(advance().range)) }
        while true {
            guard items.count < QueryLimits.maxListCount else {
                throw QueryError(
                    .listTooLong, at: current.range.start,
                    "an IN list holds at most \(QueryLimits.maxListCount) values; split it with OR")
            }
            items.append(try parseValue())
            if isSymbol(.comma) {
                advance()
                continue
            }
            return .list(items, open.range.union(try closeBrace(open).range))
        }
    }

    /// `{low, high}` after BETWEEN.
    private mutating func parseRange() throws(QueryError) -> PredicateNode.Operand {
        let open = try expectBrace(after: "BETWEEN", example: "BETWEEN {1, 10}")
        let low = try parseValue()
        guard isSymbol(.comma) else {
            throw QueryError(.unexpectedToken, at: current.range.start, "BETWEEN takes two values: {low, high}")
        }
        advance()
        let high = try parseValue()
        return .range(
            low, high, open.range.union(try closeBrace(open, why: "BETWEEN takes two values: {low, high}").range))
    }

    private mutating func expectBrace(after op: String, example: String) throws(QueryError) -> Token {
        guard isSymbol(.leftBrace) else {
            throw QueryError(
                .unexpectedToken, at: current.range.start,
                "\(op) takes values in braces, as in \(example); found \(current.display)")
        }
        return advance()
    }

    private mutating func closeBrace(_ open: Token, why: String = "expected ',' or '}'") throws(QueryError) -> Token {
        if isSymbol(.rightBrace) { return advance() }
        if current.kind == .end {
            throw QueryError(.unbalancedParentheses, at: open.range.start, "this '{' is never closed")
        }
        throw QueryError(.unexpectedToken, at: current.range.start, "\(why), found \(current.display)")
    }

    /// A literal, `date(…)` or `$parameter`.
    private mutating func parseValue() throws(QueryError) -> PredicateNode.Value {
        let token = current
        values += 1
        guard values <= QueryLimits.maxValues else {
            throw QueryError(
                .tooManyValues, at: token.range.start, "a predicate holds at most \(QueryLimits.maxValues) values")
        }
        let kind: PredicateNode.Value.Kind
        switch token.kind {
        case .string(let s): kind = .string(s)
        case .integer(let i): kind = .integer(i)
        case .double(let d): kind = .double(d)
        case .parameter(let p): kind = .parameter(p)
        case .word(let w): return try parseWordValue(w, token)
        case .end:
            throw QueryError(.unexpectedEnd, at: token.range.start, "expected a value, found the end of the predicate")
        default: throw notAValue(token)
        }
        advance()
        return .init(kind, token.range)
    }

    private func notAValue(_ token: Token) -> QueryError {
        QueryError(
            .unexpectedToken, at: token.range.start,
            "expected a value (a string, a number, TRUE, FALSE, nil, date(…) or a $parameter), found "
                + "\(token.display); attributes are compared with values, not with each other"
        )
    }

    private mutating func parseWordValue(_ word: String, _ token: Token) throws(QueryError) -> PredicateNode.Value {
        if ASCII.lowercased(word) == "date" { return try parseDate() }
        let kind: PredicateNode.Value.Kind
        switch token.keyword {
        case .true, .yes: kind = .bool(true)
        case .false, .no: kind = .bool(false)
        case .nil, .null: kind = .null
        default: throw notAValue(token)
        }
        advance()
        return .init(kind, token.range)
    }

    /// `date("RFC 3339")` or `date(seconds)`.
    private mutating func parseDate() throws(QueryError) -> PredicateNode.Value {
        let name = advance()
        guard isSymbol(.leftParen) else {
            throw QueryError(
                .invalidDate, at: current.range.start, "write a date as date(\"2026-11-30T10:00:00Z\") or date(seconds)"
            )
        }
        advance()
        let argument = advance()
        let seconds: Double
        switch argument.kind {
        case .integer(let i): seconds = Double(i)
        case .double(let d): seconds = d
        case .string(let s):
            guard let parsed = DateLiteral.seconds(s) else {
                throw QueryError(
                    .invalidDate, at: argument.range.start,
                    "not an RFC 3339 date: write \"2026-11-30\", \"2026-11-30T10:00:00Z\" "
                        + "or \"2026-11-30T10:00:00.5+01:00\""
                )
            }
            seconds = parsed
        default:
            throw QueryError(
                .invalidDate, at: argument.range.start, "date(…) takes an RFC 3339 string or a number of seconds")
        }
        guard isSymbol(.rightParen) else {
            throw QueryError(
                .unexpectedToken, at: current.range.start, "expected ')' to close date(…), found \(current.display)")
        }
        let close = advance()
        return .init(.date(seconds), name.range.union(close.range))
    }
}
