import SeamSchema

extension CheckedPredicate {
    /// Whether `row` (attribute name → value) matches, with exactly the result SQLite gives for
    /// `sql` on the same row.
    ///
    /// An attribute missing from `row` counts as nil. Values are read as the store writes them
    /// (see `StoredValue.init(_:as:)`). Cost: one dictionary lookup per comparison visited;
    /// AND and OR stop at the first operand that decides.
    public func matches(_ row: [String: AttributeValue]) -> Bool {
        Evaluator.evaluate(root, row)
    }
}

/// The in-memory evaluator: a direct reading of `CheckedNode`'s two-valued semantics.
enum Evaluator {
    static func evaluate(_ node: CheckedNode, _ row: [String: AttributeValue]) -> Bool {
        switch node {
        case .constant(let b):
            return b
        case .not(let n):
            return !evaluate(n, row)
        case .and(let ns):
            for n in ns where !evaluate(n, row) { return false }
            return true
        case .or(let ns):
            for n in ns where evaluate(n, row) { return true }
            return false
        case .isNull(let c):
            return c.value(in: row) == nil
        case .compare(let c, let relation, let operand, let folded):
            guard let value = c.value(in: row) else { return false }
            return relation.holds(StoredValue.compare(value, operand, folded: folded))
        case .inList(let c, let values, let includesNull, let folded):
            guard let value = c.value(in: row) else { return includesNull }
            return values.contains { StoredValue.equal(value, $0, folded: folded) }
        case .text(let c, let match, let pattern, let folded):
            guard case .text(let text)? = c.value(in: row) else { return false }
            return textMatches(text, match, pattern, folded: folded)
        case .like(let c, let pattern, let folded):
            guard case .text(var text)? = c.value(in: row) else { return false }
            return text.withUTF8 { pattern.matches($0, folded: folded) }
        }
    }

    /// BEGINSWITH, CONTAINS and ENDSWITH on the UTF-8 bytes (ASCII-folded when `folded`).
    static func textMatches(_ text: String, _ match: CheckedNode.TextMatch, _ pattern: [UInt8], folded: Bool) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard bytes.count >= pattern.count else { return false }
            switch match {
            case .beginsWith:
                return LikePattern.hasPrefix(bytes, at: 0, pattern, folded: folded)
            case .endsWith:
                return LikePattern.hasPrefix(bytes, at: bytes.count - pattern.count, pattern, folded: folded)
            case .contains:
                // Knuth–Morris–Pratt: linear in the text and the pattern. Trying each start in
                // turn cost text × pattern (a 20 KB pattern in a 40 KB note held the broker's
                // thread for over a minute, on every save of the entity).
                if pattern.isEmpty { return true }
                return LikePattern.find(LikePattern.Literal(pattern), in: bytes, from: 0, before: bytes.count, folded: folded) != nil
            }
        }
    }
}
