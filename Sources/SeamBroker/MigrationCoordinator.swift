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

/// How the last migration ended, for `Status`.
struct MigrationOutcome {
    var stores: [String]
    var error: String?
    var backups: [String]
    var seconds: Double
}

/// Where the broker's parts send frames to the connections that asked for them.
protocol ReplySink: AnyObject {
    /// Sends a frame to a connection that watches (queued, then flushed).
    func deliver(_ frame: [UInt8], to c: Connection)
    /// A reply `c` was owed has been sent (or is no longer owed): it may close if it is done.
    func settle(_ c: Connection)
}

/// What the broker's long jobs on the stores — a migration (`MigrationCoordinator`), a backup,
/// check or restore (`MaintenanceRunner`) — ask of the broker that hosts them.
protocol JobHost: ReplySink {
    /// Whether a restore runs now (no migration begins then).
    var isRestoring: Bool { get }
    /// The stores a run closes are closed: what the broker keeps of their rows goes.
    func storesClosed(_ names: [String])
    /// Subscribers hear now of what a save completed at the start of a run changed.
    func refetchIfInvalidated()
    /// Stores that ended a run closed are opened again; the names of those that opened.
    func reopenStores(_ names: [String], changed: Bool) -> [String]
    /// The channels on stores that came back are rebuilt, their subscribers resynced.
    func resumeChannels(in stores: [String])
    /// A migration kept the originals in backups/: the oldest generations past the bound go.
    func pruneBackups()
    /// What the stores noticed (a file put back, damage found) is logged and told.
    func reportStoreNotices()
}

/// Migration as a role (design.md): seamd owns the files in service, and a separate process
/// does the risky work. seamd closes the stores a plan touches and starts `seam-migrate`
/// with them; the worker reads the originals read-only, builds verified copies and reports
/// progress; seamd verifies the copies again, swaps them in and reopens the stores. A worker
/// that fails, dies or hands over a copy that does not verify leaves the originals, which
/// return to service at their old versions, and no temporary file.
///
/// The run's life is `MigrationLifecycle` (pure); this type performs what it answers.
final class MigrationCoordinator {
    /// The migration running now, and how the last one ended.
    private(set) var run: MigrationRun?
    private(set) var last: MigrationOutcome?
    weak var host: (any JobHost)?
    private let context: Context
    private let loop: EventLoop
    private let log: Logger
    private let supervisor: Supervisor
    private let dataDirectory: String
    /// The worker to start (`seamd.json`'s migrator), before its arguments.
    private let migrator: RoleSpec

    init(context: Context, loop: EventLoop, log: Logger, supervisor: Supervisor, dataDirectory: String, migrator: RoleSpec) {
        self.context = context
        self.loop = loop
        self.log = log
        self.supervisor = supervisor
        self.dataDirectory = dataDirectory
        self.migrator = migrator
    }

    private var clock: any Clock { loop.clock }
    var storeDirectory: StoreDirectory { StoreDirectory(path: dataDirectory, schema: context.schema) }

    /// Whether the running migration closed `store`.
    func isMigrating(_ store: String) -> Bool { run?.stores.contains(store) == true }
    func startAtStart() {
        if case .failure(let e) = begin() { log.error("cannot migrate at start: \(e.parameters["message"]?.stringValue ?? e.name)") }
    }

