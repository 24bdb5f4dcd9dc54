import Foundation
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// Migration from every old release of the timer app, compared with a fresh current store.
final class MigrationTests: StoreTestCase {
    /// Attaches the original kept in backups/ to a connection on the migrated store.
    func withBackup(_ dir: String, _ configuration: String, _ body: (Database) throws -> Void) throws {
        var o = Database.Options()
        o.uri = true
        let db = try Database(path: dir + "/\(configuration).sqlite", options: o)
        try db.run("ATTACH DATABASE ? AS old", [.string(Database.readOnlyURI(newestBackup(in: dir, of: "Cloud")))])
        try body(db)
    }

    func testFromRelease1EveryRowArrivesWithRenamesDefaultsAndTheCustomStage() throws {
        let dir = try fixture(release: 1, rows: 40, in: "r1")
        let report = try migrateAndCompare(dir)
        XCTAssertEqual(report.configurations.sorted(), ["Cloud", "Local"], "the Run entity moved, so both files changed")
        XCTAssertEqual(report.rowsCopied, 40 * 5, "Timer, Folder, Run, SyncToken, SyncRecord; not the removed Setting")
        try withBackup(dir, "Cloud") { db in
            // title → name, folderUUID → groupUUID, nil colour → "blue", duration → one step; the
            // icon v2 gave timers it added it to ("timer"), not the "clock" v3 gave new ones.
            let mismatches = try db.scalar("""
                SELECT count(*) FROM old.Timer o LEFT JOIN main.Timer n ON n.uuid = o.uuid
                WHERE n.uuid IS NULL OR n.name IS NOT o.title OR n.groupUUID IS NOT o.folderUUID
                   OR n.colour IS NOT coalesce(o.colour, 'blue') OR n.createdAt IS NOT o.createdAt
                   OR n.icon != 'timer' OR n.repeatCount != 1 OR n.sortOrder != 0
                   OR n.steps != json_array(json_object('label', o.title, 'seconds', o.duration))
                """)
            XCTAssertEqual(mismatches, .integer(0))
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM old.Timer WHERE colour IS NULL").integerValue.map { $0 > 0 }, true,
                           "the fixture has nil colours to fill")
            let groups = try db.scalar("""
                SELECT count(*) FROM old.Folder o JOIN main.UserGroup n USING (uuid) WHERE n.name = o.name AND n.createdAt = o.createdAt
                """)
            XCTAssertEqual(groups, .integer(40), "Folder → UserGroup")
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM main.sqlite_schema WHERE name IN ('Run', 'Setting', 'Folder')"),
                           .integer(0), "removed and moved tables are gone from Cloud")
        }
        let local = try open(dir + "/Local.sqlite")
        try local.run("ATTACH DATABASE ? AS old", [.string(newestBackup(in: dir, of: "Cloud"))])
        let runs = try local.scalar("""
            SELECT count(*) FROM old.Run o JOIN main.Session n USING (uuid)
            WHERE n.timerUUID = o.timerUUID AND n.stepEndsAt = o.endsAt AND n.startedAt = o.startedAt AND n.state = o.state
              AND n.stepIndex = 0 AND n.round = 0 AND n.steps = '[]'
            """)
        XCTAssertEqual(runs, .integer(40), "Run moved from Cloud to Local and became Session")
    }

    func testFromRelease2() throws {
        let dir = try fixture(release: 2, rows: 25, in: "r2")
        let report = try migrateAndCompare(dir)
        XCTAssertEqual(report.rowsCopied, 25 * 5)
        try withBackup(dir, "Cloud") { db in
            XCTAssertEqual(try db.scalar("""
                SELECT count(*) FROM old.Timer o JOIN main.Timer n USING (uuid)
                WHERE n.steps = o.steps AND n.icon = o.icon AND n.name = o.name AND n.groupUUID IS o.folderUUID
                """), .integer(25), "steps and icon are carried, not reset to defaults")
        }
    }

    func testFromRelease3BothFilesChange() throws {
        let dir = try fixture(release: 3, rows: 25, in: "r3")
        let report = try migrateAndCompare(dir)
        XCTAssertEqual(report.configurations, ["Cloud", "Local"], "Cloud gains Timer.sound (v6); Run → Session")
        XCTAssertEqual(report.rowsCopied, 25, "Cloud is altered in place; only Local's runs are copied")
        XCTAssertEqual(try count(dir + "/Local.sqlite", "Session"), 25)
    }

    /// A current Cloud beside a Local of release 3: only Local changes.
    func testAFileWhoseShapeDidNotChangeIsNotRewritten() throws {
        let dir = try mixedFixture(cloud: TimerApp.releases.count, local: 3, rows: 25, in: "r3-local")
        let cloudBefore = try bytes(dir + "/Cloud.sqlite")
        let report = try migrateAndCompare(dir)
        XCTAssertEqual(report.configurations, ["Local"])
        XCTAssertEqual(try bytes(dir + "/Cloud.sqlite"), cloudBefore, "a file whose shape did not change is not rewritten")
        XCTAssertEqual(try count(dir + "/Local.sqlite", "Session"), 25)
    }

    func testAFinishedRunGetsItsFinishTime() throws {
        let dir = try fixture(release: 2, rows: 6, in: "finished")
        do {
            let db = try Database(path: dir + "/Cloud.sqlite")
            try db.run("UPDATE Run SET state = 'finished' WHERE uuid IN (SELECT uuid FROM Run ORDER BY uuid LIMIT 2)")
        }
        _ = try migrateAndCompare(dir)
        let local = try open(dir + "/Local.sqlite")
        XCTAssertEqual(try local.scalar("SELECT count(*) FROM Session WHERE state = 'finished' AND finishedAt = stepEndsAt"), .integer(2))
        XCTAssertEqual(try local.scalar("SELECT count(*) FROM Session WHERE state != 'finished' AND finishedAt IS NULL"), .integer(4))
    }

    /// Release 3 kept every run of a timer; from version 4 a timer has one session. Its run still
    /// going (else its latest) keeps the link; its other runs arrive unlinked, none lost.
    func testTheRunsOfATimerBecomeOneLinkedSessionAndOthersKept() throws {
        let dir = try fixture(release: 3, rows: 6, in: "reruns")
        let (timer, first): (String, String)
        do {
            let db = try Database(path: dir + "/Local.sqlite")
            let row = try db.rows("SELECT timerUUID, uuid FROM Run ORDER BY uuid LIMIT 1", [], types: [.string, .string])[0]
            (timer, first) = (try XCTUnwrap(row[0].stringValue), try XCTUnwrap(row[1].stringValue))
            // Two earlier finished runs of the same timer, and one of another timer's.
            for (n, offset) in [(1, -7200.0), (2, -3600.0)] {
                try db.run("""
                    INSERT INTO Run (uuid, timerUUID, state, startedAt, endsAt, stepIndex)
                    SELECT '00000000-0000-4000-8000-00000000000\(n)', timerUUID, 'finished', startedAt + ?, endsAt + ?, stepIndex
                    FROM Run WHERE uuid = ?
                    """, [.double(offset), .double(offset), .string(first)])
            }
            try db.run("UPDATE Run SET state = 'running' WHERE uuid = ?", [.string(first)])
        }
        _ = try migrateAndCompare(dir)
        let local = try open(dir + "/Local.sqlite")
        XCTAssertEqual(try count(dir + "/Local.sqlite", "Session"), 8, "every run arrives")
        XCTAssertEqual(try local.scalar("SELECT uuid FROM Session WHERE timerUUID = ?", [.string(timer)]), .string(first),
                       "the run still going keeps the link")
        XCTAssertEqual(try local.scalar("SELECT count(*) FROM Session WHERE timerUUID IS NULL AND uuid LIKE '00000000-%'"), .integer(2))
    }

    /// Rows of an entity that moved to the other file (release 2's runs, in Cloud) are never
    /// left behind: beside a Local that is already current, which would not receive them, the
    /// plan is refused, saying what to do.
    func testMovedRowsAreNotDroppedWhenTheirNewFileIsCurrent() throws {
        let dir = try mixedFixture(cloud: 2, local: TimerApp.releases.count, rows: 5, in: "moved")
        XCTAssertThrowsError(try StoreDirectory(path: dir, schema: TimerApp.schema).plan()) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("Run") && text.contains("Session") && text.contains("Move Local.sqlite aside"), text)
        }
    }

    /// A reader whose snapshot is older than the last commits (an sqlite3 shell, a backup tool)
    /// keeps them from being folded into the file: the migration stops and says so, and those
    /// commits stay. (The copy is built from the file alone, and the swap removes the WAL.)
    func testAReaderHoldingBackTheWALStopsTheMigrationAndLosesNothing() throws {
        let dir = try fixture(release: 5, rows: 10, in: "held")
        let path = dir + "/Cloud.sqlite"
        let reader = try Database(path: path)
        try reader.execute("BEGIN; SELECT count(*) FROM Timer")
        let writer = try Database(path: path)
        try writer.execute("UPDATE Timer SET name = 'renamed before the migration'")
        writer.close()  // its checkpoint cannot pass the reader's snapshot: the commit stays in the WAL
        XCTAssertThrowsError(try StoreDirectory(path: dir, schema: TimerApp.schema).migrate()) { error in
            XCTAssertTrue("\(error)".contains("in use by another process"), "\(error)")
        }
        try reader.execute("COMMIT")
        reader.close()
        let db = try Database(path: path)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM Timer WHERE name = 'renamed before the migration'"), .integer(10))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/backups"), "nothing was swapped")
    }

    /// A release-1 Cloud file (runs in Cloud) beside a release-3 Local file (runs in Local):
    /// both hold the runs, and a copy from one dropped the other's, under a note that the entity
    /// was removed. The plan is refused, naming both, and nothing changes.
    func testAnEntityHeldByTwoFilesIsRefusedNotHalfCopied() throws {
        let dir = try mixedFixture(cloud: 1, local: 3, rows: 5, in: "both")
        let before = try ["Cloud", "Local"].map { try Data(contentsOf: URL(fileURLWithPath: dir + "/\($0).sqlite")) }
        XCTAssertThrowsError(try StoreDirectory(path: dir, schema: TimerApp.schema).migrate()) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("Timers.Session is held by Cloud.sqlite (Timers v1, as Run) and Local.sqlite (Timers v3, as Run)"),
                          text)
        }
        XCTAssertEqual(try ["Cloud", "Local"].map { try Data(contentsOf: URL(fileURLWithPath: dir + "/\($0).sqlite")) }, before)
    }

    func testTheBackupKeepsTheOriginalsInAGenerationOfTheirOwn() throws {
        let dir = try fixture(release: 1, rows: 5, in: "backup")
        let original = try bytes(dir + "/Cloud.sqlite")
        _ = try StoreDirectory(path: dir, schema: TimerApp.schema).migrate()
        XCTAssertEqual(try bytes(newestBackup(in: dir, of: "Cloud")), original, "the original, byte for byte")
        let generations = try FileManager.default.contentsOfDirectory(atPath: dir + "/backups")
        XCTAssertEqual(generations.count, 1)
        XCTAssertTrue(generations[0].hasSuffix("-migration-SyncMetadata-v1-Timers-v1"), generations[0])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/backups/" + generations[0]).sorted(),
                       ["Cloud.sqlite", "Local.sqlite", "backup.json"])
        let again = try StoreDirectory(path: dir, schema: TimerApp.schema).migrate()
        XCTAssertEqual(again.configurations, [], "a current directory has nothing to migrate")
    }

    func testTheDryRunChangesNothingAndShowsSQL() throws {
        let dir = try fixture(release: 1, rows: 5, in: "dry")
        let before = try bytes(dir + "/Cloud.sqlite")
        let plan = try StoreDirectory(path: dir, schema: TimerApp.schema).plan()
        XCTAssertTrue(plan.description.contains("CREATE TABLE \"Session\""), plan.description)
        XCTAssertTrue(plan.description.contains("title → name"))
        XCTAssertTrue(plan.description.contains("custom stages: durationToSteps"))
        XCTAssertTrue(plan.description.contains("drop Timers.Setting"))
        XCTAssertEqual(try bytes(dir + "/Cloud.sqlite"), before)
    }

    /// Memory stays bounded: batches of a few rows still copy everything, in order.
    func testSmallBatchesCopyEveryRow() throws {
        let dir = try fixture(release: 1, rows: 97, in: "batches")
        var options = MigrationOptions()
        options.batchSize = 10
        options.fullIntegrityCheck = true
        var reports = 0
        let report = try StoreDirectory(path: dir, schema: TimerApp.schema).migrate(options: options) { _ in reports += 1 }
        XCTAssertEqual(report.rowsCopied, 97 * 5)
        XCTAssertGreaterThanOrEqual(reports, 3, "progress from start to done")
        XCTAssertEqual(try count(dir + "/Cloud.sqlite", "Timer"), 97)
    }
}
