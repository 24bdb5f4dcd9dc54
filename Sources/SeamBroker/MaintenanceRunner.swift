import SeamContext
import SeamJSON
import SeamProtocol
import SeamStore
import SeamSystem

/// A backup, check or restore in progress: its work runs on a thread of its own, which posts
/// progress and its end to `events`; the loop hears of them through `waker` and tells the calls
/// watching (`org.seam.Maintenance`).
final class MaintenanceJob {
    enum Kind: String { case backup, check, restore }

    enum Event: Sendable {
        case progress(store: String, done: Int64, total: Int64)
        /// The work ended: the last reply's parameters, or why it failed.
        case finished(Result<JSONObject, VarlinkError>)
    }

    let kind: Kind
    let startedAt: Double
    let events = Mailbox<Event>()
    var waker: EventLoop.Waker?
    /// Who waits for the job's end, and whether each asked for progress on the way (`more`).
    var watchers: [(connection: Connection, callID: JSON?, more: Bool)] = []
    var progress: (store: String, done: Int64, total: Int64) = ("", 0, 0)
    /// What the loop does once the thread's work has ended, before the watchers hear the end
    /// (a restore swaps the copies in and reopens the stores).
    var conclude: ((Result<JSONObject, VarlinkError>) -> Result<JSONObject, VarlinkError>)?

    init(kind: Kind, now: Double) {
        self.kind = kind
        startedAt = now
    }
}

/// Database connections handed to the job's thread, which alone uses them from then on.
private struct Handed<T>: @unchecked Sendable {
    let value: T
}

/// `org.seam.Maintenance`: `seam backup`, `seam check` and `seam restore` while seamd serves.
/// One job at a time; its work runs on a thread of its own, and the loop tells its watchers.
final class MaintenanceRunner {
    /// The backup, check or restore running now.
    private(set) var job: MaintenanceJob?
    weak var host: (any JobHost)?
    private let context: Context
    private let loop: EventLoop
    private let log: Logger
    private let migrations: MigrationCoordinator
    private let dataDirectory: String

    init(context: Context, loop: EventLoop, log: Logger, migrations: MigrationCoordinator, dataDirectory: String) {
        self.context = context
        self.loop = loop
        self.log = log
        self.migrations = migrations
        self.dataDirectory = dataDirectory
    }

    private var clock: any Clock { loop.clock }
    private var storeDirectory: StoreDirectory { migrations.storeDirectory }
    var isRestoring: Bool { job?.kind == .restore }
    func call(_ call: Call, _ c: Connection) -> [UInt8] {
        guard c.hello?.role == "cli" else {
            return Reply(.permissionDenied("\(call.member) takes a client that said Hello as cli"), id: call.id).frame()
        }
        if let running = job {
            return Reply(.maintenanceFailed("a \(running.kind.rawValue) is running; try again when it has ended"), id: call.id).frame()
        }
        let started: Result<MaintenanceJob, VarlinkError>
        switch call.member {
        case "Backup": started = beginBackup(call.parameters)
        case "Check": started = beginCheck()
        case "Restore": started = beginRestore(call.parameters)
        default: return Reply(.methodNotFound(call.method), id: call.id).frame()
        }
        let job: MaintenanceJob
        switch started {
        case .failure(let error): return Reply(error, id: call.id).frame()
        case .success(let j): job = j
        }
        guard !call.oneway else { return [] }
        job.watchers.append((c, call.id, call.more))
        c.repliesOwed += 1
        guard call.more else {
            // Without more, the one reply comes at the end.
            return []
        }
        return Reply(parameters: ["state": .string("running"), "progress": progressJSON(job)], continues: true, id: call.id).frame()
    }

