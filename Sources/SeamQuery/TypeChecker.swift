import SeamSchema

/// Binds a `PredicateNode` to an entity and parameter values, producing a `CheckedNode`.
///
/// What it decides (see `Protocol/predicates.md`, "Types"):
/// - which values each attribute type accepts (a uuid takes a string, normalised to lowercase;
///   a date takes a date or a number of seconds; numbers of either kind compare with integer,
///   double and date attributes);
/// - which operators apply (text matching and `[c]` to strings; ordering not to bool or json);
/// - what nil means in each place (`== nil` tests for nil; a nil *parameter* where an order or a
///   pattern is needed makes the comparison false, as in NSPredicate; a nil *literal* there is an error).
struct TypeChecker {
    let entity: Entity
    let parameters: [String: AttributeValue]

    func check(_ node: PredicateNode) throws(QueryError) -> CheckedNode {
        switch node {
        case .constant(let b, _): return .constant(b)
        case .not(let p, _): return .not(try check(p))
        case .and(let ps): return .and(try flattened(ps, isAnd: true))
        case .or(let ps): return .or(try flattened(ps, isAnd: false))
        case .comparison(let c): return try check(c)
        }
    }

    /// Checks `nodes`, splicing an AND inside an AND (an OR inside an OR) into its parent.
    private func flattened(_ nodes: [PredicateNode], isAnd: Bool) throws(QueryError) -> [CheckedNode] {
        var out: [CheckedNode] = []
        for node in nodes {
            switch (try check(node), isAnd) {
            case (.and(let inner), true), (.or(let inner), false): out.append(contentsOf: inner)
            case (let checked, _): out.append(checked)
            }
        }
        return out
    }

    // MARK: - Comparisons

    private func check(_ c: PredicateNode.Comparison) throws(QueryError) -> CheckedNode {
        let column = try self.column(c.attribute, at: c.attributeRange)
        try checkApplicable(c, column)
        let folded = c.caseInsensitive
        switch (c.op, c.operand) {
        case (.equal, .value(let v)): return try equality(column, v, folded: folded)
        case (.notEqual, .value(let v)): return .not(try equality(column, v, folded: folded))
        case (.less, .value(let v)): return try ordering(column, .less, v, folded: folded)
        case (.lessOrEqual, .value(let v)): return try ordering(column, .lessOrEqual, v, folded: folded)
        case (.greater, .value(let v)): return try ordering(column, .greater, v, folded: folded)
        case (.greaterOrEqual, .value(let v)): return try ordering(column, .greaterOrEqual, v, folded: folded)
        case (.in, .list(let vs, _)): return try membership(column, vs, folded: folded)
        case (.between, .range(let lo, let hi, _)): return try between(column, lo, hi, folded: folded)
        case (.beginsWith, .value(let v)): return try textMatch(column, .beginsWith, v, folded: folded)
        case (.contains, .value(let v)): return try textMatch(column, .contains, v, folded: folded)
        case (.endsWith, .value(let v)): return try textMatch(column, .endsWith, v, folded: folded)
        case (.like, .value(let v)): return try like(column, v, folded: folded)
        default:
            throw QueryError(.typeMismatch, at: c.operand.range.start, "\(c.op.rawValue) cannot take this operand")
        }
    }

    private func column(_ name: String, at range: SourceRange) throws(QueryError) -> Column {
        guard let attribute = entity.attribute(name) else {
            let known = entity.attributes.map(\.name).joined(separator: ", ")
            throw QueryError(
                .unknownAttribute, at: range.start, "\(entity.name) has no attribute '\(name)'; it has \(known)")
        }
        return Column(name: attribute.name, type: attribute.type)
    }

