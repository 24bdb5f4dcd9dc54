import CSQLite
import SeamMetrics
import SeamSystem
import Synchronization

/// Checkpoints a WAL store from a thread of its own, so that the thread that commits never
/// copies pages back into the database file or waits on the fdatasyncs around that copy.
///
/// - The writer's connection stops checkpointing (`autoCheckpointFrames = 0`) and truncating
///   (`journal_size_limit=-1`), and reports the WAL's frames after each commit through SQLite's
///   WAL hook. Past `threshold` frames not copied back, the thread runs PASSIVE checkpoints (they
///   block neither the writer nor readers) until fewer than `catchUpFrames` are left.
/// - SQLite starts the WAL over only when a write begins with every frame copied back. The last
///   frames are copied when the writer is idle: its owner calls `catchUp()` between requests,
///   which asks the thread for one more checkpoint (it never checkpoints on the caller's thread).
///   A commit that overtakes the catch-up leaves frames behind it; the next catch-up is spaced
///   out (`catchUpDue`), so a steady writer is not chased with a checkpoint per commit.
/// - A writer that outpaces the thread (or never pauses long enough for a catch-up) checkpoints
///   inline once the WAL passes `limit`, so the WAL stays bounded — unless its owner holds its
///   writes when asked (it set `whenWritesResume`): then past `limit`, `holdsWrites` asks it to
///   start no write into the store while the thread copies back everything (a drain, two
///   fdatasyncs), `whenWritesResume` tells it when to go on, and the next commit starts the WAL
///   over. The owner's other stores, and every reader, go on meanwhile. Such an owner's writer
///   checkpoints inline only past `hardLimit`.
/// - Beside it, `WALReadAhead` keeps the pages the writer is about to overwrite in the kernel's
///   page cache, so that a commit does not wait for the disk to read one back.
///
/// Durability is unchanged: every checkpoint syncs as the writer's connection would (the same
/// `synchronous`), and a crash at any point leaves a WAL that SQLite recovers. ARCHITECTURE.md
/// ("Checkpoints") has the measurements behind these choices.
public final class Checkpointer: Sendable {
    /// WAL frames (pages) not yet copied back after which a checkpoint runs.
    public let threshold: Int
    /// The most frames a catch-up copies: the thread's round goes on until fewer are
    /// left. 500 frames (2 MiB, a few milliseconds to copy), or `threshold` if that is lower.
    public var catchUpFrames: Int { min(threshold, 500) }
    /// WAL frames after which the writer checkpoints inline after all: eight times `threshold`,
    /// but no more than 8,000 frames (32 MiB of WAL) unless `threshold` is above 4,000, and at
    /// least twice `threshold`.
    public var limit: Int { max(threshold * 2, min(threshold * 8, 8_000)) }
    /// WAL frames after which the writer of an owner that holds its writes (`holdsWrites`)
    /// checkpoints inline after all (it went on writing): three times `limit`.
    public var hardLimit: Int { limit * 3 }
    /// Frames in the WAL after the last commit; the writer's thread alone writes it.
    private let framesInWAL = Atomic<Int>(0)
    /// How often the WAL has started over, as the writer's WAL hook sees it (its frames shrank).
    private let generation = Atomic<Int>(0)
    /// The frames the last checkpoint copied back, and the generation they belong to
    /// (`generation << 32 | frames`): from another generation, they say nothing.
    private let copied = Atomic<Int>(0)
    /// Set by the writer when it asks the thread for a checkpoint, cleared by the thread once the
    /// round of checkpoints it started has finished: one request at a time, and the writer's own
    /// catch-up waits for it.
    private let busy = Atomic<Bool>(false)
    /// The WAL (generation and frames, as in `copied`) the writer last caught up on: a catch-up
    /// that a reader kept from finishing is not tried again before the next commit.
    private let caughtUpOn = Atomic<Int>(-1)
    /// Set with `busy` when the writer asks for a catch-up rather than a round: one checkpoint.
    private let catchUpAsked = Atomic<Bool>(false)
    /// Where the last catch-up stands (a `CatchUp` state), and how long its checkpoint took: the writer's
    /// next commit tells whether a commit overtook it.
    private let catchUpState = Atomic<Int>(CatchUp.none)
    private let catchUpTook = Atomic<Int>(0)
    /// The earliest time for the next catch-up, in microseconds of the monotonic clock.
    private let nextCatchUp = Atomic<Int>(0)
    /// The thread sleeps on it between checkpoints: an idle store costs no wakeups.
    private let wakeup = Semaphore()
    /// Set from the commit that passed `holdFrom` until the drain that it asked for has ended.
    private let holding = Atomic<Bool>(false)
    private let drainAsked = Atomic<Bool>(false)
    /// The WAL's frames from which a commit starts a hold: `limit`, or, after a drain that a
    /// reader's snapshot kept from copying everything, a `threshold` past where it stopped (no
    /// hold per commit while the reader reads); back to `limit` when the WAL starts over.
    private let holdFrom = Atomic<Int>(0)
    /// Told, on the checkpointer's thread, when a hold ends.
    private let resumed = Mutex<(@Sendable () -> Void)?>(nil)
    /// Whether the owner holds its writes when asked (it set `whenWritesResume`).
    private let ownerHolds = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let completed = Atomic<Int>(0)
    /// How long each checkpoint of the thread's took, for seamd's metrics.
    private let durations = Mutex(Histogram(bounds: Histogram.seconds))
    private let drains = Atomic<Int>(0)
    private let lastFailure = Atomic<Int32>(0)
    private let writer: OneThreadDatabase
    /// Keeps the WAL's next pages in the page cache for the writer (nil: a WAL it cannot name).
    private let readAhead: WALReadAhead?

