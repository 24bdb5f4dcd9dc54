import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamStore
import SeamSystem
import Synchronization

/// A migration in progress: the plan, the stores it closed, the worker building the copies,
/// and the calls watching it.
final class MigrationRun {
    let plan: MigrationPlan
    /// The stores it closed; they reopen when it ends, migrated or not.
    let stores: [String]
    let startedAt: Double
    let worker: SupervisedProcess
    /// Where the run is (`MigrationLifecycle`), and its progress.
    var life: MigrationLifecycle
    var progress: MigrationProgress { life.progress }
    /// `Migrate` calls made with `more`: each hears every report, then the end.
    var watchers: [(connection: Connection, callID: JSON?)] = []
    /// The worker's `Finished`, answered once its copies are swapped in (or refused).
    var finishedCall: (connection: Connection, id: JSON?)?
    /// Why a swap that stopped part way still cannot finish.
    var stoppedSwap: StoreError?

    init(plan: MigrationPlan, stores: [String], worker: SupervisedProcess, now: Double) {
        self.plan = plan
        self.stores = stores
        self.worker = worker
        startedAt = now
        life = MigrationLifecycle(firstStore: stores.first ?? "")
    }

    /// "Local: Timers v4 → v5": what is being migrated, in words.
    var summary: String { plan.files.map(\.versionChange).joined(separator: "; ") }

    /// Seconds left, from the pace so far (nil until there is a pace).
    func estimate(now: Double) -> Double? {
        let f = progress.fraction
        guard f > 0.01, f < 1 else { return nil }
        return (now - startedAt) * (1 - f) / f
    }
}

/// What the verifying thread found, handed to the loop's thread.
final class VerificationOutcome: Sendable {
    private let slot = Mutex<StoreError??>(nil)
    func set(_ failure: StoreError?) { slot.withLock { $0 = .some(failure) } }
    func take() -> StoreError? { slot.withLock { $0 ?? nil } }
}

/// A store that did not open again after a migration, and its next try (`Broker.reopenStores`).
struct StoreReopening {
    /// Its file is not the one that closed (a swap replaced it): so until it has opened.
    var changed: Bool
    var backoff = Backoff()
    var failures = 0
    var timer: Int?
}

/// How the last migration ended, for `Status`.
struct MigrationOutcome {
    var stores: [String]
    var error: String?
    var backups: [String]
    var seconds: Double
}

/// Migration as a role (design.md): seamd owns the files in service, and a separate process
/// does the risky work. seamd closes the stores a plan touches and starts `seam-migrate`
/// with them; the worker reads the originals read-only, builds verified copies and reports
/// progress; seamd verifies the copies again, swaps them in and reopens the stores. A worker
/// that fails, dies or hands over a copy that does not verify leaves the originals, which
/// return to service at their old versions, and no temporary file.
extension Broker {
    var storeDirectory: StoreDirectory { StoreDirectory(path: configuration.dataDirectory, schema: context.schema) }

    func startMigrationAtStart() {
        if case .failure(let e) = beginMigration() { log.error("cannot migrate at start: \(e.parameters["message"]?.stringValue ?? e.name)") }
    }

    /// Starts a migration of every outdated store, or returns the one running; nil when every
    /// store is current.
    func beginMigration() -> Result<MigrationRun?, VarlinkError> {
        if let run = migration { return .success(run) }
        if let job = maintenance, job.kind == .restore {
            return .failure(.migrationFailed("a restore is running; migrate when it has ended"))
        }
        // A swap that stopped part way comes first: its copies are verified, and a new build
        // would overwrite them (the worker refuses to). Finished now, its stores serve again.
        let pending = storeDirectory.unfinishedSwap.sorted()
        if !pending.isEmpty {
            let names = pending.joined(separator: ", ")
            do { try storeDirectory.recover() } catch {
                return .failure(.migrationFailed("the swap of \(names) that stopped part way still cannot finish (\(error.cause)). "
                                                 + "Fix that, then run seam migrate again (or restart seamd)"))
            }
            log.info("finished the swap of \(names) that had stopped part way")
            resumeChannels(in: reopenStores(pending, changed: true))
        }
        // A save that committed in one file and waits to complete in the other is completed
        // first: with that other store closed, every save would be refused until the migration
        // ended, and the store's new sequence number would then make the next start forget it.
        do { try context.finishUnfinished() } catch {
            return .failure(.migrationFailed("\(error.description); no migration begins while a save waits to complete"))
        }
        refetchIfInvalidated()  // what it finished, subscribers hear of now, not at the next save
        let plan: MigrationPlan
        do { plan = try storeDirectory.planInService() } catch {
            return .failure(.migrationFailed("cannot plan the migration: \(error)"))
        }
        guard !plan.isEmpty else { return .success(nil) }
        let stores = StoreDirectory.touched(by: plan)
        var spec = configuration.supervision.migrator
        spec.command += ["--worker", "--stores", stores.joined(separator: ","), configuration.dataDirectory]
        let worker = SupervisedProcess(spec: spec)
        let run = MigrationRun(plan: plan, stores: stores, worker: worker, now: clock.monotonic)
        migration = run
        for name in stores { context.close(name, reason: unavailableReason(run)) }
        rowCache.removeAll()
        log.info("migrating \(run.summary): \(stores.joined(separator: ", ")) closed until it ends")
        for f in plan.files where !f.carried.isEmpty {
            log.info("\(f.configuration).sqlite: keeping what is not Seam's: " + f.carried.map(\.summary).joined(separator: ", "))
        }
        supervisor.launch(worker)
        // A worker that could not even start has already ended the run.
        guard migration === run else { return .failure(.migrationFailed(lastMigration?.error ?? "the worker did not start")) }
        return .success(run)
    }

