import Foundation
import SeamContext
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// `Options.defersSync` with full durability: a one-store save returns with its commit on its way
/// to the disk, and the owner puts it there (`syncCommits`) before telling anyone.
final class DeferredSyncTests: XCTestCase {
    func context(_ directory: TemporaryDirectory, defers: Bool = true) throws -> Context {
        var options = Context.Options()
        options.durability = .full
        options.defersSync = defers
        return try Context(directory: directory.path, schema: TimerApp.schema, options: options)
    }

    func session(_ name: String) -> SaveRequest.Operation {
        .insert(entity: "Session", values: ["name": .string(name), "startedAt": .date(1_700_000_000)])
    }

    func testAOneStoreSaveAwaitsItsOwnersSync() throws {
        let directory = TemporaryDirectory("deferred-sync")
        let context = try context(directory)
        let before = context.walSyncs["Local"] ?? 0
        try context.save(SaveRequest([session("a")]))
        XCTAssertTrue(context.syncPending)
        XCTAssertEqual(context.walSyncs["Local"], before, "not flushed yet")
        context.syncCommits()
        XCTAssertFalse(context.syncPending)
        XCTAssertEqual(context.walSyncs["Local"], before + 1)

        // Saves that find the last one still unsynced wait with it: one sync covers them all
        // (the broker's group commit).
        try context.save(SaveRequest([session("b")]))
        try context.save(SaveRequest([session("c")]))
        XCTAssertEqual(context.walSyncs["Local"], before + 1, "b waits with c")
        XCTAssertTrue(context.syncPending, "b and c await their owner")
        context.syncCommits()
        XCTAssertEqual(context.walSyncs["Local"], before + 2, "one flush for both")
        XCTAssertFalse(context.syncPending)
    }

    func testATwoStoreSaveIsOnTheDiskWhenItReturns() throws {
        let directory = TemporaryDirectory("deferred-sync")
        let context = try context(directory)
        let before = context.walSyncs
        let timer = UUIDText.random()
        try context.save(SaveRequest([
            .insert(entity: "Timer", values: ["uuid": .uuid(timer), "name": .string("Tea"), "steps": .json(#"[{"label":"go","seconds":60}]"#)]),
            .insert(entity: "Session", values: ["timerUUID": .uuid(timer), "startedAt": .date(1_700_000_000)]),
        ]))
        XCTAssertFalse(context.syncPending, "the file holding the intent is on the disk before the second commits, and the second after")
        XCTAssertGreaterThan(context.walSyncs["Cloud"] ?? 0, before["Cloud"] ?? 0)
        XCTAssertGreaterThan(context.walSyncs["Local"] ?? 0, before["Local"] ?? 0)
    }

    func testWithoutDeferralEverySaveIsOnTheDiskWhenItReturns() throws {
        let directory = TemporaryDirectory("deferred-sync")
        let context = try context(directory, defers: false)
        let before = context.walSyncs["Local"] ?? 0
        for name in ["a", "b", "c"] { try context.save(SaveRequest([session(name)])) }
        XCTAssertFalse(context.syncPending)
        XCTAssertEqual(context.walSyncs["Local"], before + 3)
    }
}
