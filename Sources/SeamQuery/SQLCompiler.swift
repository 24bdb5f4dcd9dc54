import SeamSchema

extension CheckedPredicate {
    /// The predicate as an SQLite condition (for a WHERE clause) with its bound arguments.
    ///
    /// Every comparison compiles to an expression that is 0 or 1, never NULL, so SQL's
    /// three-valued logic never shows: NOT, AND and OR mean what they mean in memory.
    public var sql: CompiledSQL {
        var compiler = SQLCompiler()
        compiler.write(root)
        return CompiledSQL(sql: compiler.sql, arguments: compiler.arguments)
    }
}

/// Writes a `CheckedNode` as SQLite SQL. The forms, for a column `c` and an argument `?`:
///
/// | node | SQL |
/// |---|---|
/// | nil test | `(c IS NULL)` |
/// | equality | `(c IS ?)`, with `[c]`: `(lower(c) IS ?)` (argument folded) |
/// | order | `(c IS NOT NULL AND c < ?)` |
/// | IN | `(c IS NOT NULL AND c IN (?, …))`, or `(c IS NULL OR c IN (…))` when nil is listed |
/// | BEGINSWITH | `(c IS NOT NULL AND coalesce(substr(CAST(c AS BLOB), 1, ?) = ?, 0))` (byte length, bytes) |
/// | CONTAINS | `(c IS NOT NULL AND instr(CAST(c AS BLOB), ?) > 0)` |
/// | ENDSWITH | `(c IS NOT NULL AND coalesce(substr(CAST(c AS BLOB), ?) = ?, 0))` (minus byte length, bytes) |
/// | LIKE | `(c IS NOT NULL AND instr(CAST(c AS BLOB), x'00') = 0 AND c GLOB ?)` |
///
/// `lower()` without ICU (Debian's build) folds ASCII only, as `[c]` requires; text matching
/// works on `CAST(… AS BLOB)` so that it is byte-exact, unlike SQL LIKE, which folds case.
/// `coalesce(…, 0)` is there because `substr` of an empty blob is NULL, not an empty blob.
struct SQLCompiler {
    private(set) var sql = ""
    private(set) var arguments: [AttributeValue] = []

    mutating func write(_ node: CheckedNode) {
        switch node {
        case .constant(let b): sql += b ? "1" : "0"
        case .not(let n):
            sql += "NOT "
            writeGrouped(n)
        case .and(let ns): writeJoined(ns, with: " AND ", empty: "1")
        case .or(let ns): writeJoined(ns, with: " OR ", empty: "0")
        case .isNull(let c): sql += "(\(c.quoted) IS NULL)"
        case .compare(let c, let relation, let value, let folded): writeCompare(c, relation, value, folded: folded)
        case .inList(let c, let values, let includesNull, let folded):
            writeIn(c, values, includesNull: includesNull, folded: folded)
        case .text(let c, let match, let pattern, let folded): writeText(c, match, pattern, folded: folded)
        case .like(let c, let pattern, let folded): writeLike(c, pattern, folded: folded)
        }
    }

    /// Writes `node` so that it can stand as an operand of NOT, AND or OR (NOT binds tighter
    /// than both, so only AND and OR need parentheses).
    private mutating func writeGrouped(_ node: CheckedNode) {
        switch node {
        case .and, .or:
            sql += "("
            write(node)
            sql += ")"
        default:
            write(node)  // constants and leaves are self-contained
        }
    }

    private mutating func writeJoined(_ nodes: [CheckedNode], with separator: String, empty: String) {
        guard !nodes.isEmpty else {
            sql += empty
            return
        }
        for (i, n) in nodes.enumerated() {
            if i > 0 { sql += separator }
            writeGrouped(n)
        }
    }

    private mutating func bind(_ value: AttributeValue) {
        arguments.append(value)
    }

    /// The column, or its ASCII-folded text for `[c]`.
    private func operand(_ c: Column, folded: Bool) -> String {
        folded ? "lower(\(c.quoted))" : c.quoted
    }

    private mutating func writeCompare(
        _ c: Column, _ relation: CheckedNode.Relation, _ value: StoredValue, folded: Bool
    ) {
        let lhs = operand(c, folded: folded)
        switch relation {
        case .equal: sql += "(\(lhs) IS ?)"
        case .less: sql += "(\(c.quoted) IS NOT NULL AND \(lhs) < ?)"
        case .lessOrEqual: sql += "(\(c.quoted) IS NOT NULL AND \(lhs) <= ?)"
        case .greater: sql += "(\(c.quoted) IS NOT NULL AND \(lhs) > ?)"
        case .greaterOrEqual: sql += "(\(c.quoted) IS NOT NULL AND \(lhs) >= ?)"
        }
        bind(value.argument)
    }

    private mutating func writeIn(_ c: Column, _ values: [StoredValue], includesNull: Bool, folded: Bool) {
        let placeholders = Array(repeating: "?", count: values.count).joined(separator: ", ")
        let guardText = includesNull ? "\(c.quoted) IS NULL OR" : "\(c.quoted) IS NOT NULL AND"
        sql += "(\(guardText) \(operand(c, folded: folded)) IN (\(placeholders)))"
        for v in values { bind(v.argument) }
    }

    private mutating func writeText(_ c: Column, _ match: CheckedNode.TextMatch, _ pattern: [UInt8], folded: Bool) {
        let bytes = "CAST(\(operand(c, folded: folded)) AS BLOB)"
        switch match {
        case .beginsWith:
            sql += "(\(c.quoted) IS NOT NULL AND coalesce(substr(\(bytes), 1, ?) = ?, 0))"
            bind(.integer(Int64(pattern.count)))
        case .contains:
            sql += "(\(c.quoted) IS NOT NULL AND instr(\(bytes), ?) > 0)"
        case .endsWith:
            sql += "(\(c.quoted) IS NOT NULL AND coalesce(substr(\(bytes), ?) = ?, 0))"
            bind(.integer(-Int64(pattern.count)))
        }
        bind(.binary(pattern))
    }

    /// A prefix (or whole text) stays a GLOB, which SQLite matches in linear time and may answer
    /// from an index; any other pattern goes to `seam_like`, the store's function running the
    /// broker's matcher: GLOB backtracks, and a long pattern against long texts held the broker
    /// for the text's length times the pattern's on every row.
    private mutating func writeLike(_ c: Column, _ pattern: LikePattern, folded: Bool) {
        guard pattern.globIsLinear else {
            sql += "coalesce(seam_like(?, \(c.quoted), \(folded ? 1 : 0)), 0)"
            bind(.string(pattern.source))
            return
        }
        sql += "(\(c.quoted) IS NOT NULL AND instr(CAST(\(c.quoted) AS BLOB), x'00') = 0"
        sql += " AND \(operand(c, folded: folded)) GLOB ?)"
        bind(.string(pattern.glob))
    }
}