    /// Starts a migration of every outdated store, or returns the one running; nil when every
    /// store is current.
    func begin() -> Result<MigrationRun?, VarlinkError> {
        if let run { return .success(run) }
        if host?.isRestoring == true {
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
            if let host { host.resumeChannels(in: host.reopenStores(pending, changed: true)) }
        }
        // A save that committed in one file and waits to complete in the other is completed
        // first: with that other store closed, every save would be refused until the migration
        // ended, and the store's new sequence number would then make the next start forget it.
        do { try context.finishUnfinished() } catch {
            return .failure(.migrationFailed("\(error.description); no migration begins while a save waits to complete"))
        }
        host?.refetchIfInvalidated()  // what it finished, subscribers hear of now, not at the next save
        let plan: MigrationPlan
        do { plan = try storeDirectory.planInService() } catch {
            return .failure(.migrationFailed("cannot plan the migration: \(error)"))
        }
        guard !plan.isEmpty else { return .success(nil) }
        let stores = StoreDirectory.touched(by: plan)
        var spec = migrator
        spec.command += ["--worker", "--stores", stores.joined(separator: ","), dataDirectory]
        let worker = SupervisedProcess(spec: spec)
        let run = MigrationRun(plan: plan, stores: stores, worker: worker, now: clock.monotonic)
        self.run = run
        for name in stores { context.close(name, reason: unavailableReason(run)) }
        host?.storesClosed(stores)
        log.info("migrating \(run.summary): \(stores.joined(separator: ", ")) closed until it ends")
        for f in plan.files where !f.carried.isEmpty {
            log.info("\(f.configuration).sqlite: keeping what is not Seam's: " + f.carried.map(\.summary).joined(separator: ", "))
        }
        supervisor.launch(worker)
        // A worker that could not even start has already ended the run.
        guard self.run === run else { return .failure(.migrationFailed(last?.error ?? "the worker did not start")) }
        return .success(run)
    }

    /// What a call that needs a migrating store is told.
    private func unavailableReason(_ run: MigrationRun) -> String {
        let percent = Int((run.progress.fraction * 100).rounded(.down))
        return "migrating (\(run.summary)), \(percent)% done; try again when it is back (seam migrate shows its progress)"
    }

    // MARK: - org.seam.Migration

    func call(_ call: Call, _ c: Connection) -> [UInt8] {
        let result: Result<JSONObject, VarlinkError>
        switch call.member {
        case "Plan": result = migrationPlan()
        case "Migrate": return migrate(call, c)
        case "Report", "Finished", "Failed":
            guard let run, run.worker.connection === c, run.life.takesWorkerCalls else {
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
        if let run {
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
        switch begin() {
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
                host?.deliver(reply.frame(), to: c)
                c.repliesOwed -= 1
                host?.settle(c)
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
    func workerEnded(_ p: SupervisedProcess, _ how: String) {
        guard let run, run.worker === p else { return }
        perform(run.life.handle(.workerEnded(how)), for: run)
    }

    /// Ends a run: on failure removes the copies; reopens every store it closed (migrated, or at
    /// its old version) but those of a swap that stopped part way (`unfinishedSwap`: what stops
    /// it); resumes the channels on them; tells the watchers.
    private func end(_ run: MigrationRun, error: String?, backups: [String] = [], unfinishedSwap: StoreError? = nil) {
        self.run = nil
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
            back = host?.reopenStores(run.stores, changed: error == nil) ?? []
        }
        last = MigrationOutcome(stores: run.stores, error: error, backups: backups, seconds: seconds)
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
            host?.pruneBackups()
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
            host?.settle(c)
        }
        // The channels on a half-swapped store end (it comes back only when a person has acted);
        // those on a store still to reopen wait for it, and resume when it does.
        host?.resumeChannels(in: unfinishedSwap == nil ? back : run.stores)
    }

    private func tellWatchers(_ run: MigrationRun, _ reply: Reply) {
        for (c, id) in run.watchers where !c.closed {
            var r = reply
            r.id = id
            host?.deliver(r.frame(), to: c)
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

    func status() -> JSON {
        var o: JSONObject = ["running": .bool(run != nil)]
        if let run {
            o["stores"] = .array(run.stores.map(JSON.string))
            o["progress"] = progressJSON(run)
            o["worker"] = run.worker.pid.map { .integer(Int64($0)) } ?? .null
        }
        if let last {
            o["last"] = .object(["stores": .array(last.stores.map(JSON.string)), "error": last.error.map(JSON.string) ?? .null,
                                 "backups": .array(last.backups.map(JSON.string)), "seconds": .double(last.seconds)])
        }
        return .object(o)
    }
}
