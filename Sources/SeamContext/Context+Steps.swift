import SeamSchema
import SeamStore
import SeamSystem
import Synchronization

/// A save written in steps (issue: one client cannot take the broker): a big save of one store
/// is staged and written a few rows at a time inside one transaction on that store, so that
/// its owner's loop can serve others between the steps — reads, and saves into the other store.
/// It stays one save: one sequence number, taken at its last step (saves into the other store
/// committed meanwhile take the numbers before it), one change set, one commit; a step that
/// fails rolls the whole save back.
///
/// While it runs, its store is the save's alone (`steppedStore`): nothing else may write into it
/// or read it through this context's connections, which would see its rows before they are
/// committed — the owner holds such calls until it ends (`WriteGate`), and a save into it
/// is refused here should one come. Closing its store ends it (`failed`).
public final class SteppedSave {
    /// What a step left.
    public enum Outcome {
        /// More steps to go.
        case unfinished
        /// Committed (nil: it changed nothing).
        case finished(ChangeSet?)
        /// Every row is written and its commit is ready to run on another thread
        /// (`commitsElsewhere`): `SteppedCommit.run` there, then `Context.completeCommit` here.
        case readyToCommit(SteppedCommit)
    }

    /// Whether its last step — the history entry and the commit, a thousand rows' pages written
    /// to the WAL, 0.9 ms — is handed to its owner to run on another thread.
    public var commitsElsewhere = false
    /// Its commit, from when it is ready until it is completed.
    var commit: SteppedCommit?

    /// The store it writes.
    public let store: String
    let request: SaveRequest
    let author: String
    var work: Context.WorkingSet
    /// The next operation to stage.
    var staged = 0
    /// Worked out once every operation is staged (`made` so far, from the staged rows before
    /// `madeThrough`), and how many of them are written.
    var changes: [RowChange]?
    var made: [RowChange] = []
    var madeThrough = 0
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
        work = Context.WorkingSet(operations: request.operations.count)
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
            // Worked out in steps too (four steps' rows at a time): a thousand took one step 1 ms.
            let order = s.work.order
            if s.made.isEmpty { s.made.reserveCapacity(order.count) }
            let end = min(order.count, s.madeThrough + rows * 4)
            for key in order[s.madeThrough..<end] {
                guard let p = s.work.rows[key], let change = Self.change(p, names: attributeNames[p.entity.name] ?? []) else { continue }
                s.made.append(change)
            }
            s.madeThrough = end
            guard end == order.count else { return .unfinished }
            if let since = s.request.unchangedSince, !s.made.isEmpty { try checkUnchanged(s.made, since: since) }
            s.changes = s.made
            s.made = []
            return .unfinished
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
                        historyText.write(change, into: &s.history)
                    }
                }
            } catch {
                throw Self.mapped(error, set: ChangeSet(sequence: sequence + 1, author: s.author, time: 0, changes: changes), failing: applying)
            }
            s.written = min(changes.count, s.written + rows)
            return .unfinished
        }
        guard !changes.isEmpty else {
            abandon(s)
            return .finished(nil)
        }
        let commit = try prepareCommit(s, changes: changes)
        if s.commitsElsewhere, commit.history == nil || commit.history === handle {
            return .readyToCommit(commit)
        }
        // Here: its WAL synced with the owner's other saves of the round, as theirs are.
        handle.db.defersSync = options.defersSync
        defer { handle.db.defersSync = false }
        commit.run()
        return .finished(try completeCommit(s))
    }

    /// The last step's part on the owner's thread: its sequence number, claimed — no save may
    /// commit until it is completed (`sequenceClaimed`): one committed meanwhile would take a
    /// later number and be told of first — and its history entry's text.
    private func prepareCommit(_ s: SteppedSave, changes: [RowChange]) throws(ContextError) -> SteppedCommit {
        guard let handle = stores[s.store] else {
            throw ContextError(.storeUnavailable(store: s.store, entity: s.request.operations.first?.entity ?? "", reason: "it closed"))
        }
        let set = ChangeSet(sequence: sequence + 1, author: s.author, time: Self.now(), changes: changes)
        try lease(through: set.sequence)
        var history: (handle: StoreHandle, text: String)?
        if s.recordsHistory, let h = historyStore {
            s.history.append(UInt8(ascii: "]"))
            history = (h, String(decoding: s.history, as: UTF8.self))
            s.history = []
        }
        let commit = SteppedCommit(set: set, handle: handle, history: history)
        s.commit = commit
        return commit
    }

    /// Whether a save in steps has taken its sequence number and its commit is not completed:
    /// no save may commit meanwhile (`refuseIfStepped`); its owner holds every store's writes.
    public var sequenceClaimed: Bool { stepped?.commit != nil }

    /// Ends `s` once its commit ran (`SteppedCommit.run`, on whichever thread): the save as
    /// committed, or its error, the transaction rolled back. On the owner's thread.
    public func completeCommit(_ s: SteppedSave) throws(ContextError) -> ChangeSet? {
        guard let commit = s.commit else {
            throw s.failure ?? ContextError(.storeUnavailable(store: s.store, entity: s.request.operations.first?.entity ?? "",
                                                              reason: "the save was ended"))
        }
        if commit.completed { return commit.set }  // already, by `endSteps` as its store closed
        commit.completed = true
        if let error = commit.error {
            s.commit = nil
            s.failure = ContextError(.database(error))  // for a completion after `endSteps` took it
            abandon(s)
            throw ContextError(.database(error))
        }
        if stepped === s { stepped = nil }
        let set = commit.set
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
        if sequenceClaimed, let op = request.operations.first {
            throw ContextError(.storeUnavailable(store: held, entity: op.entity, reason: "a save is being committed; try again in a moment"))
        }
        for op in request.operations where (try? route(op.entity).store) == held {
            throw ContextError(.storeUnavailable(store: held, entity: op.entity, reason: "a save is being written into it; try again in a moment"))
        }
    }

    /// Its store closing: the save in steps on it ends, rolled back, and says why at its next step.
    func endSteps(closing name: String, reason: String) {
        guard let s = stepped, s.store == name else { return }
        if let commit = s.commit {
            // Its commit runs on another thread, on this store's connection: that ends first (a
            // millisecond or so), and the save stands as it ended — committed, or rolled back.
            commit.waitUntilRun()
            _ = try? completeCommit(s)
            if stepped !== s { return }
        }
        s.failure = ContextError(.storeUnavailable(store: name, entity: s.request.operations.first?.entity ?? "", reason: reason))
        abandon(s)
    }
}