    /// What a call that needs a migrating store is told.
    private func unavailableReason(_ run: MigrationRun) -> String {
        let percent = Int((run.progress.fraction * 100).rounded(.down))
        return "migrating (\(run.summary)), \(percent)% done; try again when it is back (seam migrate shows its progress)"
    }

    // MARK: - org.seam.Migration

    func migrationCall(_ call: Call, _ c: Connection) -> [UInt8] {
        let result: Result<JSONObject, VarlinkError>
        switch call.member {
        case "Plan": result = migrationPlan()
        case "Migrate": return migrate(call, c)
        case "Report", "Finished", "Failed":
            guard let run = migration, run.worker.connection === c, run.life.takesWorkerCalls else {
                result = .failure(.permissionDenied("only the migration worker seamd started for the running migration may call "
                                                    + call.member + "; to migrate, call org.seam.Migration.Migrate"))
                break
            }
            switch call.member {
            case "Report": result = report(call.parameters, run)
            case "Finished":
                c.repliesOwed += 1  // answered once the copies are swapped in, or refused
                run.finishedCall = (c, call.id)
                perform(run.life.handle(.finished), for: run)
                return []
            default: result = workerFailed(call.parameters, run)
            }
        default: result = .failure(.methodNotFound(call.method))
        }
        switch result {
        case .success(let parameters): return Reply(parameters: parameters, id: call.id).frame()
        case .failure(let error): return Reply(error, id: call.id).frame()
        }
    }

    private func migrationPlan() -> Result<JSONObject, VarlinkError> {
        if let run = migration {
            return .success(["needed": .bool(true), "running": .bool(true), "stores": .array(run.stores.map(JSON.string)),
                             "text": .string(run.plan.description)])
        }
        do {
            let plan = try storeDirectory.planInService()
            return .success(["needed": .bool(!plan.isEmpty), "running": .bool(false),
                             "stores": .array(StoreDirectory.touched(by: plan).map(JSON.string)), "text": .string(plan.description)])
        } catch {
            return .failure(.migrationFailed("cannot plan the migration: \(error)"))
        }
    }

    /// `Migrate`: starts (or joins) the migration; with `more`, reports until it ends.
    private func migrate(_ call: Call, _ c: Connection) -> [UInt8] {
        guard c.hello?.role == "cli" else {
            return Reply(.permissionDenied("migrating takes a client that said Hello as cli (plugins and other roles may not start it)"),
                         id: call.id).frame()
        }
        let run: MigrationRun
        switch beginMigration() {
        case .failure(let e): return Reply(e, id: call.id).frame()
        case .success(nil):
            return Reply(parameters: ["state": .string("current"), "stores": .array([])], id: call.id).frame()
        case .success(let r?): run = r
        }
        guard call.more, !call.oneway else {
            return Reply(parameters: ["state": .string("running"), "stores": .array(run.stores.map(JSON.string)),
                                      "progress": progressJSON(run)], id: call.id).frame()
        }
        run.watchers.append((c, call.id))
        c.repliesOwed += 1
        return Reply(parameters: ["state": .string("running"), "stores": .array(run.stores.map(JSON.string)),
                                  "progress": progressJSON(run)], continues: true, id: call.id).frame()
    }