    /// Starts `job` with its thread's `work`, which reports through the `Reporter` it is given.
    private func run(_ job: MaintenanceJob, _ work: @escaping @Sendable (Reporter) -> Void) -> Result<MaintenanceJob, VarlinkError> {
        let waker: EventLoop.Waker
        do {
            waker = try loop.waker { [unowned self] in self.maintenanceEvents(job) }
        } catch {
            return .failure(.maintenanceFailed("cannot start the \(job.kind.rawValue): \(error)"))
        }
        job.waker = waker
        self.job = job
        let reporter = Reporter(events: job.events, waker: waker)
        do {
            try Threads.detach { work(reporter) }
        } catch {
            self.job = nil
            loop.forget(waker.descriptor)
            return .failure(.maintenanceFailed("cannot start the \(job.kind.rawValue)'s thread: \(error)"))
        }
        return .success(job)
    }

    /// How a job's thread reports: progress at most ten times a second, and its end.
    final class Reporter: @unchecked Sendable {
        let events: Mailbox<MaintenanceJob.Event>
        let waker: EventLoop.Waker
        private var lastProgress = 0.0  // the job's thread alone touches it

        init(events: Mailbox<MaintenanceJob.Event>, waker: EventLoop.Waker) {
            self.events = events
            self.waker = waker
        }

        func progress(_ store: String, _ done: Int64, _ total: Int64) {
            let now = WallClock.monotonic()  // a rate limit on its own thread, not a logical time
            guard now - lastProgress >= 0.1 || done >= total else { return }
            lastProgress = now
            events.post(.progress(store: store, done: done, total: total))
            waker.wake()
        }

        func finished(_ result: Result<JSONObject, VarlinkError>) {
            events.post(.finished(result))
            waker.wake()
        }
    }

    /// The job's thread posted: progress goes to the watchers (those that asked for more); the
    /// end concludes the job.
    private func maintenanceEvents(_ job: MaintenanceJob) {
        for event in job.events.take() {
            switch event {
            case .progress(let store, let done, let total):
                job.progress = (store, done, total)
                for (c, id, more) in job.watchers where more && !c.closed {
                    host?.deliver(Reply(parameters: ["state": .string("running"), "progress": progressJSON(job)], continues: true,
                                        id: id).frame(), to: c)
                }
            case .finished(let outcome):
                let result = job.conclude?(outcome) ?? outcome
                self.job = nil
                host?.reportStoreNotices()
                let seconds = clock.monotonic - job.startedAt
                switch result {
                case .success: log.info("\(job.kind.rawValue) done in \(describeSeconds(seconds))")
                case .failure(let e): log.error("\(job.kind.rawValue) failed after \(describeSeconds(seconds)): \(e.parameters["message"]?.stringValue ?? e.name)")
                }
                for (c, id, _) in job.watchers {
                    c.repliesOwed -= 1
                    guard !c.closed else { continue }
                    let reply: Reply
                    switch result {
                    case .success(var p):
                        p["state"] = .string("done")
                        reply = Reply(parameters: p, id: id)
                    case .failure(let e): reply = Reply(e, id: id)
                    }
                    host?.deliver(reply.frame(), to: c)
                    host?.settle(c)
                }
                job.watchers = []
                if let waker = job.waker { loop.forget(waker.descriptor) }
                job.waker = nil
            }
        }
    }

    func progressJSON(_ job: MaintenanceJob) -> JSON {
        let p = job.progress
        return .object(["store": .string(p.store), "done": .integer(p.done), "total": .integer(p.total),
                        "fraction": .double(p.total > 0 ? min(1, Double(p.done) / Double(p.total)) : 0),
                        "elapsed": .double(clock.monotonic - job.startedAt)])
    }

    func status() -> JSON {
        guard let job else { return .null }
        return .object(["kind": .string(job.kind.rawValue), "progress": progressJSON(job)])
    }

    // MARK: - Backup

