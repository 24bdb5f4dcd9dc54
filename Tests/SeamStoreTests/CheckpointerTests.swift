import Foundation
import SeamStore
import SeamSystem
import SeamTestSupport
import XCTest

/// The checkpointer: the writer's commits never checkpoint, a thread of its own does, and the
/// data is whole however the two interleave.
final class CheckpointerTests: XCTestCase {
    func testCheckpointsHappenOffTheWritersThreadAndLoseNothing() throws {
        let directory = TemporaryDirectory("checkpointer")
        let path = directory.file("store.sqlite")
        let db = try Database(path: path)
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        let checkpointer = try Checkpointer(db, durability: .normal, threshold: 20)
        XCTAssertEqual(try db.scalar("PRAGMA wal_autocheckpoint").integerValue, 0, "the writer no longer checkpoints")

        let body = String(repeating: "x", count: 3000)  // about a page a row
        for i in 0..<2_000 { try db.run("INSERT INTO t (id, body) VALUES (?, ?)", [.integer(Int64(i)), .string(body)]) }
        let deadline = Date().addingTimeInterval(10)
        while checkpointer.checkpoints < 3 && Date() < deadline { usleep(5_000) }
        XCTAssertGreaterThanOrEqual(checkpointer.checkpoints, 3)
        XCTAssertEqual(checkpointer.lastFailureCode, 0)
        // Once the checkpointer has caught up, the WAL is reused from its start: more commits
        // do not make the file bigger than the busiest stretch did.
        let caughtUp = Date().addingTimeInterval(10)
        var seen = -1
        while checkpointer.checkpoints != seen && Date() < caughtUp {  // quiet for 100 ms: caught up
            seen = checkpointer.checkpoints
            usleep(100_000)
        }
        try db.run("INSERT INTO t (id, body) VALUES (-1, 'restart')")  // starts the WAL over
        let wal = FileSystem.size(path + "-wal") ?? 0
        for i in 2_000..<2_100 {
            try db.run("INSERT INTO t (id, body) VALUES (?, ?)", [.integer(Int64(i)), .string(body)])
            if i % 10 == 0 { usleep(3_000) }  // a writer that pauses now and then, as people do
        }
        XCTAssertLessThanOrEqual(FileSystem.size(path + "-wal") ?? 0, max(wal, 250 * 4200), "the WAL was reused, not grown")

        checkpointer.stop()
        XCTAssertEqual(try db.scalar("PRAGMA wal_autocheckpoint").integerValue, 1000, "stopped: the writer checkpoints again")
        db.close()
        let again = try Database(path: path)
        XCTAssertEqual(try again.scalar("SELECT count(*) FROM t").integerValue, 2_101)
        XCTAssertEqual(try again.scalar("PRAGMA integrity_check").stringValue, "ok")
    }
}