    private func report(_ p: JSONObject, _ run: MigrationRun) -> Result<JSONObject, VarlinkError> {
        guard let phaseName = p["phase"]?.stringValue, let phase = MigrationProgress.Phase(rawValue: phaseName) else {
            return .failure(.invalidParameter("phase"))
        }
        func count(_ key: String) -> Int64? { p[key]?.int64Value.flatMap { $0 >= 0 ? $0 : nil } }
        guard let rowsDone = count("rowsDone"), let rowsTotal = count("rowsTotal"), let bytesWritten = count("bytesWritten"),
              let bytesTotal = count("bytesTotal")
        else { return .failure(.invalidParameter("rowsDone, rowsTotal, bytesWritten and bytesTotal are counts")) }
        let progress = MigrationProgress(phase: phase, configuration: p["store"]?.stringValue ?? run.progress.configuration,
                                         entity: p["entity"]?.stringValue, rowsDone: Int(rowsDone), rowsTotal: Int(rowsTotal),
                                         bytesWritten: bytesWritten, bytesTotal: bytesTotal)
        perform(run.life.handle(.report(progress)), for: run)
        return .success([:])
    }

    /// Does what the run's lifecycle says.
    private func perform(_ actions: [MigrationLifecycle.Action], for run: MigrationRun) {
        for action in actions {
            switch action {
            case .progressed:
                for name in run.stores { context.setClosedReason(name, unavailableReason(run)) }
                tellWatchers(run, Reply(parameters: ["state": .string("running"), "stores": .array(run.stores.map(JSON.string)),
                                                     "progress": progressJSON(run)], continues: true, id: nil))
            case .verifyCopies: verifyCopies(run)
            case .swap: swap(run)
            case .end(.done(let backups)): end(run, error: nil, backups: backups)
            case .end(.failed(let message)): end(run, error: message)
            case .end(.unfinishedSwap(let message)): end(run, error: message, unfinishedSwap: run.stoppedSwap)
            case .answerWorker(let result):
                guard let (c, id) = run.finishedCall else { continue }
                run.finishedCall = nil
                let reply: Reply
                switch result {
                case .success(let backups): reply = Reply(parameters: ["backups": .array(backups.map(JSON.string))], id: id)
                case .failure(let refusal): reply = Reply(.migrationFailed(refusal.message), id: id)
                }
                if queue(frame: reply.frame(), to: c) { flush(c) }
                c.repliesOwed -= 1
                closeIfFinished(c)
            }
        }
    }

    /// The worker's copies are built: verify them here — on a thread of their own, so that the
    /// stores still open keep serving meanwhile — and say what was found.
    private func verifyCopies(_ run: MigrationRun) {
        let directory = storeDirectory
        let plan = run.plan
        let outcome = VerificationOutcome()
        var made: (read: Int32, write: Int32)?
        do {
            let pipe = try Pipes.make()
            made = pipe
            try loop.watch(pipe.read, .read) { [unowned self] _ in
                self.loop.forget(pipe.read)
                Descriptors.close(pipe.read)
                self.perform(run.life.handle(.verified(failure: outcome.take().map { "\($0)" })), for: run)
            }
            try Threads.detach {
                let result: StoreError?
                do throws(StoreError) { try directory.verifyCopies(plan); result = nil } catch { result = error }
                outcome.set(result)
                Descriptors.write(pipe.write, [1])
                Descriptors.close(pipe.write)
            }
        } catch {
            if let made {  // none of it is used: nothing is left watched or open
                loop.forget(made.read)
                Descriptors.close(made.read)
                Descriptors.close(made.write)
            }
            // No thread to spare: verify here.
            var failure: StoreError?
            do { try directory.verifyCopies(plan) } catch let e { failure = e }
            perform(run.life.handle(.verified(failure: failure.map { "\($0)" })), for: run)
        }
    }