    /// Every store as one moment between saves: a read transaction opened on a connection of its
    /// own per store, here on the loop (no save runs meanwhile), then copied on the job's thread
    /// through SQLite's backup API while saves go on.
    private func beginBackup(_ p: JSONObject) -> Result<MaintenanceJob, VarlinkError> {
        guard let directory = p["directory"]?.stringValue, directory.hasPrefix("/"), !directory.contains("\u{0}") else {
            return .failure(.invalidRequest("directory must be an absolute path", field: "directory"))
        }
        if let m = migrations.run { return .failure(.maintenanceFailed("a migration is running (\(m.summary)); back up when it has ended")) }
        // A file removed or replaced under seamd is put back first: what is copied is the store.
        context.verifyFiles()
        host?.reportStoreNotices()
        let names = context.schema.configurations
        if let closed = names.first(where: { !context.storeNames.contains($0) }) {
            return .failure(.maintenanceFailed("the \(closed) store is not open (\(context.closedStores[closed] ?? "closed")); a set holds "
                                               + "every store as one moment, so none is taken"))
        }
        if FileSystem.join(directory, "") == FileSystem.join(dataDirectory, "") {
            return .failure(.invalidRequest("a backup set goes into a directory of its own, not the data directory", field: "directory"))
        }
        // The stores whole: a save that waits to complete in its second file completes first.
        do { try context.finishUnfinished() } catch {
            return .failure(.maintenanceFailed("\(error.description); no backup is taken while a save waits to complete"))
        }
        host?.refetchIfInvalidated()
        do { try BackupSet.prepare(directory) } catch { return .failure(.invalidRequest(error.description, field: "directory")) }
        var readers: [(name: String, db: Database)] = []
        do {
            for name in names {
                var o = Database.Options()
                o.readOnly = true
                let db = try Database(path: StoreLayout(directory: dataDirectory).store(name), options: o)
                try db.execute("BEGIN")
                _ = try db.scalar("SELECT count(*) FROM sqlite_schema")  // the snapshot starts here
                readers.append((name, db))
            }
        } catch {
            return .failure(.maintenanceFailed("cannot read the stores: \(error)"))
        }
        let leaseText = (try? FileSystem.read(StoreLayout(directory: dataDirectory).sequenceLease)) ?? []
        var set = BackupSet(directory: directory, createdAt: clock.now, dataDirectory: dataDirectory,
                            sequence: context.sequence, stores: [])
        for name in names {
            let versions = context.servedVersions[name] ?? [:]
            set.stores.append(BackupSet.Store(name: name, bytes: 0, versions: versions.mapValues(\.version)))
        }
        let job = MaintenanceJob(kind: .backup, now: clock.monotonic)
        log.info("backing up \(names.joined(separator: ", ")) at sequence \(set.sequence) into \(directory)")
        let handed = Handed(value: readers)
        let taken = set
        return run(job) { report in
            let readers = handed.value
            defer { for (_, db) in readers { db.close() } }
            do {
                let written = try taken.write(from: readers, leaseText: leaseText) { store, done, total in report.progress(store, done, total) }
                report.finished(.success([
                    "directory": .string(directory), "stores": .array(written.stores.map { .string($0.name) }),
                    "sequence": .integer(written.sequence), "bytes": .integer(written.stores.reduce(0) { $0 + $1.bytes }),
                ]))
            } catch {
                report.finished(.failure(.maintenanceFailed("\(error)")))
            }
        }
    }

    // MARK: - Check

    /// `PRAGMA integrity_check` of every store file, on read-only connections of the job's own.
    /// A store found damaged is closed when the check ends.
    private func beginCheck() -> Result<MaintenanceJob, VarlinkError> {
        if let m = migrations.run { return .failure(.maintenanceFailed("a migration is running (\(m.summary)); check when it has ended")) }
        // A file removed or replaced under seamd is put back first: what is checked is the store.
        context.verifyFiles()
        host?.reportStoreNotices()
        let layout = StoreLayout(directory: dataDirectory)
        let names = context.schema.configurations.filter { FileSystem.kind(layout.store($0)) == "file" }
        let job = MaintenanceJob(kind: .check, now: clock.monotonic)
        job.conclude = { [unowned self] outcome in
            guard case .success(let p) = outcome else { return outcome }
            for s in p["stores"]?.arrayValue ?? [] where s["ok"]?.boolValue == false {
                guard let name = s["store"]?.stringValue, context.storeNames.contains(name) else { continue }
                let problems = (s["problems"]?.arrayValue ?? []).compactMap(\.stringValue)
                context.markDamaged(name, "seam check (integrity_check) found " + Self.describe(problems))
            }
            return outcome
        }
        log.info("checking \(names.joined(separator: ", ")) (integrity_check)")
        return run(job) { report in
            var results: [JSON] = []
            for name in names {
                let check = StoreCheck.run(name, path: layout.store(name)) { done, total in report.progress(name, done, total) }
                results.append(.object(["store": .string(name), "ok": .bool(check.problems.isEmpty),
                                        "problems": .array(check.problems.map(JSON.string)), "seconds": .double(check.seconds)]))
            }
            report.finished(.success(["stores": .array(results)]))
        }
    }