    private func checkApplicable(_ c: PredicateNode.Comparison, _ column: Column) throws(QueryError) {
        let type = column.type.rawValue
        if c.op.isTextMatch && column.type != .string {
            throw QueryError(
                .operatorNotApplicable, at: c.opRange.start,
                "\(c.op.rawValue) applies to string attributes; '\(column.name)' is \(type)")
        }
        if c.op.isOrdering && (column.type == .bool || column.type == .json) {
            throw QueryError(
                .operatorNotApplicable, at: c.opRange.start,
                "'\(column.name)' is \(type), which has no order; use ==, != or IN")
        }
        if c.caseInsensitive && column.type != .string {
            throw QueryError(
                .operatorNotApplicable, at: c.opRange.start,
                "[c] folds the case of text and applies to string attributes; '\(column.name)' is \(type)")
        }
    }

    private func equality(_ column: Column, _ v: PredicateNode.Value, folded: Bool) throws(QueryError) -> CheckedNode {
        guard let value = try resolve(v, for: column, folded: folded) else { return .isNull(column) }
        return .compare(column, .equal, value, folded: folded)
    }

    private func ordering(
        _ column: Column, _ relation: CheckedNode.Relation, _ v: PredicateNode.Value,
        folded: Bool
    ) throws(QueryError) -> CheckedNode {
        guard let value = try orderedValue(v, for: column, folded: folded) else { return .constant(false) }
        return .compare(column, relation, value, folded: folded)
    }

    private func membership(_ column: Column, _ vs: [PredicateNode.Value], folded: Bool) throws(QueryError)
        -> CheckedNode
    {
        var values: [StoredValue] = []
        var includesNull = false
        for v in vs {
            if let value = try resolve(v, for: column, folded: folded) {
                values.append(value)
            } else {
                includesNull = true
            }
        }
        if values.isEmpty { return includesNull ? .isNull(column) : .constant(false) }
        return .inList(column, values, includesNull: includesNull, folded: folded)
    }

    private func between(
        _ column: Column, _ lo: PredicateNode.Value, _ hi: PredicateNode.Value,
        folded: Bool
    ) throws(QueryError) -> CheckedNode {
        let low = try orderedValue(lo, for: column, folded: folded)
        let high = try orderedValue(hi, for: column, folded: folded)
        guard let low, let high else { return .constant(false) }
        return .and([
            .compare(column, .greaterOrEqual, low, folded: folded),
            .compare(column, .lessOrEqual, high, folded: folded),
        ])
    }

    private func textMatch(
        _ column: Column, _ match: CheckedNode.TextMatch, _ v: PredicateNode.Value,
        folded: Bool
    ) throws(QueryError) -> CheckedNode {
        guard case .text(let pattern)? = try orderedValue(v, for: column, folded: folded) else {
            return .constant(false)
        }
        if pattern.isEmpty { return .not(.isNull(column)) }
        return .text(column, match, Array(pattern.utf8), folded: folded)
    }

    private func like(_ column: Column, _ v: PredicateNode.Value, folded: Bool) throws(QueryError) -> CheckedNode {
        guard case .text(let pattern)? = try orderedValue(v, for: column, folded: folded) else {
            return .constant(false)
        }
        guard pattern.utf8.count <= QueryLimits.maxPatternBytes else {
            throw QueryError(
                .patternTooLong, at: v.range.start,
                "a LIKE pattern is at most \(QueryLimits.maxPatternBytes) bytes; this one is \(pattern.utf8.count)")
        }
        do throws(LikePattern.Problem) {
            return .like(column, try LikePattern(pattern, folded: folded), folded: folded)
        } catch {
            switch error {
            case .trailingBackslash:
                throw QueryError(
                    .invalidValue, at: v.range.start,
                    "the LIKE pattern ends with a lone backslash; a literal backslash is \\\\ in the pattern")
            case .containsNUL:
                throw QueryError(.invalidValue, at: v.range.start, "a LIKE pattern cannot contain U+0000")
            }
        }
    }

    // MARK: - Values

    /// A value where nil has no meaning: a nil literal is an error, a nil parameter gives `nil`
    /// (and so a false comparison, as in NSPredicate).
    private func orderedValue(_ v: PredicateNode.Value, for column: Column, folded: Bool) throws(QueryError)
        -> StoredValue?
    {
        if case .null = v.kind {
            throw QueryError(
                .typeMismatch, at: v.range.start, "nil has no order and matches no text; compare with == nil or != nil")
        }
        return try resolve(v, for: column, folded: folded)
    }

