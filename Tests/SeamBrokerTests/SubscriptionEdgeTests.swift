import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamTestSupport
import XCTest

/// Subscriptions at their edges: queries that look alike, a subscriber that falls behind and
/// stops, one owed more than the outbox holds, calls that want no reply.
final class SubscriptionEdgeTests: EmbeddedBrokerTestCase {
    func subscribe(_ raw: RawClient, _ parameters: JSONObject, id: Int64) {
        raw.send(Call(method: "org.seam.Store.Subscribe", parameters: parameters, more: true, id: .integer(id)).frame())
    }

    func update(_ raw: RawClient, timeout: Double = 10) throws -> SubscriptionUpdate { try idAndUpdate(raw, timeout: timeout).update }

    /// The next reply: the id of the call it answers, and the update it carries.
    func idAndUpdate(_ raw: RawClient, timeout: Double = 10) throws -> (id: Int64?, update: SubscriptionUpdate) {
        guard let text = raw.readFrame(timeout: timeout) else { throw ClientError(.disconnected) }
        let reply = try Reply(try JSON.decode(Array(text.utf8), limits: JSONLimits(maxBytes: 512 << 20, maxStringBytes: 512 << 20)))
        if let error = reply.error { throw ClientError(.remote(VarlinkError(error, reply.parameters))) }
        return (reply.id?.int64Value, try SubscriptionUpdate(reply.parameters))
    }

