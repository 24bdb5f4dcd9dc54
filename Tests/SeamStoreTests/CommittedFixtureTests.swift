import Foundation
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// Store files committed when each release was current (`Tests/Fixtures/stores/release-N`),
/// never regenerated: they catch a change in how old tables would have been written.
final class CommittedFixtureTests: StoreTestCase {
    func committed(_ release: Int) -> String {
        RepositoryFiles.url("Tests/Fixtures/stores/release-\(release)").path
    }

    /// Today's code lays out each old version exactly as the committed file has it.
    func testOldVersionsAreStillWrittenTheSameWay() throws {
        for (index, r) in TimerApp.releases.enumerated() {
            let versions = [TimerModel.history.version(r.timers)!, SyncMetadataModel.history.version(r.syncMetadata)!]
            for configuration in ["Cloud", "Local"] {
                let file = committed(index + 1) + "/\(configuration).sqlite"
                let statements = versions.flatMap { SchemaSQL.create($0, configuration: configuration) }
                let expected = try Database.schemaFromStatements(statements)
                XCTAssertEqual(try open(file).userSchema(), expected, "release \(index + 1) \(configuration)")
                let metadata = try XCTUnwrap(StoreMetadata.read(from: try open(file)))
                for v in versions where !v.entities(in: configuration).isEmpty {
                    XCTAssertEqual(metadata.models.first { $0.model == v.model }, StoreMetadata.record(v, configuration: configuration),
                                   "release \(index + 1) \(configuration) \(v.model)")
                }
            }
        }
    }

    func testEveryCommittedReleaseMigratesToTheCurrentShape() throws {
        for release in 1...TimerApp.releases.count {
            let dir = temp.file("committed-\(release)")
            try FileManager.default.copyItem(atPath: committed(release), toPath: dir)
            let before = try ["Cloud", "Local"].map { try count(dir + "/\($0).sqlite", "seam_models") }
            XCTAssertFalse(before.isEmpty)
            let report = try migrateAndCompare(dir)
            XCTAssertEqual(report.rowsCopied, release >= 4 ? 0 : (release == 3 ? 12 : 60), "release \(release)")
            // Release 7 is current; release 6 changes only Cloud (version 7 marked Timer and
            // UserGroup fields encrypted); every older one changes both files (Timer and Session
            // gained `sound` in version 6).
            XCTAssertEqual(report.configurations, release == 7 ? [] : release == 6 ? ["Cloud"] : ["Cloud", "Local"], "release \(release)")
            XCTAssertEqual(try count(dir + "/Cloud.sqlite", "Timer"), 12)
            XCTAssertEqual(try count(dir + "/Local.sqlite", "Session"), 12)
            XCTAssertEqual(try count(dir + "/Cloud.sqlite", "SyncRecord"), 12)
        }
    }

    /// Release 4 → current: every session keeps its values and gets an empty note (version 5)
    /// and an empty sound (version 6); every timer keeps its values and gets an empty sound.
    func testRelease4SessionsGainAnEmptyNote() throws {
        let dir = temp.file("committed-4")
        try FileManager.default.copyItem(atPath: committed(4), toPath: dir)
        let columns = try XCTUnwrap(TimerModel.history.version(4)?.entity("Session")).attributes.map(\.name)
        let sessions = try dump(dir + "/Local.sqlite", "Session", columns: columns)
        XCTAssertEqual(try migrateAndCompare(dir).configurations, ["Cloud", "Local"])
        XCTAssertEqual(try dump(dir + "/Local.sqlite", "Session", columns: columns), sessions)
        XCTAssertEqual(try open(dir + "/Local.sqlite").scalar("SELECT count(*) FROM Session WHERE note = '' AND sound = ''"), .integer(12))
        XCTAssertEqual(try open(dir + "/Cloud.sqlite").scalar("SELECT count(*) FROM Timer WHERE sound = ''"), .integer(12))
    }

