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
            // Release 3 already had the current Cloud shape; release 5 is current.
            XCTAssertEqual(report.configurations, release == 5 ? [] : (release >= 3 ? ["Local"] : ["Cloud", "Local"]),
                           "release \(release)")
            XCTAssertEqual(try count(dir + "/Cloud.sqlite", "Timer"), 12)
            XCTAssertEqual(try count(dir + "/Local.sqlite", "Session"), 12)
            XCTAssertEqual(try count(dir + "/Cloud.sqlite", "SyncRecord"), 12)
        }
    }

    /// Release 4 → 5: only Local changes (Session gains `note`); every session keeps its values
    /// and gets an empty note, and the Cloud file, already current, is not written.
    func testRelease4SessionsGainAnEmptyNote() throws {
        let dir = temp.file("committed-4")
        try FileManager.default.copyItem(atPath: committed(4), toPath: dir)
        let columns = try XCTUnwrap(TimerModel.history.version(4)?.entity("Session")).attributes.map(\.name)
        let sessions = try dump(dir + "/Local.sqlite", "Session", columns: columns)
        let cloud = try bytes(dir + "/Cloud.sqlite")
        XCTAssertEqual(try migrateAndCompare(dir).configurations, ["Local"])
        XCTAssertEqual(try dump(dir + "/Local.sqlite", "Session", columns: columns), sessions)
        XCTAssertEqual(try open(dir + "/Local.sqlite").scalar("SELECT count(*) FROM Session WHERE note = ''"), .integer(12))
        XCTAssertEqual(try bytes(dir + "/Cloud.sqlite"), cloud)
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
            XCTAssertEqual(stores["Cloud"]!.totalChanges, 0)
            XCTAssertEqual(stores["Local"]!.totalChanges, 0)
        }
        XCTAssertEqual(try ["Cloud", "Local"].map { try bytes(dir + "/\($0).sqlite") }, before)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/backups"))
    }
}
