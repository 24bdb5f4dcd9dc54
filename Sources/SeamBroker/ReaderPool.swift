import SeamContext
import SeamJSON
import SeamProtocol
import SeamStore
import SeamSystem
import Synchronization

/// Threads that run the broker's reads — Fetch, Count, a channel's first result, a resync's
/// bytes — so that its loop never waits on a query: each reader has read-only connections of its
/// own (WAL snapshots beside the writer) and a lower scheduling priority than the loop. Two
/// lanes: most jobs run on the light one; a client whose reads lately took long has its next
/// ones run on the heavy lane's threads, at a lower priority still. In each lane jobs are taken
/// by priority (roles and people first), then in order; each statement runs under a time budget
/// (`Database.limitRunningTime`). What a job returns goes back to the loop through the
/// broker's `Mailbox` and `EventLoop.Waker` (`Broker.onReader`).
final class ReaderPool: Sendable {
    /// What a reader thread gives a job: its connections, opened as needed. The loop may reach
    /// in (`release`) to stop a statement and close a store's connection as that store closes;
    /// `lock` is held while a job runs and while that happens.
    final class Connections: @unchecked Sendable {
        private var open: [String: Database] = [:]
        private let lock = Mutex(())
        /// The connection a statement runs on now, so that `release` can interrupt it.
        private var running: (db: Database, path: String)?
        private let runningLock = Mutex(())
        /// Set by `release` when it interrupted the statement running: the read fails as
        /// "closed", not as "too costly".
        private let releasedUnderfoot = Atomic<Bool>(false)
        private let retired: Retired
        /// Seconds a statement may run (`Database.limitRunningTime`).
        let budget: Double

        init(budget: Double, retired: Retired) {
            self.budget = budget
            self.retired = retired
        }

        /// Runs `body` with this reader's connections held: `release` waits until it ends.
        func holding<T>(_ body: () -> T) -> T { lock.withLock { _ in body() } }

        /// Runs `plan` within the budget; a statement that passes it is `budgetPassed`; a store
        /// that closed (or was opened again) since the plan was made is `storeClosed`.
        func run(_ plan: ReadPlan) throws(ReadFailure) -> ReadPlan.Result {
            guard retired.allows(plan) else { throw .storeClosed(plan.store) }
            let db: Database
            if let held = open[plan.path] { db = held } else {
                // The path must name the store's file before and after the open: between a file
                // being removed or replaced under seamd and its being put back, what stands there
                // is not the store (and would be read with the store's WAL beside it).
                let named = { plan.file.map { FileSystem.identity(plan.path)?.isSameFile(as: $0) ?? false } ?? true }
                guard named() else { throw .fileReplaced(plan.store) }
                var o = Database.Options()
                o.readOnly = true
                do { db = try Database(path: plan.path, options: o) } catch { throw ReadFailure.from(error, plan) }
                guard named() else {
                    db.close()
                    throw .fileReplaced(plan.store)
                }
                open[plan.path] = db
            }
            releasedUnderfoot.store(false, ordering: .relaxed)
            runningLock.withLock { _ in running = (db, plan.path) }
            db.limitRunningTime(until: WallClock.monotonic() + budget)
            defer {
                db.limitRunningTime(until: nil)
                runningLock.withLock { _ in running = nil }
            }
            do { return try plan.run(on: db) } catch where error.resultCode.matches(.interrupt) {
                if releasedUnderfoot.load(ordering: .relaxed) { throw .storeClosed(plan.store) }
                throw .budgetPassed(seconds: budget)
            } catch {
                throw ReadFailure.from(error, plan)
            }
        }

        /// Interrupts a statement running on `path`, waits for the job to end, and closes this
        /// reader's connection to it. Called on the loop as the store closes.
        func release(_ path: String) {
            runningLock.withLock { _ in
                guard let now = running, now.path == path else { return }
                releasedUnderfoot.store(true, ordering: .relaxed)
                now.db.interrupt()
            }
            lock.withLock { _ in open.removeValue(forKey: path)?.close() }
        }

        func closeAll() {
            lock.withLock { _ in
                for db in open.values { db.close() }
                open = [:]
            }
        }
    }

    /// The attachments of each store file that have closed: a plan made for one of them reads
    /// a file that is no longer the store (or is being replaced), and is refused.
    final class Retired: Sendable {
        private let closed = Mutex<[String: Int]>([:])

        func retire(_ path: String, attachment: Int) { closed.withLock { $0[path] = max($0[path] ?? 0, attachment) } }

        func allows(_ plan: ReadPlan) -> Bool { closed.withLock { plan.attachment > ($0[plan.path] ?? 0) } }
    }

    enum ReadFailure: Error {
        case budgetPassed(seconds: Double)
        /// The store closed, or was opened again, between the plan and the read.
        case storeClosed(String)
        /// The store's path names another file for now (removed or replaced, being put back).
        case fileReplaced(String)
        /// SQLite found the store's file damaged.
        case damaged(store: String, DatabaseError)
        case database(DatabaseError)

        static func from(_ error: DatabaseError, _ plan: ReadPlan) -> ReadFailure {
            error.resultCode.isDamage ? .damaged(store: plan.store, error) : .database(error)
        }
    }

