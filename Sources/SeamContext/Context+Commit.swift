import SeamSchema
import SeamStore

extension Context {
    static let historySQL = """
        CREATE TABLE IF NOT EXISTS seam_history (
            sequence INTEGER NOT NULL PRIMARY KEY, author TEXT NOT NULL, time REAL NOT NULL, changes TEXT NOT NULL
        ) STRICT
        """

    /// A store's changes in the order its statements run: deletes first, so that a row may take
    /// the place of one deleted in the same save (a timer's new session where its old one was,
    /// under the unique `timerUUID`), whatever the order of the request. Nothing a delete does
    /// depends on an insert or update of the same save.
    static func deletesFirst(_ changes: [RowChange]) -> [RowChange] {
        guard changes.contains(where: { $0.kind == .delete }), changes.contains(where: { $0.kind != .delete }) else { return changes }
        return changes.filter { $0.kind == .delete } + changes.filter { $0.kind != .delete }
    }

    /// Writes a worked-out save into its stores (see the type's documentation for the promise).
    func commit(_ set: ChangeSet, work: WorkingSet) throws(ContextError) {
        // Most saves touch one store: no grouping pass for them.
        let oneStore = set.changes.allSatisfy { $0.store == set.changes[0].store }
        let byStore = oneStore ? [set.changes[0].store: set.changes] : Dictionary(grouping: set.changes, by: \.store)
        // The history's store commits first, with the intent: a crash between the two commits
        // then leaves the history whole (the intent replays rows, not history).
        let history = historyStore?.name
        let names = oneStore ? [set.changes[0].store] : byStore.keys.sorted { a, b in (a == history) != (b == history) ? a == history : a < b }
        // Never written into a file that is no longer at its path, nor into one that can only be
        // read or is still being checked.
        var replaced: [String] = []
        for name in names {
            try requireWritable(name, entity: byStore[name]?.first?.entity ?? "")
            if options.verifiesFilesBeforeWrites, fileChanged(name) { replaced.append(name) }
        }
        // In a group (`Context+Group`): a save of one file, into a file in place, joins it;
        // any other commits what the group holds first.
        if group != nil {
            if names.count == 1, replaced.isEmpty, unfinished.isEmpty {
                return try commitInGroup(set, store: names[0], changes: byStore[names[0]]!)
            }
            closeGroupForOwnTransaction()
        }
        for name in replaced { notices.append(Notice(isError: false, text: try putBack(name))) }
        var begun: [StoreHandle] = []
        var applying: RowChange?  // the change SQLite is given, so that an error names its row
        do {
            for name in names {
                let handle = try handle(name, for: byStore[name]?.first?.entity ?? "")
                try handle.runOnce(handle.saveStatements().begin)
                begun.append(handle)
            }
            for handle in begun { try write(byStore[handle.name, default: []], sequence: set.sequence, in: handle, applying: &applying) }
            try writeHistory(set)
            if names.count > 1 {
                for target in names.dropFirst() {
                    let ops = Self.deletesFirst(byStore[target, default: []]).map {
                        SaveJournal.Operation(table: $0.entity, uuid: $0.uuid, values: $0.new)
                    }
                    try SaveJournal.record(ops, sequence: set.sequence, target: target, in: begun[0].db)
                }
            }
        } catch {
            for h in begun where !h.db.isAutocommit { try? h.db.execute("ROLLBACK") }
            throw Self.mapped(error, set: set, failing: applying)
        }
        do {
            // One store: its commit may reach the disk while the owner works out what to tell
            // (`Options.defersSync`). Two: the first file, which holds the intent, is on the disk
            // before the second commits.
            let first = begun[0].db
            first.defersSync = options.defersSync && begun.count == 1
            defer { first.defersSync = false }
            try begun[0].runOnce(begun[0].saveStatements().commit)
        } catch {
            for h in begun where !h.db.isAutocommit { try? h.db.execute("ROLLBACK") }
            throw ContextError(.database(error))
        }
        if begun.count > 1 { options.betweenCommits?() }
        // The intent is on the disk before the second file commits, whatever the durability (with
        // full durability the commit flushed it already): a power cut can then leave the second
        // file behind, never ahead.
        if begun.count > 1, options.durability != .full { begun[0].db.flushWAL() }
        for h in begun.dropFirst() {
            do {
                try h.runOnce(h.saveStatements().commit)
            } catch {
                // The first file holds the intent; finish the second now, or before the next save,
                // or on the next open.
                if !h.db.isAutocommit { try? h.db.execute("ROLLBACK") }
                try finishLater(set, store: h, intentIn: begun[0].name, byStore: byStore, error: error)
            }
        }
        if names.count > 1 {
            // And the second file is on the disk before the intent goes.
            if options.durability != .full { for h in begun.dropFirst() { h.db.flushWAL() } }
            try? SaveJournal.clear(set.sequence, in: begun[0].db)
        }
        if set.sequence % 64 == 0, !syncConfigured { try? purgeHistory(olderThan: set.time - options.historyRetention) }
    }

