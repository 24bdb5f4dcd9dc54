import SeamSchema
import SeamStore
import SeamSystem

/// A save written in steps (issue: one client cannot take the broker): a big save of one store
/// is staged and written a few rows at a time inside one transaction on that store, so that
/// its owner's loop can serve others between the steps — reads, and saves into the other store.
/// It stays one save: one sequence number, taken at its last step (saves into the other store
/// committed meanwhile take the numbers before it), one change set, one commit; a step that
/// fails rolls the whole save back.
///
/// While it runs, its store is the save's alone (`steppedStore`): nothing else may write into it
/// or read it through this context's connections, which would see its rows before they are
/// committed — the owner holds such calls until it ends (`Broker+HeldWrites`), and a save into it
/// is refused here should one come. Closing its store ends it (`failed`).
public final class SteppedSave {
    /// What a step left.
    public enum Outcome {
        /// More steps to go.
        case unfinished
        /// Committed (nil: it changed nothing).
        case finished(ChangeSet?)
    }

    /// The store it writes.
    public let store: String
    let request: SaveRequest
    let author: String
    var work = Context.WorkingSet()
    /// The next operation to stage.
    var staged = 0
    /// Worked out once every operation is staged, and how many of them are written.
    var changes: [RowChange]?
    var written = 0
    /// Whether the history records it, and its entry's changes, written with its rows.
    var recordsHistory = false
    var history: [UInt8] = []
    /// Why it ended before its last step (its store closed under it).
    var failure: ContextError?

    init(store: String, request: SaveRequest, author: String) {
        self.store = store
        self.request = request
        self.author = author
    }

    /// Operations staged and rows written so far, out of twice the operations: a progress measure.
    public var progress: (done: Int, of: Int) { (staged + written, request.operations.count * 2) }
}

extension Context {
    /// The store a save in steps holds, while one runs.
    public var steppedStore: String? { stepped?.store }

    /// Begins `request` as a save in steps, its transaction open; nil when it cannot be one (it
    /// touches two stores or none, deletes rows — whose link rules may reach the other store —
    /// or another runs): the owner then saves it at once. Errors are those of `save`.
    public func beginSteps(_ request: SaveRequest, author: String) throws(ContextError) -> SteppedSave? {
        // In memory there is one connection: nothing could read the store beside the open save.
        guard stepped == nil, directory != nil, !request.operations.isEmpty else { return nil }
        var store: String?
        for op in request.operations {
            if case .delete = op { return nil }
            guard let s = try? route(op.entity).store, store == nil || store == s else { return nil }
            store = s
        }
        guard let store else { return nil }
        return try guarding { () throws(ContextError) -> SteppedSave? in
            try finishUnfinished()
            let entity = request.operations[0].entity
            try requireWritable(store, entity: entity)
            closeGroupForOwnTransaction()  // a group holding this store's transaction commits it first
            if options.verifiesFilesBeforeWrites, fileChanged(store) { notices.append(Notice(isError: false, text: try putBack(store))) }
            let handle = try handle(store, for: entity)
            do throws(DatabaseError) { try handle.runOnce(handle.saveStatements().begin) } catch { throw ContextError(.database(error)) }
            let s = SteppedSave(store: store, request: request, author: author)
            s.recordsHistory = recordsHistory(by: author) && configuration(of: entity) == options.historyConfiguration
            stepped = s
            return s
        }
    }

    /// Takes `s` further by about `rows` operations staged or rows written; at its last step,
    /// commits it. An error rolls it back and ends it.
    public func step(_ s: SteppedSave, rows: Int) throws(ContextError) -> SteppedSave.Outcome {
        if let failure = s.failure { throw failure }
        guard stepped === s, let handle = stores[s.store] else {
            throw ContextError(.storeUnavailable(store: s.store, entity: s.request.operations.first?.entity ?? "",
                                                 reason: closedStores[s.store] ?? "the save was ended"))
        }
        do {
            return try guarding { () throws(ContextError) -> SteppedSave.Outcome in try advance(s, rows: rows, in: handle) }
        } catch {
            abandon(s)
            throw error
        }
    }

