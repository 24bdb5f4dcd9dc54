import Foundation
import SeamContext
import SeamSchema
import SeamStore
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
}