    /// Writes one store's `changes` (deletes first) and the save's sequence number into the
    /// transaction open on `handle`; `applying` names the change SQLite is given meanwhile.
    func write(_ changes: [RowChange], sequence: Int64, in handle: StoreHandle, applying: inout RowChange?) throws(DatabaseError) {
        for change in Self.deletesFirst(changes) {
            applying = change
            try apply(change, in: handle)
        }
        applying = nil
        let s = try handle.saveStatements().setSequence
        try s.bind(SaveJournal.setSequenceArguments(sequence))
        try handle.runOnce(s)
    }

    private func finishLater(
        _ set: ChangeSet, store h: StoreHandle, intentIn first: String, byStore: [String: [RowChange]], error: DatabaseError
    ) throws(ContextError) {
        let ops = Self.deletesFirst(byStore[h.name, default: []]).map { SaveJournal.Operation(table: $0.entity, uuid: $0.uuid, values: $0.new) }
        do {
            // Within the save itself, before anyone is told of it: under its own number.
            try apply(UnfinishedSave(sequence: set.sequence, target: h.name, intentIn: first, operations: ops), to: h, numbered: set.sequence)
        } catch {
            // The first file committed this sequence number: it is taken. The save completes
            // before the next one, or at the next open; meanwhile no change set tells what the
            // first file holds, so a resume from before it must fetch afresh.
            unfinished.append(UnfinishedSave(sequence: set.sequence, target: h.name, intentIn: first, operations: ops))
            sequence = set.sequence
            ring = ChangeRing(capacity: ring.capacity, maxRows: ring.maxRows)
            resultsInvalidated = true
            throw ContextError(.database(DatabaseError(
                code: error.code, message: "the save is recorded and completes before the next save, or when the stores are next "
                    + "opened: \(error.message)", sql: error.sql, path: error.path)))
        }
    }

    /// Finishes the saves that committed in part, oldest first, before a new one is worked out.
    /// One that still cannot be finished refuses the new save, which then changes nothing: a save
    /// may not read or write the stores around a save that is not whole.
    ///
    /// Each finished takes a new sequence number, and the ring starts over: its own number was
    /// told (to its saver, and with the resyncs of the stores as they were) for the first file
    /// alone, so a resume from that number must not be answered "nothing since" or with the
    /// diffs after it; it gets a fresh result.
    public func finishUnfinished() throws(ContextError) {
        if !unfinished.isEmpty { closeGroupForOwnTransaction() }
        while let u = unfinished.first {
            guard let h = stores[u.target] else {
                throw ContextError(.storeUnavailable(store: u.target, entity: u.operations.first?.table ?? "?",
                                                     reason: "save \(u.sequence) waits to complete in it; this save changed nothing"))
            }
            let number = sequence + 1
            try lease(through: number)
            do {
                try apply(u, to: h, numbered: number)
            } catch {
                throw ContextError(.database(DatabaseError(
                    code: error.code, message: "save \(u.sequence) waits to complete in \(u.target) and still cannot: \(error.message) "
                        + "(free space on the disk, or restart seamd); this save changed nothing", sql: error.sql, path: error.path)))
            }
            unfinished.removeFirst()
            sequence = number
            ring = ChangeRing(capacity: ring.capacity, maxRows: ring.maxRows)
            resultsInvalidated = true
        }
    }

