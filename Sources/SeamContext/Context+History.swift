import SeamSchema
import SeamStore

extension Context {
    /// The store that keeps history: the one holding the history configuration's entities.
    var historyStore: StoreHandle? {
        if let h = stores[options.historyConfiguration] { return h }
        return stores[Configuration.defaultName]
    }

    /// Appends the history configuration's part of `set` to the persistent history.
    func writeHistory(_ set: ChangeSet) throws(DatabaseError) {
        guard recordsHistory(by: set.author) else { return }
        let changes = set.changes.filter { configuration(of: $0.entity) == options.historyConfiguration }
        guard !changes.isEmpty else { return }
        try writeHistory(set, text: historyText.text(of: changes))
    }

    /// Whether the history records saves by `author`.
    func recordsHistory(by author: String) -> Bool { !options.historyIgnoresAuthors.contains(author) }

    /// Writes `set`'s history entry with its changes already written as `text` (`HistoryText`).
    func writeHistory(_ set: ChangeSet, text: String) throws(DatabaseError) {
        guard let h = historyStore else { return }
        try Self.writeHistory(set, text: text, into: h)
    }

    /// Writes `set`'s history entry into `h`, on whichever thread holds `h` now.
    static func writeHistory(_ set: ChangeSet, text: String, into h: StoreHandle) throws(DatabaseError) {
        // Prepared once per store, like the insert: parsing it on every save cost more than the insert.
        let create = try h.statement(Self.historySQL)
        while try create.step() {}
        let s = try h.statement("INSERT INTO seam_history (sequence, author, time, changes) VALUES (?1, ?2, ?3, ?4)")
        try s.bind([.integer(set.sequence), .string(set.author), .double(set.time), .string(text)])
        while try s.step() {}
    }

    /// The persistent history after sequence number `token`, oldest first (at most `limit`).
    /// Holds only changes to the history configuration (what syncs).
    public func history(since token: Int64, limit: Int = 1000) throws(ContextError) -> [ChangeSet] {
        guard let h = historyStore else { return [] }
        do {
            guard try h.db.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'seam_history'").integerValue == 1 else {
                return []
            }
            return try h.db.rows("SELECT sequence, author, time, changes FROM seam_history WHERE sequence > ? ORDER BY sequence LIMIT ?",
                                 [.integer(token), .integer(Int64(limit))], types: [.integer, .string, .double, .string])
                .map { r in
                    let changes = (try? JSONText.parse(r[3].stringValue ?? "[]"))?.arrayValue ?? []
                    return ChangeSet(sequence: r[0].integerValue ?? 0, author: r[1].stringValue ?? "", time: r[2].doubleValue ?? 0,
                                     changes: changes.compactMap { RowCoding.decodeChange($0, schema: schema) })
                }
        } catch {
            throw ContextError(.database(error))
        }
    }

    /// Forgets history up to and including sequence number `token` (what sync has exported).
    public func purgeHistory(through token: Int64) throws(ContextError) {
        try purge("DELETE FROM seam_history WHERE sequence <= ?", [.integer(token)])
    }

    /// Forgets history recorded before `time` (Unix seconds). Runs on its own every 64 saves when
    /// no sync is configured, with the retention period of `Options`.
    ///
    /// History is appended in sequence order, each entry with its save's time, so the entries to
    /// forget are the oldest ones: the purge walks from the oldest (the primary key's order) to
    /// the first entry recorded at `time` or later, and deletes what came before — work in
    /// proportion to what it forgets, where `WHERE time < ?` read the whole table (megabytes,
    /// milliseconds on the saving thread, every 64 saves). An entry dated earlier than one
    /// before it (the clock was set back) goes with the entries around it; one dated more than a
    /// day ahead of now (the clock ran ahead) does not stop the walk, or it would keep every
    /// later entry until that date.
    public func purgeHistory(olderThan time: Double) throws(ContextError) {
        try purge("""
            DELETE FROM seam_history WHERE sequence < coalesce(
                (SELECT sequence FROM seam_history WHERE time >= ?1 AND time <= ?2 ORDER BY sequence LIMIT 1),
                (SELECT max(sequence) + 1 FROM seam_history))
            """, [.double(time), .double(Self.now() + 86_400)])
    }

    /// Runs a purge of the history, and records how far it reached (`historyPurgedThrough`, in
    /// the store's `seam_store`), in the same transaction.
    private func purge(_ sql: String, _ arguments: [AttributeValue]) throws(ContextError) {
        guard let h = historyStore else { return }
        do {
            guard try h.db.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'seam_history'").integerValue == 1 else { return }
            try h.db.transaction {
                let gone = try h.db.rows(sql + " RETURNING sequence", arguments, types: [.integer]).compactMap { $0[0].integerValue }
                guard let last = gone.max() else { return }
                try Self.raiseHistoryForgotten(to: last, in: h.db)
            }
        } catch let e as DatabaseError {
            throw ContextError(.database(e))
        } catch {
            throw ContextError(.database(DatabaseError(code: 1, message: "\(error)", path: h.db.path)))
        }
    }

    /// Raises `historyPurgedThrough` to `number` (never lowers it): a conditional save from
    /// before it is refused. Nothing when the history's store is not open (a jump is recorded
    /// again when it opens).
    func raiseHistoryForgotten(to number: Int64) throws(ContextError) {
        guard let h = historyStore else { return }
        do { try Self.raiseHistoryForgotten(to: number, in: h.db) } catch { throw ContextError(.database(error)) }
    }

    /// Compared as numbers: the value is kept as text, and SQLite ranks any text above any
    /// integer, so `max(value, ?)` on text would take the new value even when it is lower.
    private static func raiseHistoryForgotten(to number: Int64, in db: Database) throws(DatabaseError) {
        try db.run("""
            INSERT INTO seam_store(key, value) VALUES ('historyPurgedThrough', ?1)
            ON CONFLICT(key) DO UPDATE SET value = CAST(max(CAST(value AS INTEGER), CAST(?1 AS INTEGER)) AS TEXT)
            """, [.string(String(number))])
    }

    /// The last sequence number whose history a purge forgot (0: none).
    func historyPurgedThrough() throws(ContextError) -> Int64 {
        guard let h = historyStore else { return 0 }
        do {
            let value = try h.db.scalar("SELECT value FROM seam_store WHERE key = 'historyPurgedThrough'")
            return value.stringValue.flatMap { Int64($0) } ?? value.integerValue ?? 0
        } catch {
            throw ContextError(.database(error))
        }
    }

    /// The change sets after `since`, from the in-memory ring; nil when the ring does not reach
    /// back that far (it starts empty when the stores are opened) or `since` is ahead of the
    /// stores: fetch afresh instead.
    public func changes(since: Int64) -> [ChangeSet]? {
        if since == sequence { return [] }
        guard since < sequence, let sets = ring.since(since), sets.first?.sequence == since + 1,
              sets.last?.sequence == sequence else { return nil }
        return sets
    }
}
