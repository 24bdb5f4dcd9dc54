import SeamQuery
import SeamSchema
import SeamStore
import SeamSystem

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
    /// The file the store had open when the plan was made: a reader opening a connection finds
    /// this file at `path`, or the path names something else for now (a file removed or
    /// replaced under seamd, not yet put back) and the read waits for that.
    public var file: FileSystem.Identity?
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

/// Where a read of one entity goes — its definition as served, its store's file and attachment,
/// the context's last save — worked out on the context's thread, where it is cheap (a route).
/// Planning the read (`plan`: parsing the predicate, checking it, compiling it to SQL) is pure,
/// and runs wherever the read does.
public struct ReadTarget: Sendable {
    public var entity: Entity
    public var store: String
    public var path: String
    public var attachment: Int
    public var file: FileSystem.Identity?
    public var sequence: Int64

    /// The plan of a fetch (`kind: .rows`) or a count of `request`, and its predicate checked:
    /// refuses what `fetch` and `count` would refuse (an unknown attribute, a query that does not
    /// check).
    public func plan(_ request: FetchRequest, kind: ReadPlan.Kind) throws(ContextError) -> (plan: ReadPlan, predicate: CheckedPredicate?) {
        var attributes: [Attribute] = []
        let columns: [String]
        switch kind {
        case .rows:
            var wanted = request.attributes ?? entity.attributes.map(\.name)
            if !wanted.contains(Entity.identity) { wanted.insert(Entity.identity, at: 0) }
            for name in wanted {
                guard let a = entity.attribute(name) else { throw ContextError(.unknownAttribute(entity: entity.name, attribute: name)) }
                attributes.append(a)
            }
            columns = wanted
        case .count:
            columns = [Entity.identity]
        }
        var (compiled, predicate) = try Context.compile(request, entity: entity, columns: columns) { text throws(QueryError) in
            try ParsedPredicate(text)
        }
        if kind == .count { compiled.sql = "SELECT count(*) FROM (\(compiled.sql))" }
        let plan = ReadPlan(kind: kind, store: store, path: path, attachment: attachment, file: file, entity: entity.name, sql: compiled.sql,
                            arguments: compiled.arguments, attributes: attributes, sequence: sequence)
        return (plan, predicate)
    }
}

extension Context {
    /// Where a read of `entity` goes (its store open); refuses an unknown entity or a closed store.
    public func readTarget(_ entity: String) throws(ContextError) -> ReadTarget {
        guard let directory else { throw ContextError(.snapshotUnsupported) }
        let r = try route(entity)
        return ReadTarget(entity: r.entity, store: r.store, path: StoreLayout(directory: directory).store(r.store),
                          attachment: attachments[r.store] ?? 0, file: identities[r.store], sequence: sequence)
    }

    /// The plan of a fetch (`kind: .rows`) or a count of `request`, for a reader thread.
    public func readPlan(_ request: FetchRequest, kind: ReadPlan.Kind) throws(ContextError) -> ReadPlan {
        try readTarget(request.entity).plan(request, kind: kind).plan
    }

    /// How often store `name` has been attached (opened) by this context: a reader's connection
    /// from an earlier attachment reads a file the store no longer is.
    public func attachment(_ name: String) -> Int { attachments[name] ?? 0 }
}