    /// Starts checkpointing `db` (a store opened for writing, in WAL mode) from a new thread.
    ///
    /// The default `threshold`, 4,000 frames (16 MiB of WAL with 4 KiB pages), is the writer's own
    /// `Database.autoCheckpointFrames`: each checkpoint costs two fdatasyncs that the writer's next
    /// flush queues behind on the same disk, so fewer is better (ARCHITECTURE.md, "Checkpoints").
    public init(_ db: Database, durability: Durability, threshold: Int = 4000) throws(DatabaseError) {
        self.threshold = threshold
        var options = Database.Options()
        options.durability = durability
        options.create = false
        let own = OneThreadDatabase(try Database(path: db.path, options: options))
        writer = OneThreadDatabase(db)
        if let wal = db.walPath, case .integer(let pageSize) = try db.scalar("PRAGMA page_size") {
            readAhead = try? WALReadAhead(path: wal, pageSize: Int(pageSize))
        } else {
            readAhead = nil
        }
        holdFrom.store(limit, ordering: .relaxed)
        db.autoCheckpointFrames = 0
        try db.execute("PRAGMA journal_size_limit=-1")
        db.walObserver = { [unowned self] frames, connection in self.committed(frames, connection) }
        do {
            try Threads.detach { [self] in self.loop(own.db) }
        } catch {
            readAhead?.stop()
            restoreWriter()
            throw DatabaseError(code: SQLITE_ERROR, message: "cannot start the checkpoint thread: \(error)", path: db.path)
        }
    }

    /// The WAL hook, on the writer's thread, after each commit.
    private func committed(_ frames: Int, _ connection: OpaquePointer?) {
        // Fewer frames than after the last commit: this commit started the WAL over. (A single
        // commit bigger than the whole WAL was would go unnoticed: its frames would count as
        // copied, and the next catch-up would copy them, which only costs that one a longer wait.)
        let restarted = frames < framesInWAL.load(ordering: .relaxed)
        if restarted {
            generation.add(1, ordering: .releasing)
            holdFrom.store(limit, ordering: .relaxed)
        }
        framesInWAL.store(frames, ordering: .relaxed)
        readAhead?.committed(frames: frames)
        judgeCatchUp(restarted: restarted)
        // A writer that outpaces the thread (or never pauses to catch up) never lets the WAL
        // start over, and it could only grow. Past `limit` the owner is asked to hold its writes
        // while the thread drains the WAL; past `hardLimit` (an owner that went on writing) the
        // writer checkpoints itself, as SQLite would, and the thread starts no more rounds.
        let holds = ownerHolds.load(ordering: .acquiring)
        if frames >= (holds ? hardLimit : limit) {
            checkpoint(connection)
        } else if holds, frames >= holdFrom.load(ordering: .relaxed), !holding.exchange(true, ordering: .acquiringAndReleasing) {
            drainAsked.store(true, ordering: .releasing)
            wakeup.post()
        } else {
            askForRound(frames)
        }
    }

