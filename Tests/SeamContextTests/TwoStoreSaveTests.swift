import Foundation
import SeamContext
import SeamSchema
import SeamStore
import SeamTimers
import Synchronization
import XCTest

/// A save across two stores commits the store that keeps the history first, together with the
/// intent that finishes the other after a crash: the intent replays rows, not history.
final class TwoStoreSaveTests: XCTestCase {
    func testTheHistoryIsCommittedWithTheFirstFile() throws {
        // "Aside" sorts before "Cloud", the history's configuration.
        var m = ModelDraft(model: "Pad")
        try m.addConfiguration("Aside")
        try m.addConfiguration("Cloud")
        try m.addEntity(Entity("Note", attributes: [Attribute("uuid", .uuid)]), in: "Aside")
        try m.addEntity(Entity("Card", attributes: [Attribute("uuid", .uuid)]), in: "Cloud")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("two-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let historyAtFirstCommit = Mutex<AttributeValue?>(nil)
        var options = Context.Options()
        options.betweenCommits = {
            var o = Database.Options()
            o.readOnly = true
            let cloud = try? Database(path: directory + "/Cloud.sqlite", options: o)
            let rows = try? cloud?.scalar("SELECT count(*) FROM seam_history")
            historyAtFirstCommit.withLock { $0 = rows ?? .null }
            cloud?.close()
        }
        let context = try Context(directory: directory, schema: try Schema([try VersionedModel([m])]), options: options)
        try context.save(SaveRequest([.insert(entity: "Note", values: [:]), .insert(entity: "Card", values: [:])]))
        XCTAssertEqual(historyAtFirstCommit.withLock { $0 }, .integer(1), "the history was on the disk before the second file committed")
        XCTAssertEqual(try context.history(since: 0).count, 1)
    }

    /// An intent that cannot be read whole is kept, and nothing opens: replaying less than the
    /// save (it used to replay nothing, and drop the intent) would lose its rows for good.
    func testADamagedIntentIsKeptAndRefused() throws {
        let directory = try storesWithIntent(#"[{"table":"Session","uuid":"u","values":{"state":["?","x"]}}]"#)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        XCTAssertThrowsError(try Context(directory: directory, schema: TimerApp.schema)) { error in
            XCTAssertTrue("\(error)".contains("save 99, to finish in Local.sqlite after a crash, cannot be read"), "\(error)")
        }
        let after = try Database(path: directory + "/Cloud.sqlite")
        XCTAssertEqual(try after.scalar("SELECT count(*) FROM seam_intent"), .integer(1), "kept")
        after.close()
    }

    /// An intent whose other file is refused (here: it says it holds another configuration) is
    /// not replayed into it: that file stays untouched, the intent waits, and the store that
    /// holds the intent still serves.
    func testAnIntentForARefusedFileWaits() throws {
        let directory = try storesWithIntent(#"[{"table":"Session","uuid":"u"}]"#)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var context: Context?
        let local = try Database(path: directory + "/Local.sqlite")
        try local.run("UPDATE seam_store SET value = 'Elsewhere' WHERE key = 'configuration'")
        local.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: directory + "/Local.sqlite"))
        var options = Context.Options()
        options.servesOutdated = true
        context = try Context(directory: directory, schema: TimerApp.schema, options: options)
        XCTAssertNotNil(context?.closedStores["Local"])
        XCTAssertEqual(try context?.count(FetchRequest("UserGroup")), 1, "Cloud serves")
        context = nil
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: directory + "/Local.sqlite")), before, "the refused file is untouched")
        let after = try Database(path: directory + "/Cloud.sqlite")
        XCTAssertEqual(try after.scalar("SELECT count(*) FROM seam_intent"), .integer(1), "the intent waits")
        after.close()
    }

    /// A directory of the timer app's stores whose Cloud holds an intent, save 99, to finish in
    /// Local with `operations`: what a crash between the two commits leaves (here made by hand).
    private func storesWithIntent(_ operations: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("intent-\(UUID().uuidString)").path
        try Context(directory: directory, schema: TimerApp.schema).save(SaveRequest([.insert(entity: "UserGroup", values: ["name": .string("G")])]))
        let cloud = try Database(path: directory + "/Cloud.sqlite")
        defer { cloud.close() }
        try cloud.execute("CREATE TABLE IF NOT EXISTS seam_intent (sequence INTEGER NOT NULL PRIMARY KEY, target TEXT NOT NULL, ops TEXT NOT NULL) STRICT")
        try cloud.run("INSERT INTO seam_intent VALUES (99, 'Local', ?)", [.string(operations)])
        return directory
    }
}
