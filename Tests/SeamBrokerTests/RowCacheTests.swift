import SeamClient
import SeamJSON
import SeamTestSupport
import XCTest

/// Fetch by uuid answers from a cache of encoded rows; every commit evicts what it touched.
/// These tests compare it, after every kind of change, with a fetch that reads the store.
final class RowCacheTests: BrokerTestCase {
    /// The row by uuid (the cached path) and the same row by predicate (a read of the store).
    func bothWays(_ c: SeamConnection, _ entity: String, _ uuid: String) throws -> (cached: [JSON], stored: [JSON]) {
        let cached = try c.call("org.seam.Store.Fetch", ["entity": .string(entity), "uuid": .string(uuid)])["rows"]?.arrayValue ?? []
        let stored = try c.call("org.seam.Store.Fetch", ["entity": .string(entity), "predicate": "uuid == $u",
                                                         "parameters": ["u": .string(uuid)]])["rows"]?.arrayValue ?? []
        return (cached, stored)
    }

    func testEveryKindOfChangeIsSeenThroughTheCache() throws {
        let c = try client()
        let timer = try c.save([.insert(entity: "Timer", values: ["name": "Tea", "steps": [["label": "a", "seconds": 60]]])]).inserted[0]
        var r = try bothWays(c, "Timer", timer)
        XCTAssertEqual(r.cached, r.stored)
        XCTAssertEqual(r.cached.first?["name"]?.stringValue, "Tea")

        // An update through Save.
        try c.save([.update(entity: "Timer", uuid: timer, values: ["name": "Green tea"])])
        r = try bothWays(c, "Timer", timer)
        XCTAssertEqual(r.cached.first?["name"]?.stringValue, "Green tea")
        XCTAssertEqual(r.cached, r.stored)

        // A change made by a service method (org.seam.Timers), then a cascade from a delete.
        let session = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(timer)])["session"]?.stringValue)
        XCTAssertEqual(try bothWays(c, "Session", session).cached.first?["state"]?.stringValue, "running")
        try c.call("org.seam.Timers.Pause", ["session": .string(session)])
        r = try bothWays(c, "Session", session)
        XCTAssertEqual(r.cached.first?["state"]?.stringValue, "paused")
        XCTAssertEqual(r.cached, r.stored)
        try c.save([.delete(entity: "Timer", uuid: timer)])
        XCTAssertEqual(try bothWays(c, "Session", session).cached, [], "deleting the timer deleted its session (a link rule)")
        XCTAssertEqual(try bothWays(c, "Timer", timer).cached, [])
    }

    /// Random saves and reads on a few rows: the cached answer is always the stored one.
    func testRandomChangesNeverLeaveAStaleRow() throws {
        let c = try client()
        var rng = SystemRandomNumberGenerator()
        var timers: [String] = []
        for i in 0..<5 {
            timers.append(try c.save([.insert(entity: "Timer", values: ["name": .string("t\(i)")])]).inserted[0])
        }
        for round in 0..<300 {
            let u = timers.randomElement(using: &rng)!
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                _ = try? c.save([.update(entity: "Timer", uuid: u, values: ["sortOrder": .integer(Int64(round))])])
            case 6:
                _ = try? c.save([.delete(entity: "Timer", uuid: u)])
            case 7:
                _ = try? c.save([.insert(entity: "Timer", values: ["uuid": .string(u), "name": .string("again \(round)")])])
            default:
                _ = try? c.call("org.seam.Timers.Start", ["timer": .string(u)])
            }
            let check = timers.randomElement(using: &rng)!
            let r = try bothWays(c, "Timer", check)
            XCTAssertEqual(r.cached, r.stored, "round \(round)")
        }
    }
}
