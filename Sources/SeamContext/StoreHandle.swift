import SeamStore

/// One open store file (or the in-memory store) and its cache of prepared statements.
final class StoreHandle {
    let name: String
    let db: Database
    private var statements: [String: Statement] = [:]
    /// Per entity: the statement that reads one row by uuid (the hottest path).
    var rowByUUID: [String: Statement] = [:]
    /// Per entity: the statement that inserts a whole row (columns in attribute order).
    var insertByEntity: [String: Statement] = [:]
    /// Per entity: the order its inserted rows' values come in (`IterationOrder`), for binding them.
    var insertOrder: [String: IterationOrder] = [:]
    /// The statements every save runs, prepared on the first.
    private var saving: SaveStatements?

    struct SaveStatements {
        let begin: Statement
        let commit: Statement
        let setSequence: Statement
    }

    init(name: String, db: Database) {
        self.name = name
        self.db = db
    }

    /// Finalises every cached statement, so that closing the connection really closes it.
    func releaseStatements() {
        statements.removeAll()
        rowByUUID.removeAll()
        insertByEntity.removeAll()
        insertOrder.removeAll()
        saving = nil
    }

    /// BEGIN IMMEDIATE, COMMIT and the sequence's upsert, prepared once.
    func saveStatements() throws(DatabaseError) -> SaveStatements {
        if let saving { return saving }
        let made = SaveStatements(begin: try db.prepare("BEGIN IMMEDIATE"), commit: try db.prepare("COMMIT"),
                                  setSequence: try db.prepare(SaveJournal.setSequenceSQL))
        saving = made
        return made
    }

    /// Runs a prepared statement to its end and resets it.
    func runOnce(_ s: Statement) throws(DatabaseError) {
        defer { s.reset() }
        while try s.step() {}
    }

    /// A prepared statement for `sql`, reused across calls (bindings are reset by `bind`).
    func statement(_ sql: String) throws(DatabaseError) -> Statement {
        if let s = statements[sql] {
            s.reset()
            return s
        }
        let s = try db.prepare(sql)
        if statements.count > 512 { statements.removeAll() }
        statements[sql] = s
        return s
    }
}