    /// Swaps the verified copies in, and says how that went.
    private func swap(_ run: MigrationRun) {
        let directory = storeDirectory
        let event: MigrationLifecycle.Event
        do {
            event = .swapped(backups: try directory.swapVerified(run.plan))
        } catch {
            // The swap began (migration.intent names the copies) and stopped part way: some
            // stores may be swapped, others not. Rolled forward once more, or else the stores
            // stay closed, the copies kept, until the next start rolls it forward. A swap that
            // could not begin (no intent written) leaves the originals as they were.
            if directory.unfinishedSwap.isEmpty {
                event = .swapRefused("\(error)")
            } else {
                log.error("the swap of \(run.stores.joined(separator: ", ")) stopped part way: \(error); rolling it forward again")
                do {
                    _ = try directory.recover()
                    let kept = Backups.list(directory.layout).last
                    event = .swapped(backups: run.plan.files.compactMap { f in kept.map { $0.file(f.configuration) } }.filter(FileSystem.exists))
                } catch let again {
                    run.stoppedSwap = again
                    event = .swapStoppedPartWay("\(again)")
                }
            }
        }
        perform(run.life.handle(event), for: run)
    }

    private func workerFailed(_ p: JSONObject, _ run: MigrationRun) -> Result<JSONObject, VarlinkError> {
        perform(run.life.handle(.failed(p["message"]?.stringValue ?? "")), for: run)
        return .success([:])
    }

    /// The worker process ended (or never started). Before it concluded, that is a failure.
    func migrationWorkerEnded(_ p: SupervisedProcess, _ how: String) {
        guard let run = migration, run.worker === p else { return }
        perform(run.life.handle(.workerEnded(how)), for: run)
    }

    /// Ends a run: on failure removes the copies; reopens every store it closed (migrated, or at
    /// its old version) but those of a swap that stopped part way (`unfinishedSwap`: what stops
    /// it); resumes the channels on them; tells the watchers.
    private func end(_ run: MigrationRun, error: String?, backups: [String] = [], unfinishedSwap: StoreError? = nil) {
        migration = nil
        let seconds = clock.monotonic - run.startedAt
        if error != nil {
            let removed = storeDirectory.removeCopies(run.plan.files.map(\.configuration))
            if !removed.isEmpty { log.info("removed \(removed.joined(separator: ", ")), left by the failed migration") }
        }
        var back: [String] = []
        if let unfinishedSwap {
            // Half swapped, a store is not served: its other half may be at another version.
            for name in run.stores { context.close(name, reason: Context.unfinishedSwapReason(unfinishedSwap)) }
        } else {
            back = reopenStores(run.stores, changed: error == nil)
        }
        lastMigration = MigrationOutcome(stores: run.stores, error: error, backups: backups, seconds: seconds)
        if let error, unfinishedSwap != nil {
            log.error("migration of \(run.stores.joined(separator: ", ")) failed after \(describeSeconds(seconds)): \(error)")
            tellWatchers(run, Reply(.migrationFailed(error), id: nil))
        } else if let error {
            log.error("migration of \(run.stores.joined(separator: ", ")) failed after \(describeSeconds(seconds)): \(error); "
                      + "the originals serve at their old versions; `seam migrate` tries again")
            tellWatchers(run, Reply(.migrationFailed(error + "; the originals serve at their old versions"), id: nil))
        } else {
            log.info("migrated \(run.stores.joined(separator: ", ")) in \(describeSeconds(seconds)); originals kept in "
                     + backups.joined(separator: ", "))
            pruneBackups()
            var done: JSONObject = ["state": .string("done"), "stores": .array(run.stores.map(JSON.string)),
                                    "progress": progressJSON(run), "backups": .array(backups.map(JSON.string))]
            // Migrated, and yet not serving: said here, not only in the log (seamd tries again).
            let closed = run.stores.filter { !back.contains($0) }.compactMap { name in
                context.closedStores[name].map { JSON.object(["store": .string(name), "reason": .string($0)]) }
            }
            if !closed.isEmpty { done["closed"] = .array(closed) }
            tellWatchers(run, Reply(parameters: done, id: nil))
        }
        let watching = run.watchers.map(\.connection)
        run.watchers = []
        for c in watching {
            c.repliesOwed -= 1
            closeIfFinished(c)
        }
        // The channels on a half-swapped store end (it comes back only when a person has acted);
        // those on a store still to reopen wait for it, and resume when it does.
        resumeChannels(in: unfinishedSwap == nil ? back : run.stores)
    }

    private func tellWatchers(_ run: MigrationRun, _ reply: Reply) {
        for (c, id) in run.watchers where !c.closed {
            var r = reply
            r.id = id
            if queue(frame: r.frame(), to: c) { flush(c) }
        }
        run.watchers.removeAll { $0.connection.closed }
    }