    /// How urgent a job is: the built-in roles' and people's calls go first.
    enum Priority: Int, Comparable, Sendable {
        case role = 0, person = 1, plugin = 2
        static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    /// Which threads run a job: a client whose reads have lately taken long (`Connection.readLane`)
    /// has its next ones run on threads of their own, at a lower priority, so that they never
    /// hold the threads everyone else's short reads run on.
    enum Lane: Sendable {
        case light, heavy
    }

    private struct Job: Sendable {
        var priority: Priority
        var work: @Sendable (Connections) -> Void
    }

    /// One lane's queue and threads.
    private final class LaneThreads: Sendable {
        private struct Queue {
            var jobs: [Job] = []
            var stopping = false
            var running = 0
        }

        private let queue = Mutex(Queue())
        private let available = Semaphore()
        let count: Int

        init(count: Int, niceness: Int32, readers: [Connections]) throws(SystemError) {
            self.count = count
            for connections in readers {
                try Threads.detach { [self] in
                    Threads.lowerPriorityOfThisThread(by: niceness)
                    // The light lane's short reads are let in as soon as they are queued.
                    if niceness == 0 { Threads.requestShortSlices() }
                    serve(connections)
                }
            }
        }

        func submit(_ job: Job) {
            queue.withLock { q in
                // After every job of its priority or a more urgent one, before the others.
                let at = q.jobs.firstIndex { $0.priority > job.priority } ?? q.jobs.count
                q.jobs.insert(job, at: at)
            }
            available.post()
        }

        var load: (waiting: Int, running: Int) { queue.withLock { ($0.jobs.count, $0.running) } }

        private func serve(_ connections: Connections) {
            while true {
                available.wait()
                let next: Job? = queue.withLock { q in
                    if q.stopping || q.jobs.isEmpty { return nil }
                    q.running += 1
                    return q.jobs.removeFirst()
                }
                guard let job = next else {
                    if queue.withLock({ $0.stopping }) { break }
                    continue
                }
                connections.holding { job.work(connections) }
                queue.withLock { $0.running -= 1 }
            }
            connections.closeAll()
        }

        func stop() {
            queue.withLock { q in
                q.stopping = true
                q.jobs = []
            }
            for _ in 0..<count { available.post() }
        }
    }

    private let retired: Retired
    /// Every reader thread's connections, light lane first.
    private let readers: [Connections]
    private let light: LaneThreads
    private let heavy: LaneThreads
    let budget: Double

    /// Starts `threads` readers for the light lane (at least one) and `heavyThreads` for the
    /// heavy one, each statement limited to `budget` seconds.
    init(threads: Int, heavyThreads: Int, budget: Double) throws(SystemError) {
        self.budget = budget
        let retired = Retired()
        self.retired = retired
        let lightReaders = (0..<max(1, threads)).map { _ in Connections(budget: budget, retired: retired) }
        let heavyReaders = (0..<max(1, heavyThreads)).map { _ in Connections(budget: budget, retired: retired) }
        readers = lightReaders + heavyReaders
        light = try LaneThreads(count: lightReaders.count, niceness: 0, readers: lightReaders)
        heavy = try LaneThreads(count: heavyReaders.count, niceness: 19, readers: heavyReaders)
    }

    /// Queues `work` for a reader of `lane`; it runs on that reader's thread with its connections.
    func submit(priority: Priority, lane: Lane = .light, _ work: @escaping @Sendable (Connections) -> Void) {
        (lane == .light ? light : heavy).submit(Job(priority: priority, work: work))
    }

    /// Threads in each lane.
    var threads: (light: Int, heavy: Int) { (light.count, heavy.count) }

    /// Jobs waiting and running now, in each lane (for Status).
    var load: (light: (waiting: Int, running: Int), heavy: (waiting: Int, running: Int)) { (light.load, heavy.load) }

    /// Lets go of store file `path` as its attachment closes: a read running on it is stopped
    /// (its caller is told the store closed), every reader's connection to it closes, and reads
    /// planned before are refused. Returns when no reader holds the file.
    func release(_ path: String, attachment: Int) {
        retired.retire(path, attachment: attachment)
        for r in readers { r.release(path) }
    }

    /// Stops the readers once the jobs running now end; jobs not started are dropped.
    func stop() {
        light.stop()
        heavy.stop()
    }
}

extension ReaderPool {
    /// As `Status` shows the reader threads: jobs waiting and running in each lane, and the
    /// limits they and the loop run under.
    func status(limits: BrokerLimits) -> JSON {
        let load = self.load
        return .object([
            "light": .object(["threads": .integer(Int64(threads.light)), "waiting": .integer(Int64(load.light.waiting)),
                              "running": .integer(Int64(load.light.running))]),
            "heavy": .object(["threads": .integer(Int64(threads.heavy)), "waiting": .integer(Int64(load.heavy.waiting)),
                              "running": .integer(Int64(load.heavy.running))]),
            "limits": .object(["predicateCost": .integer(Int64(limits.predicateCost)), "querySeconds": .double(limits.querySeconds),
                               "callsPerTurn": .integer(Int64(limits.callsPerTurn)),
                               "pluginSaveOperations": .integer(Int64(limits.pluginSaveOperations)),
                               "checkpointFrames": .integer(Int64(limits.checkpointFrames))]),
        ])
    }
}
