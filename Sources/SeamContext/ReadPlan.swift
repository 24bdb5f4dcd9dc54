import SeamQuery
import SeamSchema
import SeamStore

/// A read worked out on the context's thread (routed, checked, compiled to SQL) and run on
/// another, on a read-only connection of its own (`run`): how the broker keeps its one thread
/// free of a query's cost. Pure data.
public struct ReadPlan: Sendable {
    public enum Kind: Sendable, Equatable {
        case rows
        case count
    }

    public var kind: Kind
    /// The store it reads, its file, and the context's attachment of it (`Context.attachment`):
    /// a connection opened on an older attachment is opened again first.
    public var store: String
    public var path: String
    public var attachment: Int
    public var entity: String
    public var sql: String
    public var arguments: [AttributeValue]
    /// The attributes selected, in the order the SQL returns them (rows).
    public var attributes: [Attribute]
    /// The context's last save when the plan was made: the result reflects it at least.
    public var sequence: Int64

    /// What a plan read: the rows (or the count), and the save the result reflects exactly.
    public struct Result: Sendable {
        public var rows: [[AttributeValue]] = []
        public var count = 0
        public var sequence: Int64
    }

    /// Runs the plan in one read transaction on `db` (a read-only connection to `path`). The
    /// store's own sequence number is read in the same transaction: a save after the plan was made
    /// that reached the store is in the result, and raises its sequence to that save's; none
    /// reached it, and the result is the store as of the plan's `sequence`.
    public func run(on db: Database) throws(DatabaseError) -> Result {
        try db.execute("BEGIN")
        defer { if !db.isAutocommit { try? db.execute("COMMIT") } }
        let stored = try SaveJournal.sequence(in: db)
        var result = Result(sequence: max(stored, sequence))
        let statement = try db.prepare(sql)
        try statement.bind(arguments)
        switch kind {
        case .count:
            result.count = try statement.step() ? Int(statement.column(0, as: .integer).integerValue ?? 0) : 0
        case .rows:
            while try statement.step() {
                var values: [AttributeValue] = []
                values.reserveCapacity(attributes.count)
                for (i, a) in attributes.enumerated() { values.append(statement.column(i, as: a.type)) }
                result.rows.append(values)
            }
        }
        return result
    }
}

extension Context {
    /// The plan of a fetch (`kind: .rows`) or a count of `request`, for a reader thread; refuses
    /// what `fetch` and `count` would refuse (an unknown entity or attribute, a query that does
    /// not check, a closed store).
    public func readPlan(_ request: FetchRequest, kind: ReadPlan.Kind) throws(ContextError) -> ReadPlan {
        guard let directory else { throw ContextError(.snapshotUnsupported) }
        let r = try route(request.entity)
        var attributes: [Attribute] = []
        var compiled: CompiledSQL
        switch kind {
        case .rows:
            var wanted = request.attributes ?? r.entity.attributes.map(\.name)
            if !wanted.contains(Entity.identity) { wanted.insert(Entity.identity, at: 0) }
            for name in wanted {
                guard let a = r.entity.attribute(name) else { throw ContextError(.unknownAttribute(entity: r.entity.name, attribute: name)) }
                attributes.append(a)
            }
            compiled = try compile(request, entity: r.entity, columns: wanted)
        case .count:
            compiled = try compile(request, entity: r.entity, columns: [Entity.identity])
            compiled.sql = "SELECT count(*) FROM (\(compiled.sql))"
        }
        return ReadPlan(kind: kind, store: r.store, path: StoreLayout(directory: directory).store(r.store),
                        attachment: attachments[r.store] ?? 0, entity: r.entity.name, sql: compiled.sql, arguments: compiled.arguments,
                        attributes: attributes, sequence: sequence)
    }

    /// How often store `name` has been attached (opened) by this context: a reader's connection
    /// from an earlier attachment reads a file the store no longer is.
    public func attachment(_ name: String) -> Int { attachments[name] ?? 0 }
}