    /// Writes an unfinished save's operations into its second file, with `number` as that
    /// file's sequence number (at least the save's own: a replay at the next open then knows the
    /// file has it), puts it on the disk, and forgets the intent.
    private func apply(_ u: UnfinishedSave, to h: StoreHandle, numbered number: Int64) throws(DatabaseError) {
        do {
            try h.db.execute("BEGIN IMMEDIATE")
            try SaveJournal.apply(u.operations, sequence: number, to: h.db)
            try h.db.execute("COMMIT")
        } catch {
            if !h.db.isAutocommit { try? h.db.execute("ROLLBACK") }
            throw error
        }
        if options.durability != .full { h.db.flushWAL() }
        if let first = stores[u.intentIn] { try? SaveJournal.clear(u.sequence, in: first.db) }
    }

    /// The error of a save, naming the row of `failing` (the change SQLite refused) when known.
    static func mapped(_ error: any Error, set: ChangeSet, failing: RowChange?) -> ContextError {
        if let e = error as? ContextError { return e }
        if let e = error as? DatabaseError {
            if e.resultCode.matches(.constraint), let change = failing, change.kind == .insert,
               e.message.hasSuffix(" \(change.entity).uuid") {
                return ContextError(.duplicate(entity: change.entity, uuid: change.uuid))
            }
            if e.resultCode.matches(.constraint) {
                return ContextError(.constraint(entity: failing?.entity ?? set.changes.first?.entity ?? "?", detail: e.message))
            }
            return ContextError(.database(e))
        }
        return ContextError(.invalidValue(entity: "?", attribute: "?", reason: "\(error)"))
    }

    func apply(_ change: RowChange, in handle: StoreHandle) throws(DatabaseError) {
        let q = SchemaSQL.quote
        switch change.kind {
        case .insert:
            let keys = change.changedKeys
            let s: Statement
            if let cached = handle.insertByEntity[change.entity] {
                s = cached
                s.reset()
            } else {
                s = try handle.db.prepare("INSERT INTO \(q(change.entity)) (\(keys.map(q).joined(separator: ", "))) VALUES ("
                                          + keys.indices.map { "?\($0 + 1)" }.joined(separator: ", ") + ")")
                handle.insertByEntity[change.entity] = s
            }
            let row = change.new ?? [:]
            var order = handle.insertOrder.removeValue(forKey: change.entity) ?? IterationOrder()
            defer { handle.insertOrder[change.entity] = order }
            let bound = try order.forEach(row, in: keys) { (place, value) throws(DatabaseError) in try s.bind(value, at: Int32(place + 1)) }
            if !bound {
                for (i, k) in keys.enumerated() { try s.bind(row[k] ?? .null, at: Int32(i + 1)) }
            }
            while try s.step() {}
        case .update:
            let keys = change.changedKeys
            let s = try handle.statement("UPDATE \(q(change.entity)) SET " + keys.enumerated().map { "\(q($1)) = ?\($0 + 1)" }.joined(separator: ", ")
                                         + " WHERE \"uuid\" = ?\(keys.count + 1)")
            try s.bind(keys.map { change.new?[$0] ?? .null } + [.string(change.uuid)])
            while try s.step() {}
        case .delete:
            let s = try handle.statement("DELETE FROM \(q(change.entity)) WHERE \"uuid\" = ?1")
            try s.bind([.string(change.uuid)])
            while try s.step() {}
        }
    }
}
