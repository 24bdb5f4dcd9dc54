import CSQLite
import SeamSystem
import Synchronization

/// Checkpoints a WAL store from a thread of its own, so that the thread that commits never
/// waits for pages to be copied back into the database file, for the two fdatasyncs around
/// that copy (about 10 ms each on a virtual disk), or for the WAL to be truncated afterwards
/// (which waited for writeback: 100 ms and more). Inline, those stalls were the whole long tail
/// of commit latency — the ticker's step ends were late by tens of milliseconds at p99.
///
/// The writer's connection stops checkpointing (`wal_autocheckpoint=0`) and truncating
/// (`journal_size_limit=-1`: the WAL is reused from its start after each complete checkpoint,
/// so its size stays what the busiest stretch needed), and tells the checkpointer, through
/// SQLite's WAL hook, how many frames the WAL holds after each commit. The checkpointer's own
/// connection runs a PASSIVE checkpoint once they pass `threshold`: it blocks neither the writer
/// nor readers. Only a writer that never pauses, so that no checkpoint catches up before it
/// appends again, checkpoints inline, once the WAL passes `limit`: the WAL stays bounded.
/// Durability is unchanged: the checkpoint syncs exactly as the writer's
/// connection would have (the same `synchronous`), and a crash at any point leaves a WAL that
/// SQLite recovers as always.
public final class Checkpointer: Sendable {
    /// WAL frames (pages) after which a checkpoint runs.
    public let threshold: Int
    /// WAL frames after which the writer checkpoints inline after all (eight times `threshold`).
    public var limit: Int { threshold * 8 }
    private let framesInWAL = Atomic<Int>(0)
    /// Set by the writer when the WAL passes `threshold`, cleared by the thread as it starts a
    /// checkpoint: the semaphore is posted once per request, not once per commit.
    private let requested = Atomic<Bool>(false)
    /// The thread sleeps on it between checkpoints: an idle store costs no wakeups.
    private let wakeup = Semaphore()
    private let stopping = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let completed = Atomic<Int>(0)
    private let lastFailure = Atomic<Int32>(0)
    private let writer: OneThreadDatabase

    /// Starts checkpointing `db` (a store opened for writing, in WAL mode) from a new thread.
    public init(_ db: Database, durability: Durability, threshold: Int = 1000) throws(DatabaseError) {
        self.threshold = threshold
        var options = Database.Options()
        options.durability = durability
        options.create = false
        let own = OneThreadDatabase(try Database(path: db.path, options: options))
        writer = OneThreadDatabase(db)
        try db.execute("PRAGMA wal_autocheckpoint=0")
        try db.execute("PRAGMA journal_size_limit=-1")
        sqlite3_wal_hook(db.handle, { context, connection, _, frames in
            let me = Unmanaged<Checkpointer>.fromOpaque(context!).takeUnretainedValue()
            me.framesInWAL.store(Int(frames), ordering: .relaxed)
            if Int(frames) >= me.threshold, !me.requested.exchange(true, ordering: .acquiringAndReleasing) { me.wakeup.post() }
            // A writer that never pauses never lets a checkpoint finish before it appends again,
            // and the WAL could only grow. Past the limit it checkpoints itself, as SQLite would.
            if Int(frames) >= me.limit { sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
        do {
            try Threads.detach { [self] in self.loop(own.db) }
        } catch {
            restoreWriter()
            throw DatabaseError(code: SQLITE_ERROR, message: "cannot start the checkpoint thread: \(error)", path: db.path)
        }
    }

    /// Checkpoints completed so far.
    public var checkpoints: Int { completed.load(ordering: .relaxed) }

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
            requested.store(false, ordering: .releasing)
            guard framesInWAL.load(ordering: .relaxed) >= threshold else { continue }
            var log: Int32 = 0, done: Int32 = 0
            let rc = sqlite3_wal_checkpoint_v2(db.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &done)
            if rc == SQLITE_OK {
                framesInWAL.store(Int(log - done), ordering: .relaxed)
                completed.add(1, ordering: .relaxed)
            } else {
                // Busy: the writer is checkpointing itself (past `limit`); anything else is kept.
                if rc & 0xff != SQLITE_BUSY { lastFailure.store(rc, ordering: .relaxed) }
                framesInWAL.store(0, ordering: .relaxed)
            }
        }
        db.close()
        stopped.store(true, ordering: .releasing)
    }

    /// Stops the thread (after a checkpoint in progress ends) and gives the writer its own
    /// checkpoints back. The owner must call it: the thread keeps the checkpointer alive.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wakeup.post()
        while !stopped.load(ordering: .acquiring) { Threads.sleep(0.001) }
        restoreWriter()
    }

    private func restoreWriter() {
        sqlite3_wal_hook(writer.db.handle, nil, nil)
        try? writer.db.execute("PRAGMA wal_autocheckpoint=1000")
        try? writer.db.execute("PRAGMA journal_size_limit=\(16 << 20)")
    }
}

/// A connection that one thread at a time uses: the checkpointer's own (its thread), or the
/// writer's (touched here only before the thread starts and after it has finished).
private struct OneThreadDatabase: @unchecked Sendable {
    let db: Database
    init(_ db: Database) { self.db = db }
}
