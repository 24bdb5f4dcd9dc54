/// The bounds every predicate and sort text must stay within (see `Protocol/predicates.md`).
///
/// They keep parsing, checking and SQLite's own parser within fixed stack and memory, whatever a
/// client sends. Exceeding one is a `QueryError` with the position of the first offending token.
public enum QueryLimits {
    /// Longest source text, in UTF-8 bytes.
    public static let maxSourceBytes = 65_536
    /// Deepest nesting: every `(` and every prefix `NOT`/`!` opens a level.
    ///
    /// 16, not more, because SQLite 3.40's parser has a fixed stack of 100 entries and overflows
    /// at about 26 nested `… OR (…)` levels; 16 leaves room for the statement around the condition.
    public static let maxDepth = 16
    /// Most comparisons (including `TRUEPREDICATE`/`FALSEPREDICATE`) in one predicate; keeps
    /// the SQL expression tree below SQLite's limit of 1,000 levels.
    public static let maxComparisons = 500
    /// Most values in one `IN {…}` list.
    public static let maxListCount = 1_000
    /// Most values (literals and parameters) in one predicate; keeps bound arguments far below
    /// SQLite's variable limit.
    public static let maxValues = 10_000
    /// Longest `LIKE` pattern, in UTF-8 bytes after parameters are resolved (SQLite refuses GLOB
    /// patterns above 50,000 bytes; an escaped pattern can triple in size).
    public static let maxPatternBytes = 4_096
}
