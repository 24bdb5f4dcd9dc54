import SeamStore

/// Group commit: the saves of a group share one transaction per store file, committed together
/// by `endGroup` — one set of WAL frames (each page written once, however many saves changed it)
/// and, at full durability, one sync — while each save keeps its own sequence number, change set
/// and history entry, and fails alone (a SAVEPOINT around each).
///
/// Between `beginGroup` and `endGroup` a save returns applied but not committed: the owner may
/// work out what to tell of it (reads on this context's connections see it), but must tell no
/// one until `endGroup` has returned — and, if it throws, must not tell at all: none of the
/// group's saves is then certain to be there (the ones in a file whose commit failed were rolled
/// back), the sequence number stays past them, the ring starts over and `resultsInvalidated` is
/// set, as after a save that committed in part.
///
/// A save the group cannot take — across two files, or into a file that must first be put back
/// or finished — commits what the group holds first, then goes its own way; so does anything
/// else that writes.
extension Context {
    /// What the open group holds.
    struct Group {
        /// The stores with the group's transaction open, in the order they began.
        var open: [String] = []
        /// Whether a history purge came due during the group (run after it commits).
        var purgeDue = false
        /// Why committing part of the group before its end failed; told by `endGroup`.
        var failure: ContextError?
        /// Saves applied in it.
        var saves = 0
    }

    /// Starts a group (nothing when one is open).
    public func beginGroup() {
        if group == nil { group = Group() }
    }

    /// Whether saves have been applied that are not yet committed: nothing about them may be told.
    public var groupHoldsSaves: Bool { (group?.saves ?? 0) > 0 }

    /// Commits what the group holds and ends it. See the type's documentation for a failure.
    public func endGroup() throws(ContextError) {
        defer { group = nil }
        try commitGroup()
    }

    /// Commits the group's open transactions, leaving the group open (empty) for the saves after.
    public func commitGroup() throws(ContextError) {
        guard var g = group else { return }
        group = Group()
        var failure = g.failure
        for name in g.open {
            guard let handle = stores[name] else { continue }
            if failure != nil {
                if !handle.db.isAutocommit { try? handle.db.execute("ROLLBACK") }
                continue
            }
            do {
                handle.db.defersSync = options.defersSync
                defer { handle.db.defersSync = false }
                try handle.runOnce(handle.saveStatements().commit)
            } catch {
                if !handle.db.isAutocommit { try? handle.db.execute("ROLLBACK") }
                failure = ContextError(.database(DatabaseError(
                    code: error.code, message: "\(g.saves) save(s) committed together could not be: \(error.message)",
                    sql: error.sql, path: error.path)))
            }
        }
        g.open = []
        if let failure {
            ring = ChangeRing(capacity: ring.capacity, maxRows: ring.maxRows)
            resultsInvalidated = true
            throw failure
        }
        if g.purgeDue, !syncConfigured { try? purgeHistory(olderThan: Self.now() - options.historyRetention) }
    }

    /// Before a save the group cannot take: commits what it holds. A failure is kept for
    /// `endGroup` to tell (the save itself goes on: it is not one of the group's).
    func closeGroupForOwnTransaction() {
        guard group != nil else { return }
        do { try commitGroup() } catch { group?.failure = error }
    }

    /// Applies a save of one store inside the group's transaction on it, in a SAVEPOINT of its
    /// own: a save that fails is undone alone.
    func commitInGroup(_ set: ChangeSet, store name: String, changes: [RowChange]) throws(ContextError) {
        guard let handle = stores[name] else { throw ContextError(.unknownEntity(changes.first?.entity ?? "?")) }
        var applying: RowChange?
        do {
            if !(group?.open.contains(name) ?? false) {
                try handle.runOnce(handle.saveStatements().begin)
                group?.open.append(name)
            }
            try handle.runOnce(handle.statement("SAVEPOINT seam_save"))
            do {
                try write(changes, sequence: set.sequence, in: handle, applying: &applying)
                try writeHistory(set)
                try handle.runOnce(handle.statement("RELEASE seam_save"))
            } catch {
                if handle.db.isAutocommit {
                    // SQLite ended the transaction itself (a full disk, an I/O error): the
                    // group's earlier saves in this file went with it.
                    let undone = ContextError(.database(DatabaseError(
                        code: error.code, message: "the saves committed together with this one were undone by SQLite: \(error.message)",
                        sql: error.sql, path: error.path)))
                    if var g = group {
                        g.open.removeAll { $0 == name }
                        g.failure = g.failure ?? undone
                        group = g
                    }
                } else {
                    try? handle.runOnce(handle.statement("ROLLBACK TO seam_save"))
                    try? handle.runOnce(handle.statement("RELEASE seam_save"))
                }
                throw error
            }
        } catch {
            throw Self.mapped(error, set: set, failing: applying)
        }
        group?.saves += 1
        if set.sequence % 64 == 0 { group?.purgeDue = true }
    }
}
