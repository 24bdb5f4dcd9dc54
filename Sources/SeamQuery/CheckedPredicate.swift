import SeamSchema

/// A predicate bound to one entity and one set of parameter values: ready to run.
///
/// Built by checking a `ParsedPredicate` (every attribute exists, every value has a type the
/// attribute can be compared with, every parameter is given). From here it runs two ways with
/// one meaning: `matches(_:)` in memory, and `sql` as a parameterised condition for SQLite.
public struct CheckedPredicate: Sendable, CustomStringConvertible {
    /// The immutable parts, in one box: a channel index copies predicates on its hot path, and
    /// a copy should cost one retain, not one per field of the entity and the trees.
    private final class Storage: Sendable {
        let entity: Entity
        let parsed: ParsedPredicate
        let root: CheckedNode

        init(entity: Entity, parsed: ParsedPredicate, root: CheckedNode) {
            self.entity = entity
            self.parsed = parsed
            self.root = root
        }
    }

    private let storage: Storage

    /// The entity it was checked against.
    public var entity: Entity { storage.entity }
    /// The parsed form it was checked from.
    public var parsed: ParsedPredicate { storage.parsed }
    var root: CheckedNode { storage.root }

    /// Checks `parsed` against `entity`, resolving `$name`s from `parameters`.
    ///
    /// Throws `unknownAttribute`, `typeMismatch`, `operatorNotApplicable`, `invalidValue`,
    /// `missingParameter`, `parameterTypeMismatch` or `patternTooLong`, each at the offending token.
    public init(_ parsed: ParsedPredicate, entity: Entity, parameters: [String: AttributeValue] = [:])
        throws(QueryError)
    {
        let root = try TypeChecker(entity: entity, parameters: parameters).check(parsed.root)
        self.storage = Storage(entity: entity, parsed: parsed, root: root)
    }

    /// Parses and checks `source` in one step.
    public init(_ source: String, entity: Entity, parameters: [String: AttributeValue] = [:]) throws(QueryError) {
        try self.init(ParsedPredicate(source), entity: entity, parameters: parameters)
    }

    /// Parses and checks `source` against entity `entityName` of `version`.
    ///
    /// Throws `unknownEntity` (at offset 0) when the version has no such entity.
    public init(
        _ source: String, entity entityName: String, in version: ModelVersion,
        parameters: [String: AttributeValue] = [:]
    ) throws(QueryError) {
        guard let entity = version.entity(entityName) else {
            throw QueryError(
                .unknownEntity, at: 0, "model \(version.model) v\(version.version) has no entity '\(entityName)'")
        }
        try self.init(source, entity: entity, parameters: parameters)
    }

    /// The predicate that matches every row.
    public static func all(_ entity: Entity) -> CheckedPredicate {
        CheckedPredicate(entity: entity, parsed: .truePredicate, root: .constant(true))
    }

    private init(entity: Entity, parsed: ParsedPredicate, root: CheckedNode) {
        self.storage = Storage(entity: entity, parsed: parsed, root: root)
    }

    /// The attributes the predicate reads. A change that touches none of them cannot change
    /// whether a row matches.
    public var attributes: Set<String> {
        var out: Set<String> = []
        root.forEachColumn { out.insert($0.name) }
        return out
    }

    public var description: String { "\(entity.name) where \(parsed)" }
}

extension ParsedPredicate {
    static let truePredicate: ParsedPredicate = {
        do { return try ParsedPredicate("TRUEPREDICATE") } catch {
            preconditionFailure("TRUEPREDICATE must parse: \(error)")
        }
    }()
}

/// An attribute as a checked predicate uses it.
struct Column: Sendable, Hashable {
    let name: String
    let type: AttributeType

    /// The column name quoted for SQL (`"` doubled inside).
    var quoted: String {
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\""
    }

    /// The row's value for this column as SQLite would store it; `nil` for null or absent.
    @inline(__always)
    func value(in row: [String: AttributeValue]) -> StoredValue? {
        guard let v = row[name] else { return nil }
        return StoredValue(v, as: type)
    }
}

/// The checked tree. Every leaf has exactly one truth value for every row (no SQL NULL), so
/// NOT, AND and OR are plain two-valued logic on both sides.
indirect enum CheckedNode: Sendable {
    case constant(Bool)
    case not(CheckedNode)
    case and([CheckedNode])
    case or([CheckedNode])
    /// The attribute is nil.
    case isNull(Column)
    /// The attribute is not nil and stands in `relation` to the value (never null).
    case compare(Column, Relation, StoredValue, folded: Bool)
    /// The attribute is one of `values`, or nil when `includesNull`.
    case inList(Column, [StoredValue], includesNull: Bool, folded: Bool)
    /// The text begins with, contains or ends with `pattern` (non-empty bytes, folded when `folded`).
    case text(Column, TextMatch, [UInt8], folded: Bool)
    case like(Column, LikePattern, folded: Bool)

    enum Relation: Sendable {
        case equal, less, lessOrEqual, greater, greaterOrEqual

        /// Whether a `compare` result satisfies the relation.
        @inline(__always)
        func holds(_ order: Int) -> Bool {
            switch self {
            case .equal: return order == 0
            case .less: return order < 0
            case .lessOrEqual: return order <= 0
            case .greater: return order > 0
            case .greaterOrEqual: return order >= 0
            }
        }
    }

    enum TextMatch: Sendable {
        case beginsWith, contains, endsWith
    }

    func forEachColumn(_ body: (Column) -> Void) {
        switch self {
        case .constant: return
        case .not(let n): n.forEachColumn(body)
        case .and(let ns), .or(let ns): for n in ns { n.forEachColumn(body) }
        case .isNull(let c), .compare(let c, _, _, _), .inList(let c, _, _, _), .text(let c, _, _, _),
            .like(let c, _, _):
            body(c)
        }
    }
}