    func progressJSON(_ run: MigrationRun) -> JSON {
        let p = run.progress
        let now = clock.monotonic
        return .object([
            "phase": .string(p.phase.rawValue), "store": .string(p.configuration), "entity": p.entity.map(JSON.string) ?? .null,
            "rowsDone": .integer(Int64(p.rowsDone)), "rowsTotal": .integer(Int64(p.rowsTotal)),
            "bytesWritten": .integer(p.bytesWritten), "bytesTotal": .integer(p.bytesTotal), "fraction": .double(p.fraction),
            "elapsed": .double(now - run.startedAt), "estimate": run.estimate(now: now).map(JSON.double) ?? .null,
        ])
    }

    // MARK: - Stores that return

    /// Reopens stores a migration closed (`changed`: a swap replaced their files) and, once none
    /// is outdated, a new store that waited for them (a migration might have filled it). Returns
    /// those that opened: the caller resumes their channels (`resumeChannels`). One that does
    /// not open (no descriptors left, an I/O error) stays closed, its channels waiting as they
    /// are, and is tried again after 1 s, then less and less often, up to every 60 s.
    func reopenStores(_ names: [String], changed: Bool) -> [String] {
        var back = names.filter { reopenStore($0, changed: changed) }
        if !context.hasOutdatedStores {
            for (name, why) in context.closedStores.sorted(by: { $0.key < $1.key }) where why == Context.waitingForMigration {
                if reopenStore(name, changed: true) { back.append(name) }
            }
        }
        // Whether the history waits for a sync worker could not be read while the synced store
        // was closed (at start, say): it is read now, as `Broker.init` does.
        if back.contains(context.options.historyConfiguration), !context.syncConfigured, Self.hasSyncedBefore(context) {
            context.syncConfigured = true
        }
        return back
    }

    /// One try at opening a closed store; a failure is logged, said as the store's reason, and
    /// the next try scheduled. True when the store is open (a new store may still wait).
    private func reopenStore(_ name: String, changed: Bool) -> Bool {
        let earlier = reopening.removeValue(forKey: name)
        if let t = earlier?.timer { loop.cancel(t) }
        // A file swapped in is taken as changed until it has opened, however many tries that takes.
        let changed = changed || earlier?.changed == true
        do {
            try context.reopen(name, changed: changed)
        } catch {
            var retry = earlier ?? StoreReopening(changed: changed)
            retry.changed = changed
            retry.failures += 1
            let delay = retry.backoff.delay(afterRunning: 0)
            retry.timer = loop.after(delay) { [unowned self] in self.retryReopening(name) }
            reopening[name] = retry
            context.setClosedReason(name, "it could not be opened again: \(error); seamd tries again, every minute at most")
            log.error("\(name) store did not open again (try \(retry.failures)): \(error); trying again in \(describeSeconds(delay))")
            return false
        }
        guard context.storeNames.contains(name) else { return false }
        if let earlier { log.info("\(name) store is open again, after \(earlier.failures) failed tr\(earlier.failures == 1 ? "y" : "ies")") }
        return true
    }

    /// The timer of a store that did not open: it is tried again, and its channels resume if it opens.
    private func retryReopening(_ name: String) {
        guard !stopping, reopening[name] != nil else { return }
        reopening[name]?.timer = nil
        // A migration that closed it meanwhile reopens it as it ends (taking `changed` from here);
        // one whose swap stopped part way leaves it to the person who finishes that swap.
        if migration?.stores.contains(name) == true || storeDirectory.unfinishedSwap.contains(name) { return }
        resumeChannels(in: reopenStores([name], changed: false))
    }

    // MARK: - Channels on a store that returns

    /// Every channel on the stores that came back is rebuilt against their entities as now
    /// held (a migration may have added attributes) and its subscribers get a fresh result,
    /// marked as a resync from where they were; a channel that no longer checks ends with the error.
    func resumeChannels(in stores: [String]) {
        var entities = Set<String>()
        for model in context.schema.models { for name in stores { for e in model.current.entities(in: name) { entities.insert(e.name) } } }
        // Subscribers waiting for a channel still loading: that load is dropped with its
        // channel, and their first reply is built from the rebuilt one.
        let stranded = Set(subscriptions.channels.values.filter { !$0.isLoaded && entities.contains($0.entity) }
            .flatMap { $0.subscriptions.keys })
        var touched: [ObjectIdentifier: Connection] = [:]
        for (s, error) in subscriptions.rebuild(entities: entities, context: context) {
            let c = s.connection
            guard !c.closed else { continue }
            if let error {
                if queue(frame: Reply(error, id: s.callID).frame(), to: c) { touched[ObjectIdentifier(c)] = c }
                if stranded.contains(s.id) { firstReplyDone(c) }
            } else if stranded.contains(s.id) {
                s.flow = SubscriptionFlow(loadingAt: context.sequence)
                buildFirstReply(s)
            } else {
                // Owed a resync from where it was, sent once its connection has read what is queued.
                s.flow.fallBehind(from: s.lastSequence)
                c.owesResync = true
                touched[ObjectIdentifier(c)] = c
            }
        }
        for c in touched.values { flush(c) }
    }