    /// Whether the owner should start no write into this store for now: the WAL passed `limit`
    /// and the thread is copying it all back (`whenWritesResume` says when it has). Reads go on.
    public var holdsWrites: Bool { holding.load(ordering: .acquiring) }

    /// Sets what is told, on the checkpointer's thread, each time a hold ends (or the
    /// checkpointer stops while holding). An owner that sets it holds its writes when asked
    /// (`holdsWrites`); nil: it does not, and its writer checkpoints inline past `limit`.
    public func whenWritesResume(_ tell: (@Sendable () -> Void)?) {
        resumed.withLock { $0 = tell }
        ownerHolds.store(tell != nil, ordering: .releasing)
        if tell == nil { endHold() }
    }

    /// Ends a hold, and tells the owner.
    private func endHold() {
        guard holding.exchange(false, ordering: .acquiringAndReleasing) else { return }
        resumed.withLock { $0 }?()
    }

    /// The states of a catch-up, in `catchUpState`.
    private enum CatchUp {
        static let none = 0
        /// Asked for; the thread's checkpoint has not ended, and no commit has come since.
        static let running = 1
        /// A commit came while it ran: it was overtaken (the thread sets the wait when it ends).
        static let overtaken = 2
        /// It ended before any commit: the writer's next commit judges it.
        static let ended = 3
    }

    /// On the writer's thread, at each commit: a catch-up that ended before this commit was
    /// overtaken if the commit did not start the WAL over (the writer's transaction began before
    /// the copy ended); one still running is, whatever happens. An overtaken one spaces the next.
    /// (Judged by the clock at the end of the copy instead, a transaction begun during the copy
    /// and committed after it passed for not overtaking: a checkpoint per commit.)
    private func judgeCatchUp(restarted: Bool) {
        switch catchUpState.load(ordering: .acquiring) {
        case CatchUp.running:
            if catchUpState.compareExchange(expected: CatchUp.running, desired: CatchUp.overtaken, ordering: .acquiringAndReleasing).exchanged { return }
            judgeCatchUp(restarted: restarted)  // it ended meanwhile
        case CatchUp.ended:
            catchUpState.store(CatchUp.none, ordering: .releasing)
            let wait = restarted ? 0 : Self.microseconds() + Self.spacing(took: catchUpTook.load(ordering: .relaxed))
            nextCatchUp.store(wait, ordering: .relaxed)
        default:
            break
        }
    }

    /// Wakes the thread for a round if `frames` (below `limit`) leave a threshold's backlog and
    /// no round is running.
    private func askForRound(_ frames: Int) {
        if frames < innerLimit, frames - copiedFrames >= threshold, !busy.exchange(true, ordering: .acquiringAndReleasing) {
            wakeup.post()
        }
    }

    /// Where the writer checkpoints inline, and the thread starts no more rounds.
    private var innerLimit: Int { ownerHolds.load(ordering: .acquiring) ? hardLimit : limit }

    private static func microseconds() -> Int { Int(WallClock.monotonic() * 1e6) }

    /// A generation and a frame count in one word, as `copied` and `caughtUpOn` keep them.
    private static func tag(_ generation: Int, _ frames: Int) -> Int { (generation & 0x7fff_ffff) << 32 | frames }

    /// The current WAL, generation and frames, in the form `copied` and `caughtUpOn` keep.
    private var stamp: Int { Self.tag(generation.load(ordering: .acquiring), framesInWAL.load(ordering: .relaxed)) }

    /// The frames of the current WAL that a checkpoint has copied back (0: none, or the WAL has
    /// started over since).
    private var copiedFrames: Int {
        let c = copied.load(ordering: .acquiring)
        return c >> 32 == Self.tag(generation.load(ordering: .acquiring), 0) >> 32 ? c & 0xffff_ffff : 0
    }

