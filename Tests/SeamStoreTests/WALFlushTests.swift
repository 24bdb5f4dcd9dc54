import Foundation
import SeamStore
import SeamSystem
import SeamTestSupport
import XCTest

/// Full durability flushes the WAL itself: after every commit, or — for commits made while
/// `defersSync` is set — when the owner calls `syncDeferred()`.
final class WALFlushTests: XCTestCase {
    func open(_ directory: TemporaryDirectory, _ durability: Durability) throws -> Database {
        var options = Database.Options()
        options.durability = durability
        let db = try Database(path: directory.file("store.sqlite"), options: options)
        try db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        return db
    }

    func insert(_ db: Database, _ id: Int) throws {
        try db.run("INSERT INTO t (id, body) VALUES (?, 'x')", [.integer(Int64(id))])
    }

    func testEveryCommitIsFlushedWhenNothingDefersIt() throws {
        let directory = TemporaryDirectory("wal-flush")
        let db = try open(directory, .full)
        let before = db.walSyncs
        for i in 0..<5 { try insert(db, i) }
        XCTAssertEqual(db.walSyncs, before + 5, "one flush per commit")
        XCTAssertFalse(db.syncPending)
        try db.transaction { for i in 5..<10 { try insert(db, i) } }
        XCTAssertEqual(db.walSyncs, before + 6, "a transaction is one commit")
    }

    func testADeferredCommitWaitsForTheOwnerAndAnyLaterFlushCoversIt() throws {
        let directory = TemporaryDirectory("wal-flush")
        let db = try open(directory, .full)
        let before = db.walSyncs
        db.defersSync = true
        try insert(db, 1)
        try insert(db, 2)
        db.defersSync = false
        XCTAssertTrue(db.syncPending, "committed, not yet flushed")
        XCTAssertEqual(db.walSyncs, before)
        db.syncDeferred()
        XCTAssertFalse(db.syncPending)
        XCTAssertEqual(db.walSyncs, before + 1, "one flush for both commits")
        db.syncDeferred()
        XCTAssertEqual(db.walSyncs, before + 1, "nothing pending: no flush")

        db.defersSync = true
        try insert(db, 3)
        db.defersSync = false
        try insert(db, 4)  // flushed at once, and with it the deferred commit before it
        XCTAssertFalse(db.syncPending)
        XCTAssertEqual(db.walSyncs, before + 2)

        db.defersSync = true
        try insert(db, 5)
        db.close()  // closing flushes what awaits
        XCTAssertEqual(db.walSyncs, before + 3)
        XCTAssertEqual(try Database(path: directory.file("store.sqlite")).scalar("SELECT count(*) FROM t").integerValue, 5)
    }

    func testCommitsThatAreNotSyncedAreNeverFlushedByTheConnection() throws {
        let directory = TemporaryDirectory("wal-flush")
        let db = try open(directory, .normal)
        db.defersSync = true
        try insert(db, 1)
        db.defersSync = false
        try insert(db, 2)
        XCTAssertFalse(db.syncPending)
        XCTAssertEqual(db.walSyncs, 0)
    }

    /// The connection's WAL hook replaces SQLite's automatic checkpoint, so it checkpoints itself.
    func testTheConnectionCheckpointsAtItsOwnThreshold() throws {
        func largestWAL(autoCheckpoint: Int) throws -> Int64 {
            let directory = TemporaryDirectory("wal-flush")
            let db = try open(directory, .normal)
            db.autoCheckpointFrames = autoCheckpoint
            var largest: Int64 = 0
            let body = String(repeating: "x", count: 3000)  // about a page a row
            for i in 0..<300 {
                try db.run("INSERT INTO t (id, body) VALUES (?, ?)", [.integer(Int64(i)), .string(body)])
                largest = max(largest, FileSystem.size(directory.file("store.sqlite-wal")) ?? 0)
            }
            return largest
        }
        let checkpointing = try largestWAL(autoCheckpoint: 50)
        let never = try largestWAL(autoCheckpoint: 0)
        XCTAssertLessThan(checkpointing, 120 * 4096, "the WAL started over after a checkpoint every 50 frames or so")
        XCTAssertGreaterThan(never, 500 * 4096, "without checkpoints the WAL holds every page written")
    }

    func testTheFlusherSaysWhichCallFailedOnWhat() throws {
        XCTAssertThrowsError(try FileFlusher(path: "/nonexistent/store.sqlite-wal").sync()) { error in
            let e = error as? SystemError
            XCTAssertEqual(e?.operation, "open")
            XCTAssertEqual(e?.path, "/nonexistent/store.sqlite-wal")
        }
        FileFlusher(path: "/nonexistent/store.sqlite-wal").startWriteback()  // best effort: nothing to report, no crash
        XCTAssertThrowsError(try FileFlusher(path: "/dev/null").sync()) { error in
            XCTAssertEqual((error as? SystemError)?.operation, "fdatasync", "a file that cannot be flushed: \(error)")
        }
        let directory = TemporaryDirectory("wal-flush")
        let path = directory.file("log")
        try FileSystem.writeAtomically(Array("written".utf8), to: path)
        let flusher = FileFlusher(path: path)
        flusher.startWriteback()
        XCTAssertNoThrow(try flusher.sync())
    }
}
