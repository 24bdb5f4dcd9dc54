import SeamSchema

/// A predicate parsed from its text: syntax checked, names and types not yet.
///
/// Parse once, then check against an entity with each set of parameters. Parsing is pure and
/// bounded by `QueryLimits`; every failure is a `QueryError` with the byte offset of the problem.
public struct ParsedPredicate: Sendable, Hashable, CustomStringConvertible {
    /// The text as given.
    public let source: String
    public let root: PredicateNode

    /// Parses `source`.
    public init(_ source: String) throws(QueryError) {
        self.source = source
        self.root = try Parser.parse(Array(source.utf8))
    }

    /// Parses UTF-8 bytes as they arrive from a client; invalid UTF-8 is an `invalidUTF8` error.
    public init<Bytes: Collection>(utf8 bytes: Bytes) throws(QueryError) where Bytes.Element == UInt8 {
        let array = Array(bytes)
        self.root = try Parser.parse(array)
        self.source = String(decoding: array, as: UTF8.self)
    }

    /// Canonical text of the predicate; parsing it gives the same tree.
    public var description: String { root.description }

    /// The names of the parameters the predicate uses, each once, in order of first use.
    public var parameterNames: [String] {
        var seen: Set<String> = []
        var out: [String] = []
        root.forEachValue { v in
            if case .parameter(let name) = v.kind, seen.insert(name).inserted { out.append(name) }
        }
        return out
    }

    /// Binds the predicate to `entity` and `parameters`.
    public func check(against entity: Entity, parameters: [String: AttributeValue] = [:]) throws(QueryError)
        -> CheckedPredicate
    {
        try CheckedPredicate(self, entity: entity, parameters: parameters)
    }
}

extension PredicateNode {
    /// Calls `body` with every value in source order.
    func forEachValue(_ body: (Value) -> Void) {
        switch self {
        case .constant: return
        case .not(let p, _): p.forEachValue(body)
        case .and(let ps), .or(let ps): for p in ps { p.forEachValue(body) }
        case .comparison(let c):
            switch c.operand {
            case .value(let v): body(v)
            case .list(let vs, _): vs.forEach(body)
            case .range(let lo, let hi, _):
                body(lo)
                body(hi)
            }
        }
    }
}