    /// A subscription with no sort is ordered by uuid in memory, so its fetches must be too. In
    /// the order of an index SQLite chose (Session's, by state), a changed row was not found in
    /// the window: its update and its delete never reached the subscriber.
    func testASubscriptionWithoutASortHearsOfEveryChange() throws {
        let c = try client()
        let late = "ffffffff-0000-4000-8000-000000000001", early = "00000000-0000-4000-8000-000000000002"
        try c.save([.insert(entity: "Session", values: ["uuid": .string(late), "state": "paused", "startedAt": 1]),
                    .insert(entity: "Session", values: ["uuid": .string(early), "state": "running", "startedAt": 2])])
        let raw = try broker.raw()
        subscribe(raw, ["entity": "Session", "predicate": #"state IN {"running", "paused"}"#, "fields": ["state", "round"]], id: 1)
        var live = LiveResult()
        try live.apply(try update(raw))
        XCTAssertEqual(live.rows.map { $0["uuid"]?.stringValue }, [early, late], "in uuid order")
        try c.save([.update(entity: "Session", uuid: early, values: ["round": 5])])
        try live.apply(try update(raw, timeout: 5))
        try c.save([.delete(entity: "Session", uuid: early)])
        try live.apply(try update(raw, timeout: 5))
        let fresh = try c.fetch("Session", where: #"state IN {"running", "paused"}"#, sort: "uuid", fields: ["state", "round"])
        XCTAssertEqual(live.rows, fresh)
    }

    /// A parameter value holding what looked like a separator made two queries one channel, and
    /// the second subscriber was given the first one's (empty) result.
    func testQueriesThatDifferOnlyInTheirParametersHaveChannelsOfTheirOwn() throws {
        let c = try client()
        try c.save([.insert(entity: "Timer", values: ["name": "x"])])
        let a = try broker.raw()
        subscribe(a, ["entity": "Timer", "predicate": "name == $a", "parameters": ["a": "x\"\u{1}b=\"y"], "fields": ["name"]], id: 1)
        XCTAssertEqual(try update(a).rows.count, 0)
        let b = try broker.raw()
        subscribe(b, ["entity": "Timer", "predicate": "name == $a", "parameters": ["a": "x", "b": "y"], "fields": ["name"]], id: 1)
        XCTAssertEqual(try update(b).rows.map { $0["name"]?.stringValue }, ["x"])
        XCTAssertEqual(try c.status()["channels"]?.int64Value, 2)
    }

    /// A subscriber that fell behind and then unsubscribes is told, in its end, the last save
    /// it heard of, not the latest: resuming from there, it gets what it missed.
    func testTheEndOfASubscriptionThatFellBehindSaysWhereItStopped() throws {
        let c = try client()
        let stalled = try broker.raw()
        subscribe(stalled, ["entity": "Timer", "sort": "name"], id: 1)
        let name = String(repeating: "n", count: 200_000)
        for i in 0..<12 { try c.save([.insert(entity: "Timer", values: ["name": .string("\(i)-" + name)])]) }
        let latest = try XCTUnwrap(c.status()["sequence"]?.int64Value)
        stalled.send(Call(method: "org.seam.Store.Unsubscribe", parameters: ["subscription": 1], id: .integer(2)).frame())
        var live = LiveResult()
        var end: Int64?
        while end == nil {
            let u = try update(stalled)
            if u.kind == .end { end = u.sequence } else { try live.apply(u) }
        }
        let stopped = try XCTUnwrap(end)
        XCTAssertLessThan(stopped, latest, "it fell behind (the test needs it to)")
        XCTAssertEqual(stopped, live.sequence, "where its result stands")
        let again = try broker.raw()
        subscribe(again, ["entity": "Timer", "sort": "name", "since": .integer(stopped)], id: 1)
        try live.apply(try update(again))
        XCTAssertEqual(live.rows.count, 12, "resumed from its end, it has every timer")
    }

    /// An Unsubscribe sent oneway still ends its subscription at once: the end was queued and
    /// written only with the connection's next reply.
    func testAOnewayUnsubscribeEndsAtOnce() throws {
        let raw = try broker.raw()
        subscribe(raw, ["entity": "Timer"], id: 1)
        XCTAssertEqual(try update(raw).kind, .result)
        raw.send(#"{"method":"org.seam.Store.Unsubscribe","parameters":{"subscription":1},"oneway":true}"#)
        XCTAssertEqual(try update(raw, timeout: 2).kind, .end)
    }

    /// A client owed two resyncs, the second larger than the outbox may hold on top of the first
    /// (70 MB against 64 MiB), reads them both: it is not closed for what it is owed.
    func testAReaderOwedALargeResyncIsNotClosed() throws {
        let c = try client()
        let raw = try broker.raw()
        // Sessions: a synced entity's values are bounded (256 KiB), a local one's are not.
        subscribe(raw, ["entity": "Session", "predicate": "name BEGINSWITH 's'", "fields": ["name"]], id: 1)
        subscribe(raw, ["entity": "Session", "predicate": "name BEGINSWITH 'big'"], id: 2)
        let big = String(repeating: "b", count: 1_000_000)
        for i in stride(from: 0, to: 70, by: 3) {
            try c.save((i..<min(i + 3, 70)).map { .insert(entity: "Session", values: ["name": .string("big\($0)" + big), "startedAt": 1]) })
        }
        try c.save([.insert(entity: "Session", values: ["name": "small", "startedAt": 1])])
        let latest = try XCTUnwrap(c.status()["sequence"]?.int64Value)
        var small = LiveResult(), large = LiveResult()
        while small.sequence != latest || large.sequence != latest {
            let (id, u) = try idAndUpdate(raw, timeout: 30)
            if id == 1 { try small.apply(u) } else { try large.apply(u) }
        }
        XCTAssertEqual(large.rows.count, 70)
        XCTAssertEqual(small.rows.map { $0["name"]?.stringValue }, ["small"])
    }

    /// A subscriber that closes its writing half (a shell pipe into socat) still hears of each
    /// change, until it closes the connection altogether; then seamd forgets the subscription.
    func testASubscriberThatClosesItsWritingHalfGoesOnHearing() throws {
        var raw: RawClient? = try broker.raw()
        raw?.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"UserGroup","sort":"name"},"more":true}"#)
        raw?.shutdownWriting()
        XCTAssertTrue(try XCTUnwrap(raw?.readFrame()).contains(#""kind":"result""#))
        let c = try client()
        for name in ["A", "B"] {
            try c.save([.insert(entity: "UserGroup", values: ["name": .string(name)])])
            let diff = try XCTUnwrap(raw?.readFrame(), "no diff for \(name): \(broker.log.suffix(400))")
            XCTAssertTrue(diff.contains(#""kind":"diff""#) && diff.contains(name), diff)
        }
        XCTAssertEqual(try c.status()["subscriptions"]?.int64Value, 1)
        raw = nil  // closes the connection altogether
        try eventually(5, "the subscription is forgotten once its client has gone") {
            try c.status()["subscriptions"]?.int64Value == 0
        }
    }
}