    private func advance(_ s: SteppedSave, rows: Int, in handle: StoreHandle) throws(ContextError) -> SteppedSave.Outcome {
        let ops = s.request.operations
        if s.staged < ops.count {
            for i in s.staged..<min(ops.count, s.staged + rows) {
                do {
                    switch ops[i] {
                    case .insert(let entity, let values): try stageInsert(entity, values, checked: s.request.valuesChecked, into: &s.work)
                    case .update(let entity, let uuid, let values): try stageUpdate(entity, uuid, values, into: &s.work)
                    case .delete(let entity, let uuid): try stageDelete(entity, uuid, author: s.author, into: &s.work)
                    }
                } catch {
                    var placed = error
                    placed.operation = placed.operation ?? i
                    throw placed
                }
            }
            s.staged = min(ops.count, s.staged + rows)
            return .unfinished
        }
        if s.changes == nil {
            var changes: [RowChange] = []
            changes.reserveCapacity(s.work.order.count)
            for key in s.work.order {
                guard let p = s.work.rows[key], let change = Self.change(p, names: attributeNames[p.entity.name] ?? []) else { continue }
                changes.append(change)
            }
            if let since = s.request.unchangedSince, !changes.isEmpty { try checkUnchanged(changes, since: since) }
            s.changes = changes
        }
        let changes = s.changes ?? []
        if s.written < changes.count {
            var applying: RowChange?
            do {
                for change in changes[s.written..<min(changes.count, s.written + rows)] {
                    applying = change
                    try apply(change, in: handle)
                    if s.recordsHistory {
                        s.history.append(s.history.isEmpty ? UInt8(ascii: "[") : UInt8(ascii: ","))
                        RowCoding.writeChange(change, sortedKeys: &historyKeyOrder, into: &s.history)
                    }
                }
            } catch {
                throw Self.mapped(error, set: ChangeSet(sequence: sequence + 1, author: s.author, time: 0, changes: changes), failing: applying)
            }
            s.written = min(changes.count, s.written + rows)
            return .unfinished
        }
        return .finished(try commitSteps(s, changes: changes, in: handle))
    }

    /// The last step: the sequence number, the history, the commit.
    private func commitSteps(_ s: SteppedSave, changes: [RowChange], in handle: StoreHandle) throws(ContextError) -> ChangeSet? {
        guard !changes.isEmpty else {
            abandon(s)
            return nil
        }
        let set = ChangeSet(sequence: sequence + 1, author: s.author, time: Self.now(), changes: changes)
        try lease(through: set.sequence)
        do {
            let number = try handle.saveStatements().setSequence
            try number.bind(SaveJournal.setSequenceArguments(set.sequence))
            try handle.runOnce(number)
            if s.recordsHistory {
                s.history.append(UInt8(ascii: "]"))
                try writeHistory(set, text: String(decoding: s.history, as: UTF8.self))
            }
            handle.db.defersSync = options.defersSync
            defer { handle.db.defersSync = false }
            try handle.runOnce(handle.saveStatements().commit)
        } catch {
            throw ContextError(.database(error))
        }
        stepped = nil
        sequence = set.sequence
        ring.append(set)
        if set.sequence % 64 == 0, !syncConfigured { try? purgeHistory(olderThan: set.time - options.historyRetention) }
        return set
    }

    /// Ends `s` without committing anything (its transaction rolled back).
    public func abandon(_ s: SteppedSave) {
        guard stepped === s else { return }
        stepped = nil
        if let h = stores[s.store], !h.db.isAutocommit { try? h.db.execute("ROLLBACK") }
    }

    /// A save into the store a save in steps holds: refused (its owner should have held it).
    func refuseIfStepped(_ request: SaveRequest) throws(ContextError) {
        guard let held = stepped?.store else { return }
        for op in request.operations where (try? route(op.entity).store) == held {
            throw ContextError(.storeUnavailable(store: held, entity: op.entity, reason: "a save is being written into it; try again in a moment"))
        }
    }

    /// Its store closing: the save in steps on it ends, rolled back, and says why at its next step.
    func endSteps(closing name: String, reason: String) {
        guard let s = stepped, s.store == name else { return }
        s.failure = ContextError(.storeUnavailable(store: name, entity: s.request.operations.first?.entity ?? "", reason: reason))
        abandon(s)
    }
}