    static func describe(_ problems: [String]) -> String {
        problems.count == 1 ? "a problem: \(problems[0])" : "\(problems.count) problems, first: \(problems.prefix(2).joined(separator: "; "))"
    }

    // MARK: - Restore

    /// Checks the set, closes the stores, copies the set's files beside them on the job's thread,
    /// then (on the loop) swaps them in and reopens the stores at a new sequence number.
    private func beginRestore(_ p: JSONObject) -> Result<MaintenanceJob, VarlinkError> {
        guard let directory = p["directory"]?.stringValue, directory.hasPrefix("/") else {
            return .failure(.invalidRequest("directory must be an absolute path", field: "directory"))
        }
        if let m = migrations.run {
            return .failure(.maintenanceFailed("a migration is running (\(m.summary)); restore when it has ended"))
        }
        if !storeDirectory.unfinishedSwap.isEmpty {
            return .failure(.maintenanceFailed("a migration's swap stopped part way; run `seam migrate` to finish it first"))
        }
        let layout = StoreLayout(directory: dataDirectory)
        let set: BackupSet
        do {
            set = try BackupSet.read(directory)
            try set.validate(for: context.schema, into: layout, fromElsewhere: p["fromElsewhere"]?.boolValue == true)
        } catch {
            return .failure(.maintenanceFailed("\(error); nothing was changed"))
        }
        let names = context.schema.configurations
        // The versions the files to be replaced hold, for the name of their generation in backups/.
        var replaced: [String: Int] = [:]
        for versions in context.servedVersions.values { for (model, v) in versions { replaced[model] = max(replaced[model] ?? 0, v.version) } }
        for name in names { context.close(name, reason: "being restored from \(directory); try again when it is back") }
        host?.storesClosed(names)
        log.info("restoring \(names.joined(separator: ", ")) from \(directory) (taken \(RFC3339.format(set.createdAt)) from "
                 + "\(set.dataDirectory), sequence \(set.sequence)); the stores are closed until it ends")
        let job = MaintenanceJob(kind: .restore, now: clock.monotonic)
        job.conclude = { [unowned self] outcome in
            var result = outcome
            if case .success = outcome {
                do {
                    let kept = try BackupSet.swap(names, into: layout, replacing: replaced)
                    result = .success(["stores": .array(names.map(JSON.string)), "backups": .array(kept.map(JSON.string))])
                } catch {
                    storeDirectory.removeCopies(names)
                    result = .failure(.maintenanceFailed("the restored files could not be swapped in: \(error)"))
                }
            } else {
                storeDirectory.removeCopies(names)
            }
            let swapped: Bool
            if case .success = result { swapped = true } else { swapped = false }
            let back = host?.reopenStores(names, changed: swapped) ?? []
            host?.resumeChannels(in: back)
            if swapped { log.info("restored from \(directory); the files they replaced are in backups/") }
            return result
        }
        return run(job) { report in
            do {
                try set.stage(into: layout) { done, total in report.progress("", done, total) }
                report.finished(.success([:]))
            } catch {
                report.finished(.failure(.maintenanceFailed("\(error); the stores serve on as they were")))
            }
        }
    }
}
