/// A span of a predicate's source text, in UTF-8 byte offsets: `start` included, `end` excluded.
///
/// Offsets count bytes, not characters, so that clients in any language can point at the same place.
public struct SourceRange: Sendable, Hashable, CustomStringConvertible {
    public var start: Int
    public var end: Int

    public init(_ start: Int, _ end: Int) {
        self.start = start
        self.end = end
    }

    /// The smallest range covering both.
    func union(_ other: SourceRange) -> SourceRange {
        SourceRange(min(start, other.start), max(end, other.end))
    }

    public var description: String { "\(start)..<\(end)" }
}