    // MARK: - Status

    func storesStatus() -> [JSON] {
        let layout = StoreLayout(directory: configuration.dataDirectory)
        let generations = Backups.list(layout)
        return context.schema.configurations.map { name in
            let path = layout.store(name)
            var o: JSONObject = ["name": .string(name), "path": .string(path), "size": .integer(FileSystem.size(path) ?? 0)]
            o["state"] = .string(storeState(name))
            o["readOnly"] = .bool(context.readOnly[name] != nil)
            if let why = context.readOnly[name] { o["readOnlyReason"] = .string(why) }
            if let note = context.olderThanTold[name] { o["note"] = .string(note) }
            if let versions = context.servedVersions[name] {
                o["versions"] = .array(versions.sorted { $0.key < $1.key }.map { model, version in
                    let v = version.version
                    return .object(["model": .string(model), "version": .integer(Int64(v)),
                                    "current": .integer(Int64(context.schema.model(model)?.current.version ?? v))])
                })
            } else {
                o["versions"] = .null
            }
            o["reason"] = context.closedStores[name].map(JSON.string) ?? .null
            let kept = generations.last { $0.stores.contains(name) && FileSystem.exists($0.file(name)) }
            o["backup"] = kept.map { .string($0.file(name)) } ?? .null
            if let c = context.checkpointing(name) {
                o["checkpoints"] = .integer(Int64(c.checkpoints))
                o["checkpointError"] = c.lastFailure.map(JSON.string) ?? .null
                o["walFrames"] = .integer(Int64(c.walFrames))
                o["writeHolds"] = .integer(Int64(c.writeHolds))
            }
            // With full durability: how often its writer has flushed the WAL (about once per save).
            if let n = context.walSyncs[name] { o["walSyncs"] = .integer(Int64(n)) }
            return .object(o)
        }
    }

    func migrationStatus() -> JSON {
        var o: JSONObject = ["running": .bool(migration != nil)]
        if let run = migration {
            o["stores"] = .array(run.stores.map(JSON.string))
            o["progress"] = progressJSON(run)
            o["worker"] = run.worker.pid.map { .integer(Int64($0)) } ?? .null
        }
        if let last = lastMigration {
            o["last"] = .object(["stores": .array(last.stores.map(JSON.string)), "error": last.error.map(JSON.string) ?? .null,
                                 "backups": .array(last.backups.map(JSON.string)), "seconds": .double(last.seconds)])
        }
        return .object(o)
    }

    /// Removes the oldest generations of backups/ past seamd.json's bound, saying which.
    func pruneBackups() {
        let bound = configuration.supervision.backupBound
        guard bound.keep != nil || bound.maxBytes != nil else { return }
        do {
            for g in try Backups.prune(storeDirectory.layout, bound: bound) {
                log.info("removed the backup \(g.name) (\(g.stores.joined(separator: ", ")), \(g.bytes) bytes): past seamd.json's "
                         + "bound on backups (" + [bound.keep.map { "keep \($0)" }, bound.maxBytes.map { "maxBytes \($0)" }]
                            .compactMap { $0 }.joined(separator: ", ") + ")")
            }
        } catch {
            log.warning("cannot prune backups/: \(error)")
        }
    }

    /// Every generation in backups/, oldest first, as `Status` lists them.
    func backupsStatus() -> JSON {
        .array(Backups.list(StoreLayout(directory: configuration.dataDirectory)).map { g in
            .object(["name": .string(g.name), "path": .string(g.path), "reason": .string(g.reason),
                     "createdAt": .string(RFC3339.format(g.createdAt)), "stores": .array(g.stores.map(JSON.string)),
                     "versions": .object(JSONObject(uniqueKeysWithValues: g.versions.sorted { $0.key < $1.key }.map { ($0.key, JSON.integer(Int64($0.value))) })),
                     "bytes": .integer(g.bytes)])
        })
    }
}
