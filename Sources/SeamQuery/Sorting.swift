import SeamSchema

/// The order of a query's rows: several keys, each ascending or descending, checked against an
/// entity; the same order in SQL (`sql`) and in memory (`compare`).
///
/// Text form: keys separated by commas, each `name`, `-name` (descending), `name ASC` or
/// `name DESC`, optionally with `[c]` after the name to fold ASCII case (`name[c]`).
///
/// Rules, as SQLite's: nil sorts first ascending and last descending; numbers compare by value,
/// text by UTF-8 bytes. Every sorting ends with `uuid` ascending unless `uuid` is already a key,
/// so that no two rows tie and a row's place in a result is the same in SQL and in memory.
public struct Sorting: Sendable, Hashable, CustomStringConvertible {
    /// One sort key.
    public struct Key: Sendable, Hashable, CustomStringConvertible {
        public var attribute: String
        public var descending: Bool
        /// `[c]`: compare ASCII-folded text.
        public var caseInsensitive: Bool

        public init(_ attribute: String, descending: Bool = false, caseInsensitive: Bool = false) {
            self.attribute = attribute
            self.descending = descending
            self.caseInsensitive = caseInsensitive
        }

        /// The key in text form, e.g. `-name[c]`.
        public var description: String {
            let name = Keyword.written(attribute: attribute)
            return (descending ? "-" : "") + name + (caseInsensitive ? "[c]" : "")
        }
    }

    /// The entity the keys were checked against.
    public let entityName: String
    /// The keys as given, followed by the implicit `uuid` key when needed.
    public let keys: [Key]
    private let columns: [Column]

    /// Parses and checks `text` (which may be empty: then only the `uuid` key remains).
    ///
    /// Throws a `QueryError` at the offending byte: `unknownAttribute`, `duplicateSortKey`,
    /// `operatorNotApplicable` (`[c]` on a non-string), or a syntax error.
    public init(_ text: String, entity: Entity) throws(QueryError) {
        try self.init(located: try Self.parse(text), entity: entity)
    }

    /// Checks `keys` against `entity` (error offsets are 0).
    public init(_ keys: [Key], entity: Entity) throws(QueryError) {
        try self.init(located: keys.map { ($0, SourceRange(0, 0)) }, entity: entity)
    }

    private init(located: [(key: Key, range: SourceRange)], entity: Entity) throws(QueryError) {
        var keys: [Key] = []
        var columns: [Column] = []
        for (key, range) in located {
            guard let attribute = entity.attribute(key.attribute) else {
                throw QueryError(
                    .unknownAttribute, at: range.start, "\(entity.name) has no attribute '\(key.attribute)' to sort by")
            }
            guard !keys.contains(where: { $0.attribute == key.attribute }) else {
                throw QueryError(
                    .duplicateSortKey, at: range.start,
                    "'\(key.attribute)' is already a sort key; name each attribute once")
            }
            guard !key.caseInsensitive || attribute.type == .string else {
                throw QueryError(
                    .operatorNotApplicable, at: range.start,
                    "[c] applies to string attributes; '\(key.attribute)' is \(attribute.type.rawValue)")
            }
            keys.append(key)
            columns.append(Column(name: attribute.name, type: attribute.type))
        }
        if let identity = entity.attribute(Entity.identity), !keys.contains(where: { $0.attribute == Entity.identity })
        {
            keys.append(Key(identity.name))
            columns.append(Column(name: identity.name, type: identity.type))
        }
        self.entityName = entity.name
        self.keys = keys
        self.columns = columns
    }

    // MARK: - SQL

    /// The ORDER BY list, e.g. `"state" ASC, lower("name") DESC, "uuid" ASC` (without the words
    /// ORDER BY). SQLite's default puts nil first ascending and last descending, as `compare` does.
    public var sql: String {
        zip(keys, columns).map { key, column in
            (key.caseInsensitive ? "lower(\(column.quoted))" : column.quoted) + (key.descending ? " DESC" : " ASC")
        }.joined(separator: ", ")
    }

    public var description: String { keys.map(\.description).joined(separator: ", ") }

    // MARK: - In memory

    /// -1, 0 or 1 as `a` sorts before, with or after `b`. Only rows with equal values for every
    /// key (the same uuid) compare as 0.
    public func compare(_ a: [String: AttributeValue], _ b: [String: AttributeValue]) -> Int {
        for (key, column) in zip(keys, columns) {
            let order: Int
            switch (column.value(in: a), column.value(in: b)) {
            case (nil, nil): order = 0
            case (nil, _): order = -1
            case (_, nil): order = 1
            case (let x?, let y?): order = StoredValue.compare(x, y, folded: key.caseInsensitive)
            }
            if order != 0 { return key.descending ? -order : order }
        }
        return 0
    }

    public func areInIncreasingOrder(_ a: [String: AttributeValue], _ b: [String: AttributeValue]) -> Bool {
        compare(a, b) < 0
    }

    /// `rows` in this order.
    public func sorted(_ rows: [[String: AttributeValue]]) -> [[String: AttributeValue]] {
        rows.sorted(by: areInIncreasingOrder)
    }

    /// Where `row` goes in `sorted` (already in this order): the index of the first row that
    /// sorts after it. O(log n) comparisons.
    public func insertionIndex(of row: [String: AttributeValue], in sorted: [[String: AttributeValue]]) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if compare(sorted[mid], row) <= 0 { low = mid + 1 } else { high = mid }
        }
        return low
    }

    // MARK: - Text

    private static func parse(_ text: String) throws(QueryError) -> [(key: Key, range: SourceRange)] {
        var parser = Parser(tokens: try Lexer.tokens(of: Array(text.utf8)))
        var out: [(key: Key, range: SourceRange)] = []
        guard parser.current.kind != .end else { return out }
        while true {
            out.append(try parser.parseSortKey())
            if parser.isSymbol(.comma) {
                parser.advance()
                continue
            }
            guard parser.current.kind == .end else {
                throw QueryError(
                    .unexpectedToken, at: parser.current.range.start,
                    "expected ',' or the end of the sort, found \(parser.current.display)")
            }
            return out
        }
    }
}

extension Parser {
    /// `[-] name [[c]] [ASC|DESC]`.
    mutating func parseSortKey() throws(QueryError) -> (key: Sorting.Key, range: SourceRange) {
        let minus = isSymbol(.minus)
        if minus { advance() }
        let nameToken = current
        let name: String
        switch nameToken.kind {
        case .escapedWord(let w): name = w
        case .word(let w) where nameToken.keyword == nil: name = w
        default:
            throw QueryError(
                .unexpectedToken, at: nameToken.range.start,
                "expected an attribute name, found \(nameToken.display); write 'name', '-name' or 'name DESC'")
        }
        advance()
        var key = Sorting.Key(name, descending: minus, caseInsensitive: try parseOptions())
        if case .word(let w) = current.kind, let keyword = current.keyword,
            [.asc, .desc, .ascending, .descending].contains(keyword)
        {
            guard !minus else {
                throw QueryError(
                    .unexpectedToken, at: current.range.start, "write either -\(name) or \(name) \(w), not both")
            }
            key.descending = keyword == .desc || keyword == .descending
            advance()
        }
        return (key, nameToken.range)
    }
}
