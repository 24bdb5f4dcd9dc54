/// What a checked predicate costs to evaluate on one row, in units of about one comparison of a
/// short value: the bound seamd puts on a query before it runs it (`QueryTooExpensive`), and on
/// a subscription before it matches it against every commit. Pure.
///
/// - a comparison with one value, or a nil test: 1;
/// - `IN`: 1, and one more for every 16 values;
/// - `BEGINSWITH`, `CONTAINS`, `ENDSWITH`: 2, and one more for every 16 bytes of the text sought;
/// - `LIKE`: 2, one more for every 8 bytes of the pattern, 8 for each `*` and 2 for each `?`
///   (a wildcard is where matching searches);
/// - `AND`, `OR`, `NOT`: the sum of their operands.
///
/// So `timerUUID == $t AND state IN {"running", "paused"}` costs 3; 500 patterns like
/// `*<60 bytes with ?>*` joined by `OR` cost about 17,000.
public enum PredicateCost {
    public static func perRow(_ predicate: CheckedPredicate) -> Int { cost(predicate.root) }

    static func cost(_ node: CheckedNode) -> Int {
        switch node {
        case .constant: return 0
        case .not(let n): return cost(n)
        case .and(let ns), .or(let ns): return ns.reduce(0) { $0 + cost($1) }
        case .isNull, .compare: return 1
        case .inList(_, let values, _, _): return 1 + values.count / 16
        case .text(_, _, let bytes, _): return 2 + bytes.count / 16
        case .like(_, let pattern, _):
            var total = 2
            for piece in pattern.pieces {
                switch piece {
                case .literal(let bytes): total += bytes.count / 8
                case .one: total += 2
                case .any: total += 8
                }
            }
            return total
        }
    }
}
