import SeamSchema

/// An object in a store file that neither the model versions the file records nor Seam's own
/// bookkeeping (`seam_…`) nor SQLite (`sqlite_…`) declares: a table, index, trigger or view a
/// person or another program added. A migration carries each into the copy unchanged, or refuses
/// before it copies anything; it never drops one.
public struct ForeignObject: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case table, index, trigger, view
    }

    public var kind: Kind
    public var name: String
    /// The table it belongs to (`sqlite_schema.tbl_name`): itself for a table or a view.
    public var table: String
    /// Its `CREATE` statement as the file holds it.
    public var sql: String
    /// A table's rows when the file was read (nil for the other kinds).
    public var rows: Int64?

    public init(kind: Kind, name: String, table: String, sql: String, rows: Int64? = nil) {
        self.kind = kind
        self.name = name
        self.table = table
        self.sql = sql
        self.rows = rows
    }

    /// "table MyNotes (1 row)", "index MyNotes_x on MyNotes".
    public var summary: String {
        switch kind {
        case .table: return "table \(name) (\(rows ?? 0) row\(rows == 1 ? "" : "s"))"
        case .view: return "view \(name)"
        case .index, .trigger: return "\(kind.rawValue) \(name) on \(table)"
        }
    }

    /// Whether `sql` creates a virtual table, whose rows live in tables of the module's own.
    var isVirtualTable: Bool { kind == .table && sql.uppercased().hasPrefix("CREATE VIRTUAL TABLE") }
}

/// Finding foreign objects in a file, and deciding whether a migration can carry them.
public enum ForeignObjects {
    /// What a file's `sqlite_schema` holds beyond `declared` (the names of the tables and indexes
    /// its model versions lay out), in the order they were made; and the `CREATE TABLE`
    /// statements of Seam's own bookkeeping tables (which foreign triggers may name).
    public static func read(_ db: Database, declared: Set<String>) throws(DatabaseError) -> (foreign: [ForeignObject], bookkeeping: [String]) {
        let rows = try db.rows("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid",
                               types: [.string, .string, .string, .string])
        var foreign: [ForeignObject] = []
        var bookkeeping: [String] = []
        var shadowPrefixes: [String] = []
        for r in rows {
            guard let type = r[0].stringValue, let name = r[1].stringValue, let table = r[2].stringValue else { continue }
            let sql = r[3].stringValue ?? ""
            if name.hasPrefix("sqlite_") { continue }
            if name.hasPrefix("seam_") {
                if type == "table", !sql.isEmpty { bookkeeping.append(sql) }
                continue
            }
            if declared.contains(name) { continue }
            // A virtual table's own tables (`Notes_data`, `Notes_idx`, …) come with it.
            if type == "table", shadowPrefixes.contains(where: { name.hasPrefix($0) }) { continue }
            guard let kind = ForeignObject.Kind(rawValue: type), !sql.isEmpty else { continue }
            var object = ForeignObject(kind: kind, name: name, table: table, sql: sql)
            if kind == .table {
                object.rows = try db.scalar("SELECT count(*) FROM \(SchemaSQL.quote(name))").integerValue
                if object.isVirtualTable { shadowPrefixes.append(name + "_") }
            }
            foreign.append(object)
        }
        return (foreign, bookkeeping)
    }

    /// An object a migration cannot carry, and why (SQLite's words).
    public struct CarryProblem: Error, Sendable {
        public var object: ForeignObject
        public var detail: String
    }

    /// Checks that `objects` fit a copy laid out by `layout` (the copy's tables and indexes, then
    /// Seam's bookkeeping tables), in an in-memory database: tables first, then the rest in the
    /// order the file made them, then every view and trigger resolved against the whole (a table
    /// rename makes SQLite check each). Throws for the first that does not fit.
    public static func check(carrying objects: [ForeignObject], into layout: [String], bookkeeping: [String]) throws(CarryProblem) {
        guard !objects.isEmpty else { return }
        if let virtual = objects.first(where: \.isVirtualTable) {
            throw CarryProblem(object: virtual, detail: "a virtual table's rows live in its module's own tables, which a migration does not copy")
        }
        let scratch = try made(objects, after: layout + bookkeeping, what: "the new layout")
        do {
            try scratch.execute("CREATE TABLE seam_resolve_check (x)")
            try scratch.execute("ALTER TABLE seam_resolve_check RENAME TO seam_resolve_checked")
        } catch {
            let blamed = objects.first { error.message.contains(" \($0.name):") } ?? objects.first { $0.kind == .view || $0.kind == .trigger }
            throw CarryProblem(object: blamed ?? objects[0], detail: error.message)
        }
    }

    /// The objects as a byte copy changed in place by `statements` will hold them: SQLite
    /// rewrites what names a renamed column, and drops the indexes and triggers of a dropped
    /// table (such an object cannot be carried: thrown). Worked out in an in-memory database laid
    /// out as the original (`sourceLayout`).
    public static func afterAltering(_ objects: [ForeignObject], with statements: [String], sourceLayout: [String],
                                     bookkeeping: [String]) throws(CarryProblem) -> [ForeignObject] {
        guard !objects.isEmpty else { return [] }
        let scratch = try made(objects, after: sourceLayout + bookkeeping, what: "the old layout")
        for sql in statements {
            do { try scratch.execute(sql) } catch {
                let blamed = objects.first { error.message.contains(" \($0.name):") }
                throw CarryProblem(object: blamed ?? objects[0], detail: "\(sql): \(error.message)")
            }
        }
        var out: [ForeignObject] = []
        for o in objects {
            let now: String?
            do { now = try scratch.scalar("SELECT sql FROM sqlite_schema WHERE name = ?", [.string(o.name)]).stringValue } catch {
                throw CarryProblem(object: o, detail: error.message)
            }
            guard let now else { throw CarryProblem(object: o, detail: "its table \(o.table) is dropped by this migration") }
            var changed = o
            changed.sql = now
            out.append(changed)
        }
        return out
    }

    /// An in-memory database made by `layout`, then `objects` (tables first): the first object
    /// SQLite refuses is thrown with its words.
    private static func made(_ objects: [ForeignObject], after layout: [String], what: String) throws(CarryProblem) -> Database {
        let scratch: Database
        do {
            scratch = try Database(path: ":memory:")
            for sql in layout { try scratch.execute(sql) }
        } catch {
            throw CarryProblem(object: objects[0], detail: "\(what) could not be made to check it (\(error.message))")
        }
        for o in ordered(objects) {
            do { try scratch.execute(o.sql) } catch { throw CarryProblem(object: o, detail: error.message) }
        }
        return scratch
    }

    /// Tables first (an index or trigger needs its table), then the rest in the file's order.
    static func ordered(_ objects: [ForeignObject]) -> [ForeignObject] {
        objects.filter { $0.kind == .table } + objects.filter { $0.kind != .table }
    }
}
