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
            XCTAssertEqual(report.rowsCopied, release == 4 ? 0 : (release == 3 ? 12 : 60), "release \(release)")
            XCTAssertEqual(try count(dir + "/Cloud.sqlite", "Timer"), 12)
            XCTAssertEqual(try count(dir + "/Local.sqlite", "Session"), 12)
            XCTAssertEqual(try count(dir + "/Cloud.sqlite", "SyncRecord"), 12)
        }
    }
}