/// A save in steps' commit — its sequence number, its history entry and the COMMIT, on its
/// store's connection — which its owner may run on another thread while it goes on, then finish
/// with `Context.completeCommit`. While it is out, the owner touches neither that connection
/// (its store's reads go to the read-only one) nor any store's writes (`Context.sequenceClaimed`).
public final class SteppedCommit: @unchecked Sendable {
    public let set: ChangeSet
    let handle: StoreHandle
    let history: StoreHandle?
    private let historyText: String
    private let ran = Mutex(false)
    private let done = Semaphore()
    /// What the commit failed with, once it ran.
    var error: DatabaseError?
    /// Set on the owner's thread once `completeCommit` took it.
    var completed = false

    init(set: ChangeSet, handle: StoreHandle, history: (handle: StoreHandle, text: String)?) {
        self.set = set
        self.handle = handle
        self.history = history?.handle
        historyText = history?.text ?? ""
    }

    /// Writes the sequence number and the history entry, and commits (syncing the WAL as the
    /// store's durability asks). Once, on any one thread.
    public func run() {
        do throws(DatabaseError) {
            let number = try handle.saveStatements().setSequence
            try number.bind(SaveJournal.setSequenceArguments(set.sequence))
            try handle.runOnce(number)
            if let history { try Context.writeHistory(set, text: historyText, into: history) }
            try handle.runOnce(handle.saveStatements().commit)
        } catch {
            self.error = error
        }
        ran.withLock { $0 = true }
        done.post()
    }

    /// Returns once `run` has.
    func waitUntilRun() {
        if ran.withLock({ $0 }) { return }
        done.wait()
        done.post()  // for anyone else waiting
    }
}
