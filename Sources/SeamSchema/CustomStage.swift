/// A row as a custom migration stage sees it: attribute names to typed values.
public struct RowSnapshot: Sendable, Hashable {
    public var values: [String: AttributeValue]

    public init(_ values: [String: AttributeValue] = [:]) { self.values = values }

    /// The value of `attribute`, `.null` when absent.
    public subscript(attribute: String) -> AttributeValue {
        get { values[attribute] ?? .null }
        set { values[attribute] = newValue }
    }
}

/// Code that runs during a migration, once per row of one entity, after the inferred mapping.
///
/// A stage comes in one of two forms:
/// - **SQL**: for each attribute it sets, an SQL expression over the row the inferred mapping
///   produced (columns by their names in the version that declares the stage). It runs inside
///   the copy's `INSERT … SELECT`, so a million rows cost no more than the copy itself.
/// - **Swift**: a closure on typed snapshots. `old` is the row as the store held it, under the
///   attribute names of the store's version; `new` is the mapped row, under the names of the
///   version that declares the stage, which the closure may change. Rows then pass through
///   Swift one by one: use it for what SQL cannot say.
///
/// A stage is declared on the version that introduces it and runs whenever a store crosses that
/// version, however many versions it skips.
public struct CustomStage: Sendable {
    public typealias Transform = @Sendable (_ old: RowSnapshot, _ new: inout RowSnapshot) throws -> Void

    public enum Body: Sendable {
        case sql([String: String])
        case swift(Transform)
        /// One statement over the new file's tables, by their current names, run once every
        /// row is copied and before the indexes and unique constraints are built: for what no
        /// single row can decide (rows that a new unique constraint finds twice).
        case afterCopy(String)
    }

    public var name: String
    /// The entity (by its name in the version that declares the stage) whose rows the stage sees.
    public var entity: String
    public var body: Body

    /// A Swift stage.
    public init(_ name: String, entity: String, transform: @escaping Transform) {
        self.name = name
        self.entity = entity
        self.body = .swift(transform)
    }

    /// An SQL stage: attribute → expression over the mapped row's columns.
    public init(_ name: String, entity: String, sql: [String: String]) {
        self.name = name
        self.entity = entity
        self.body = .sql(sql)
    }

    /// A stage run once over the whole copied table (see `Body.afterCopy`).
    public init(_ name: String, entity: String, afterCopy sql: String) {
        self.name = name
        self.entity = entity
        self.body = .afterCopy(sql)
    }

    /// The Swift closure, when this is a Swift stage.
    public var transform: Transform? { if case .swift(let t) = body { return t } else { return nil } }
    /// The SQL assignments, when this is an SQL stage.
    public var assignments: [String: String]? { if case .sql(let a) = body { return a } else { return nil } }
    /// The statement, when this is a stage run after the copy.
    public var afterCopySQL: String? { if case .afterCopy(let sql) = body { return sql } else { return nil } }
}

/// The error a custom stage throws to stop a migration with a reason.
public struct CustomStageError: Error, Sendable, CustomStringConvertible {
    public var stage: String
    public var message: String
    public init(stage: String, message: String) {
        self.stage = stage
        self.message = message
    }
    public var description: String { "custom stage \(stage): \(message)" }
}