    /// Release 5 → 6: both files change (Timer and Session gain `sound`); every timer and every
    /// session keeps its values (the sessions their notes) and gets an empty sound; the other
    /// tables of Cloud (groups, sync metadata) keep every row as it was.
    func testRelease5TimersAndSessionsGainAnEmptySound() throws {
        let dir = temp.file("committed-5")
        try FileManager.default.copyItem(atPath: committed(5), toPath: dir)
        let v5 = try XCTUnwrap(TimerModel.history.version(5))
        let timerColumns = try XCTUnwrap(v5.entity("Timer")).attributes.map(\.name)
        let sessionColumns = try XCTUnwrap(v5.entity("Session")).attributes.map(\.name)
        let timers = try dump(dir + "/Cloud.sqlite", "Timer", columns: timerColumns)
        let sessions = try dump(dir + "/Local.sqlite", "Session", columns: sessionColumns)
        let others = try ["UserGroup", "SyncRecord", "SyncToken"].map { try dump(dir + "/Cloud.sqlite", $0) }
        let report = try migrateAndCompare(dir)
        XCTAssertEqual(report.configurations, ["Cloud", "Local"])
        XCTAssertEqual(report.rowsCopied, 0, "an added attribute with a default is altered in place")
        XCTAssertEqual(try dump(dir + "/Cloud.sqlite", "Timer", columns: timerColumns), timers)
        XCTAssertEqual(try dump(dir + "/Local.sqlite", "Session", columns: sessionColumns), sessions)
        XCTAssertEqual(try ["UserGroup", "SyncRecord", "SyncToken"].map { try dump(dir + "/Cloud.sqlite", $0) }, others)
        XCTAssertEqual(try open(dir + "/Cloud.sqlite").scalar("SELECT count(*) FROM Timer WHERE sound = ''"), .integer(12))
        XCTAssertEqual(try open(dir + "/Local.sqlite").scalar("SELECT count(*) FROM Session WHERE sound = ''"), .integer(12))
        XCTAssertEqual(try open(dir + "/Local.sqlite").scalar("SELECT count(*) FROM Session WHERE note != ''"), .integer(12),
                       "the notes written by release 5 are kept")
    }

    /// Release 6 → 7: only transformers changed, so the Cloud copy is changed in place with no
    /// statement at all, and the plan says what the marks mean; every row is as it was, in clear.
    func testRelease6GainsEncryptedMarksWithNoRowChanged() throws {
        let dir = temp.file("committed-6-marks")
        try FileManager.default.copyItem(atPath: committed(6), toPath: dir)
        let names = try dump(dir + "/Cloud.sqlite", "Timer", columns: ["uuid", "name", "steps"])
        let plan = try StoreDirectory(path: dir, schema: TimerApp.schema).plan()
        XCTAssertEqual(plan.files.map(\.configuration), ["Cloud"])
        let text = plan.description
        for line in ["no table changes", "Timer.name: now encrypted: kept in clear here, sealed by sync for the server", "Timer.steps: now encrypted",
                     "UserGroup.name: now encrypted"] {
            XCTAssertTrue(text.contains(line), "'\(line)' in:\n\(text)")
        }
        XCTAssertEqual(try migrateAndCompare(dir).rowsCopied, 0)
        XCTAssertEqual(try dump(dir + "/Cloud.sqlite", "Timer", columns: ["uuid", "name", "steps"]), names, "the values stay in clear")
    }

    /// The newest release's files are current: they open with no write at all.
    func testTheNewestReleaseOpensWithoutWriting() throws {
        let dir = temp.file("committed-newest")
        try FileManager.default.copyItem(atPath: committed(TimerApp.releases.count), toPath: dir)
        XCTAssertEqual(TimerApp.releases.last?.timers, TimerModel.history.current.version)
        XCTAssertEqual(try StoreDirectory(path: dir, schema: TimerApp.schema).inspect().map(\.state), [.current, .current])
        let before = try ["Cloud", "Local"].map { try bytes(dir + "/\($0).sqlite") }
        do {
            let stores = try StoreDirectory(path: dir, schema: TimerApp.schema).open()
            XCTAssertEqual(try stores["Local"]!.scalar("SELECT count(*) FROM Session WHERE note != ''"), .integer(12), "written with notes")
            XCTAssertEqual(try stores["Local"]!.scalar("SELECT count(*) FROM Session WHERE sound != ''"), .integer(12), "and sounds")
            XCTAssertEqual(try stores["Cloud"]!.scalar("SELECT count(*) FROM Timer WHERE sound != ''"), .integer(12), "timers too")
            XCTAssertEqual(stores["Cloud"]!.totalChanges, 0)
            XCTAssertEqual(stores["Local"]!.totalChanges, 0)
        }
        XCTAssertEqual(try ["Cloud", "Local"].map { try bytes(dir + "/\($0).sqlite") }, before)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/backups"))
    }
}