    /// Whether the writer's thread should `catchUp` now: the thread has copied back the bulk of
    /// the WAL, and the frames committed meanwhile (fewer than `catchUpFrames`: a larger backlog
    /// is the thread's) are all that keeps it from starting over.
    /// A catch-up that a commit overtook left frames behind it, and the WAL did not start over:
    /// the next one waits four times as long as that one took, and at least 5 ms (`spacing`), so
    /// that a writer that never pauses for long is not chased with a checkpoint per commit.
    public var catchUpDue: Bool {
        guard !busy.load(ordering: .acquiring) else { return false }
        let done = copiedFrames, frames = framesInWAL.load(ordering: .relaxed)
        guard done > 0 && frames > done && frames - done < catchUpFrames && caughtUpOn.load(ordering: .relaxed) != stamp else { return false }
        return Self.microseconds() >= nextCatchUp.load(ordering: .relaxed)
    }

    /// The wait after an overtaken catch-up (see `catchUpDue`), in microseconds.
    static func spacing(took: Int) -> Int { max(5_000, took * 4) }

    /// Asks the thread to copy back what its last round left: fewer than `catchUpFrames` pages
    /// and two fdatasyncs, after which the writer's next commit starts the WAL over. The writer's
    /// thread (the broker's loop) calls it when it has nothing else to do; it only wakes the
    /// thread, so no request waits behind the copy or its syncs.
    public func catchUp() {
        guard catchUpDue, !holdsWrites, !busy.exchange(true, ordering: .acquiringAndReleasing) else { return }
        caughtUpOn.store(stamp, ordering: .relaxed)
        catchUpState.store(CatchUp.running, ordering: .releasing)
        catchUpAsked.store(true, ordering: .releasing)
        wakeup.post()
    }

