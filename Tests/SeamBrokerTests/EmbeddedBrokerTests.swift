import SeamClient
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamSystem
import SeamTestSupport
import XCTest

/// The broker in the test's process (`EmbeddedBroker`): it serves as seamd does, on a loop the
/// test turns and a clock the test moves.
final class EmbeddedBrokerTests: XCTestCase {
    func testSavesFetchesAndSubscriptionsOverSocketPairs() throws {
        let broker = try EmbeddedBroker()
        let writer = try broker.client()
        let reader = try broker.client()
        let (sequence, inserted) = try writer.save([.insert(entity: "UserGroup", values: ["name": "Kitchen"])])
        XCTAssertEqual(inserted.count, 1)
        XCTAssertNotNil(sequence)
        XCTAssertEqual(try reader.fetch("UserGroup").map { $0["name"]?.stringValue }, ["Kitchen"])

        let id = try reader.start("org.seam.Store.Subscribe", ["entity": "UserGroup", "sort": "name"])
        var live = LiveResult()
        func take() throws {
            XCTAssertTrue(try broker.turn(until: { try !reader.pending().allSatisfy { reply in
                XCTAssertEqual(reply.id, id)
                try live.apply(SubscriptionUpdate(reply.parameters))
                return false
            } }))
        }
        try take()
        XCTAssertEqual(live.rows.map { $0["name"]?.stringValue }, ["Kitchen"])
        try writer.save([.insert(entity: "UserGroup", values: ["name": "Desk"])])
        try take()
        XCTAssertEqual(live.rows.map { $0["name"]?.stringValue }, ["Desk", "Kitchen"])
    }

    /// The timer service reads the broker's clock: a session started now ends when the clock
    /// has moved past its steps, with no real time passing.
    func testTheTimerServiceRunsOnTheBrokersClock() throws {
        let clock = ManualClock(now: 1_800_000_000)
        let broker = try EmbeddedBroker(clock: clock)
        let c = try broker.client()
        let (_, inserted) = try c.save([.insert(entity: "Timer", values: [
            "name": "Tea", "steps": .array([["label": "Steep", "seconds": 180]]),
        ])])
        let timer = try XCTUnwrap(inserted.first)
        let started = try c.call("org.seam.Timers.Start", ["timer": .string(timer)])
        let session = try XCTUnwrap(started["session"]?.stringValue, "\(started)")
        let row = try XCTUnwrap(try c.row("Session", uuid: session))
        XCTAssertEqual(row["startedAt"]?.stringValue.flatMap(RFC3339.parse), 1_800_000_000)
        clock.advance(60)
        let paused = try c.call("org.seam.Timers.Pause", ["session": .string(session)])
        XCTAssertEqual(paused["state"]?.stringValue, "paused", "\(paused)")
        XCTAssertEqual(try c.row("Session", uuid: session)?["pausedAt"]?.stringValue.flatMap(RFC3339.parse), 1_800_000_060)
        clock.advance(3600)
        _ = try c.call("org.seam.Timers.Resume", ["session": .string(session)])
        clock.advance(121)
        _ = try c.call("org.seam.Timers.Advance", ["session": .string(session)])
        XCTAssertEqual(try c.row("Session", uuid: session)?["state"]?.stringValue, "finished", "120 s were left when it paused")
    }

    /// A restart on the same store directory keeps what was saved; the old clients are told.
    func testARestartKeepsTheSavesAndEndsTheOldConnections() throws {
        let first = try EmbeddedBroker()
        let c = try first.client()
        try c.save([.insert(entity: "UserGroup", values: ["name": "Kept"])])
        let raw = try first.raw()
        let second = try first.restarted()
        XCTAssertTrue(raw.readFrame(timeout: 1)?.contains("org.seam.Store.ShuttingDown") == true)
        XCTAssertEqual(try second.client().fetch("UserGroup").map { $0["name"]?.stringValue }, ["Kept"])
        XCTAssertTrue(first.log.contains("stopped at save sequence"), first.log)
    }
}