    /// The stored value of a literal or parameter for `column`; `nil` for nil.
    private func resolve(_ v: PredicateNode.Value, for column: Column, folded: Bool) throws(QueryError) -> StoredValue?
    {
        let value: StoredValue?
        switch v.kind {
        case .parameter(let name):
            guard let given = parameters[name] else {
                throw QueryError(
                    .missingParameter, at: v.range.start, "no value for $\(name); pass it among the parameters")
            }
            value = try fromParameter(given, name: name, for: column, at: v.range.start)
        default:
            value = try fromLiteral(v, for: column)
        }
        return folded ? value?.folded : value
    }

    private func fromLiteral(_ v: PredicateNode.Value, for column: Column) throws(QueryError) -> StoredValue? {
        let type = column.type
        switch v.kind {
        case .null: return nil
        case .string(let s) where type == .string || type == .json: return .text(s)
        case .string(let s) where type == .uuid: return try uuid(s, at: v.range.start)
        case .integer(let i) where type.isNumeric: return .integer(i)
        case .double(let d) where type.isNumeric: return .real(d)
        case .bool(let b) where type == .bool: return .integer(b ? 1 : 0)
        case .date(let d) where type == .date: return .real(d)
        default:
            throw QueryError(
                .typeMismatch, at: v.range.start,
                "'\(column.name)' is \(type.rawValue) and takes \(Self.accepted(type)); "
                    + "found \(Self.literalName(v.kind))"
            )
        }
    }

    private func fromParameter(
        _ given: AttributeValue, name: String, for column: Column,
        at offset: Int
    ) throws(QueryError) -> StoredValue? {
        let type = column.type
        switch given {
        case .null: return nil
        case .string(let s) where type == .string || type == .json: return .text(s)
        case .json(let s) where type == .json: return .text(s)
        case .string(let s) where type == .uuid, .uuid(let s) where type == .uuid: return try uuid(s, at: offset)
        case .integer(let i) where type.isNumeric: return .integer(i)
        case .double(let d) where type.isNumeric, .date(let d) where type == .date:
            guard !d.isNaN else {
                throw QueryError(
                    .invalidValue, at: offset, "$\(name) is NaN, which is no number; pass nil for no value")
            }
            return .real(d)
        case .bool(let b) where type == .bool: return .integer(b ? 1 : 0)
        case .binary(let b) where type == .binary: return .blob(b)
        default:
            throw QueryError(
                .parameterTypeMismatch, at: offset,
                "$\(name) is \(given.type?.rawValue ?? "nil"), but '\(column.name)' is \(type.rawValue) "
                    + "and takes \(Self.accepted(type))"
            )
        }
    }

    /// A uuid in canonical lowercase text, or `invalidValue`.
    private func uuid(_ s: String, at offset: Int) throws(QueryError) -> StoredValue {
        let lower = ASCII.lowercased(s)
        guard UUIDText.isCanonical(lower) else {
            throw QueryError(
                .invalidValue, at: offset, "\"\(s.prefix(40))\" is not a UUID (8-4-4-4-12 hexadecimal digits)")
        }
        return .text(lower)
    }

    private static func accepted(_ type: AttributeType) -> String {
        switch type {
        case .string: return "a string"
        case .uuid: return "a UUID written as a string"
        case .json: return "JSON text written as a string"
        case .integer, .double: return "a number"
        case .date: return "date(…) or a number of Unix seconds"
        case .bool: return "TRUE or FALSE"
        case .binary: return "a binary parameter (there is no binary literal)"
        }
    }

    private static func literalName(_ kind: PredicateNode.Value.Kind) -> String {
        switch kind {
        case .null: return "nil"
        case .bool: return "a boolean"
        case .integer, .double: return "a number"
        case .string: return "a string"
        case .date: return "a date"
        case .parameter: return "a parameter"
        }
    }
}

extension AttributeType {
    /// Integer, double and date attributes compare with numbers of either kind.
    var isNumeric: Bool { self == .integer || self == .double || self == .date }
}