    /// A PASSIVE checkpoint on `connection`, its outcome recorded: what it copied back, counted
    /// for `generation` (by default the current one; the thread passes the one from before it
    /// began, in case the WAL started over meanwhile).
    private func checkpoint(_ connection: OpaquePointer?, generation: Int? = nil) {
        let generation = generation ?? self.generation.load(ordering: .acquiring)
        var log: Int32 = 0, done: Int32 = 0
        let started = WallClock.monotonic()
        let rc = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &done)
        let took = WallClock.monotonic() - started
        if rc == SQLITE_OK { durations.withLock { $0.observe(took) } }
        if rc == SQLITE_OK {
            copied.store(Self.tag(generation, Int(done)), ordering: .releasing)
            completed.add(1, ordering: .relaxed)
            if done == log, log > 0 { readAhead?.startsOver() }
        } else if rc & 0xff != SQLITE_BUSY {
            // Busy: another checkpoint is running (the writer's own past `limit`, or the thread's).
            // Anything else is kept for Status; a later round tries again.
            lastFailure.store(rc, ordering: .relaxed)
        }
    }

    /// How long the checkpoints completed so far took, in seconds.
    public var checkpointSeconds: Histogram { durations.withLock { $0 } }

    /// Checkpoints completed so far.
    public var checkpoints: Int { completed.load(ordering: .relaxed) }

    /// How often the WAL has started over (a commit found every frame copied back).
    public var restarts: Int { generation.load(ordering: .relaxed) }

    /// Whether the thread is running a round or a catch-up.
    public var isBusy: Bool { busy.load(ordering: .acquiring) }

    /// Frames in the WAL after the last commit: back near 0 each time the WAL starts over (about
    /// once per `threshold` frames); one that keeps growing past `limit` means the checkpoints
    /// cannot finish (a reader holding an old snapshot, a failing disk).
    public var walFrames: Int { framesInWAL.load(ordering: .relaxed) }

    /// What the last failed checkpoint said (nil: none has failed), for `Status`.
    public var lastFailureMessage: String? {
        let code = lastFailureCode
        return code == 0 ? nil : "\(String(cString: sqlite3_errstr(code))) (SQLite code \(code))"
    }

    /// The SQLite result code of the last checkpoint that failed other than busy (0: none has).
    /// A failed one (disk full, an I/O error) leaves the pages in the WAL; a later round tries again.
    public var lastFailureCode: Int32 { lastFailure.load(ordering: .relaxed) }

    private func loop(_ db: Database) {
        while true {
            wakeup.wait()
            if stopping.load(ordering: .acquiring) { break }
            if drainAsked.exchange(false, ordering: .acquiringAndReleasing) {
                drain(db)
                continue
            }
            var progressed = false
            if catchUpAsked.exchange(false, ordering: .acquiringAndReleasing) {
                // A catch-up: the last frames, once. Frames committed meanwhile wait for the
                // writer's next idle turn to ask again (chasing them would checkpoint once a
                // commit under a steady writer).
                let started = Self.microseconds()
                checkpoint(db.handle, generation: generation.load(ordering: .acquiring))
                let ended = Self.microseconds()
                catchUpTook.store(ended - started, ordering: .relaxed)
                if !catchUpState.compareExchange(expected: CatchUp.running, desired: CatchUp.ended, ordering: .acquiringAndReleasing).exchanged {
                    nextCatchUp.store(ended + Self.spacing(took: ended - started), ordering: .relaxed)
                    catchUpState.store(CatchUp.none, ordering: .releasing)
                }
                busy.store(false, ordering: .releasing)
                continue
            }
            repeat {
                // The generation before the checkpoint: if the WAL starts over while it runs, what
                // it copied belongs to the old WAL and must not count for the new one.
                let copiedBefore = copiedFrames
                checkpoint(db.handle, generation: generation.load(ordering: .acquiring))
                progressed = copiedFrames > copiedBefore
                // What the writer committed meanwhile is the thread's too until less than a
                // catch-up is left, as long as each round gets further (a reader's snapshot can
                // hold it back) and the writer has not passed `limit` (its checkpoints then).
            } while progressed && !stopping.load(ordering: .acquiring) && framesInWAL.load(ordering: .relaxed) < innerLimit
                && !drainAsked.load(ordering: .acquiring) && framesInWAL.load(ordering: .relaxed) - copiedFrames >= catchUpFrames
            busy.store(false, ordering: .releasing)
            // A commit that found the thread still busy asked for nothing: a round is due now if
            // it would have asked (unless a reader holds the copy back: no spinning on it).
            if progressed { askForRound(framesInWAL.load(ordering: .relaxed)) }
        }
        db.close()
        endHold()
        stopped.store(true, ordering: .releasing)
    }

    /// A hold's drain: checkpoints until every frame there was when it began is copied back (the
    /// writes held, the next commit starts the WAL over), or one gets no further (a reader's
    /// snapshot holds the rest), or the WAL passed `hardLimit` (a writer that did not hold, and
    /// checkpoints itself: the thread stands aside). Then lets the writes go on; with frames left
    /// behind, the next hold waits for another `threshold` of them (no hold per commit).
    private func drain(_ db: Database) {
        let target = framesInWAL.load(ordering: .relaxed)
        var progressed = true
        while progressed, !stopping.load(ordering: .acquiring), copiedFrames < target, framesInWAL.load(ordering: .relaxed) < hardLimit {
            let before = copiedFrames
            checkpoint(db.handle, generation: generation.load(ordering: .acquiring))
            progressed = copiedFrames > before
        }
        let frames = framesInWAL.load(ordering: .relaxed)
        if copiedFrames < frames { holdFrom.store(frames + threshold, ordering: .relaxed) }
        drains.add(1, ordering: .relaxed)
        endHold()
    }

    /// Holds ended so far (each a drain of the WAL while the owner held its writes).
    public var holds: Int { drains.load(ordering: .relaxed) }

    /// Stops the thread (after a checkpoint in progress ends) and gives the writer its own
    /// checkpoints back. The owner must call it: the thread keeps the checkpointer alive.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        readAhead?.stop()
        wakeup.post()
        while !stopped.load(ordering: .acquiring) { Threads.sleep(0.001) }
        restoreWriter()
    }

    private func restoreWriter() {
        writer.db.walObserver = nil
        writer.db.autoCheckpointFrames = 1000
        try? writer.db.execute("PRAGMA journal_size_limit=\(16 << 20)")
    }
}

/// A connection that one thread at a time uses: the checkpointer's own (its thread), or the
/// writer's (touched here only before the thread starts and after it has finished).
private struct OneThreadDatabase: @unchecked Sendable {
    let db: Database
    init(_ db: Database) { self.db = db }
}
