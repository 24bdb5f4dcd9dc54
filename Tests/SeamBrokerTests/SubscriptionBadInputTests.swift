import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamTestSupport
import XCTest

/// Subscriptions under pressure and abuse: a subscriber that never reads, bad queries, clients
/// that vanish, limits.
final class SubscriptionBadInputTests: EmbeddedBrokerTestCase {
    func subscribeCall(_ parameters: JSONObject, id: Int? = nil, more: Bool = true) -> String {
        String(decoding: Call(method: "org.seam.Store.Subscribe", parameters: parameters, more: more,
                              id: id.map { .integer(Int64($0)) }).frame().dropLast(), as: UTF8.self)
    }

    func reply(_ raw: RawClient, timeout: Double = 5) throws -> Reply {
        guard let text = raw.readFrame(timeout: timeout) else { throw ClientError(.disconnected) }
        return try Reply(try JSON.decode(Array(text.utf8)))
    }

    func rss(_ c: SeamConnection) throws -> Int64 { try c.status()["rss"]?.int64Value ?? 0 }

    /// 100,000 changes while one subscriber reads nothing: the broker's memory stays bounded, a
    /// subscriber that reads hears its change at once, and the one that fell behind gets one
    /// resync (never a silent drop) once it reads again.
    func testASubscriberThatNeverReadsIsCollapsedNotBuffered() throws {
        let c = try client()
        let stalled = try broker.raw()
        stalled.send(subscribeCall(["entity": "Session", "sort": "-startedAt", "limit": 100]))
        let watcher = try broker.raw()
        watcher.send(subscribeCall(["entity": "Session", "predicate": "name == \"watch\""]))
        XCTAssertEqual(try reply(watcher).parameters["kind"]?.stringValue, "result")
        let before = try rss(c)
        var start = 1_700_000_000
        for _ in 0..<100 {
            var inserts: [SeamConnection.Change] = []
            for _ in 0..<1000 {
                start += 1
                inserts.append(.insert(entity: "Session", values: ["name": "flood", "startedAt": .integer(Int64(start))]))
            }
            try c.save(inserts)
        }
        let after = try rss(c)
        print("SubscriptionBadInputTests: seamd RSS \(before / 1_048_576) MB before, \(after / 1_048_576) MB after 100,000 changes")
        XCTAssertLessThan(after - before, 96 << 20, "the broker buffered what the stalled subscriber did not read")

        // The watcher is not slowed by the stalled one.
        let t = Date()
        try c.save([.insert(entity: "Session", values: ["name": "watch", "startedAt": 1])])
        let heard = try reply(watcher, timeout: 2)
        XCTAssertEqual(heard.parameters["inserted"]?.arrayValue?.count, 1)
        XCTAssertLessThan(Date().timeIntervalSince(t), 2)

        // The stalled subscriber reads: diffs, then one resync, then it is current.
        var live = LiveResult()
        var kinds: [String] = []
        let finalSequence = try c.status()["sequence"]!.int64Value!
        while live.sequence != finalSequence {
            let r = try reply(stalled, timeout: 10)
            let update = try SubscriptionUpdate(r.parameters)
            kinds.append(update.kind.rawValue)
            try live.apply(update)
        }
        XCTAssertEqual(kinds.filter { $0 == "resync" }.count, 1, "one resync: \(Set(kinds))")
        XCTAssertEqual(kinds.last, "resync")
        XCTAssertLessThan(kinds.count, 100, "the backlog was collapsed")
        let expected = try c.fetch("Session", sort: "-startedAt", limit: 100)
        XCTAssertEqual(live.rows, expected)
    }

    /// No channel holds more than 100,000 rows: a subscription cannot start past that, and one
    /// whose result grows past it ends with the error as its last reply (before, its channel kept
    /// every row however many, and the broker's memory with it).
    func testNoSubscriptionHoldsMoreThanTheRowCap() throws {
        // A debug build on a slow machine can take more than the default second to read 100,000
        // rows; this test is about the row cap, so the time budget is set out of its way.
        broker.stop()
        broker = try EmbeddedBroker { $0.supervision.limits.querySeconds = 120 }
        let c = try client()
        let query: JSONObject = ["entity": "Session", "predicate": "name == \"many\"", "sort": "startedAt"]
        let holder = try broker.raw()
        holder.send(subscribeCall(query))
        XCTAssertEqual(try reply(holder).parameters["kind"]?.stringValue, "result")
        for batch in 0..<101 {  // 101,000 rows; the holder reads none of it (it falls behind)
            try c.save((0..<1000).map { i in
                .insert(entity: "Session", values: ["name": "many", "startedAt": .integer(Int64(1_700_000_000 + batch * 1000 + i))])
            })
        }
        var last = try reply(holder, timeout: 60)
        while last.continues { last = try reply(holder, timeout: 60) }
        XCTAssertEqual(last.error, "org.seam.Store.LimitReached", "\(last.parameters)")
        XCTAssertEqual(try c.status()["channels"]?.int64Value, 0, "the channel is gone with its last subscription")
        for parameters in [query, ["entity": "Session", "sort": "-startedAt"]] {
            let late = try broker.raw()
            late.send(subscribeCall(parameters))
            let refused = try reply(late, timeout: 60)
            XCTAssertEqual(refused.error, "org.seam.Store.LimitReached", "\(parameters): \(refused.parameters)")
        }
        let limited = try broker.raw()
        limited.send(subscribeCall(["entity": "Session", "sort": "-startedAt", "limit": 10]))
        XCTAssertEqual(try reply(limited).parameters["rows"]?.arrayValue?.count, 10, "with a limit, it may")
    }

    /// Without ids a connection holds one subscription (a plain varlink client could not tell
    /// two apart by their replies); with ids it holds many, and the first goes on.
    func testAConnectionWithoutIDsHoldsOneSubscription() throws {
        let raw = try broker.raw()
        raw.send(subscribeCall(["entity": "Session"]))
        XCTAssertEqual(try reply(raw).parameters["kind"]?.stringValue, "result")
        raw.send(subscribeCall(["entity": "Timer"]))
        let refused = try reply(raw)
        XCTAssertEqual(refused.error, "org.seam.Store.InvalidRequest", "\(refused.parameters)")
        XCTAssertEqual(refused.parameters["field"]?.stringValue, "id")
        XCTAssertNil(refused.id)
        raw.send(subscribeCall(["entity": "Timer"], id: 7))
        let second = try reply(raw)
        XCTAssertEqual(second.parameters["kind"]?.stringValue, "result")
        XCTAssertEqual(second.id, .integer(7))
        try client().save([.insert(entity: "Session", values: ["name": "Tea", "startedAt": .integer(1_700_000_000)])])
        let diff = try reply(raw)
        XCTAssertEqual(diff.parameters["kind"]?.stringValue, "diff")
        XCTAssertNil(diff.id)
        XCTAssertEqual(try client().status()["subscriptions"]?.int64Value, 2)
    }

    func testBadSubscriptionsGetErrorsAndTheConnectionGoesOn() throws {
        let raw = try broker.raw()
        let cases: [(JSONObject, Bool, String, String?)] = [
            (["entity": "Nope"], true, "org.seam.Store.InvalidRequest", "entity"),
            (["entity": "Session", "predicate": "name =="], true, "org.seam.Store.InvalidRequest", "predicate"),
            (["entity": "Session", "predicate": "nope == 1"], true, "org.seam.Store.InvalidRequest", "predicate"),
            (["entity": "Session", "predicate": "name == $missing"], true, "org.seam.Store.InvalidRequest", "predicate"),
            (["entity": "Session", "sort": "nope"], true, "org.seam.Store.InvalidRequest", "sort"),
            (["entity": "Session", "fields": ["nope"]], true, "org.seam.Store.InvalidRequest", "fields"),
            (["entity": "Session", "offset": 3], true, "org.seam.Store.InvalidRequest", "offset"),
            (["entity": "Session", "since": -1], true, "org.varlink.service.InvalidParameter", nil),
            (["entity": "Session", "since": "yesterday"], true, "org.varlink.service.InvalidParameter", nil),
            (["entity": "Session", "limit": -1], true, "org.seam.Store.InvalidRequest", "limit"),
            (["entity": "Session", "limit": "ten"], true, "org.varlink.service.InvalidParameter", nil),
            (["entity": "Session"], false, "org.varlink.service.ExpectedMore", nil),
        ]
        for (i, (parameters, more, error, field)) in cases.enumerated() {
            raw.send(subscribeCall(parameters, id: i, more: more))
            let r = try reply(raw)
            XCTAssertEqual(r.error, error, "\(parameters)")
            XCTAssertEqual(r.id, .integer(Int64(i)))
            if let field { XCTAssertEqual(r.parameters["field"]?.stringValue, field, "\(parameters)") }
        }
        raw.send(#"{"method":"org.seam.Store.Unsubscribe","parameters":{"subscription":12345},"id":"u"}"#)
        XCTAssertEqual(try reply(raw).error, "org.seam.Store.InvalidRequest")
        // Another connection's subscription is not this one's to end.
        let other = try broker.raw()
        other.send(subscribeCall(["entity": "Session"]))
        let n = try reply(other).parameters["subscription"]!.int64Value!
        raw.send(#"{"method":"org.seam.Store.Unsubscribe","parameters":{"subscription":\#(n)},"id":"v"}"#)
        XCTAssertEqual(try reply(raw).error, "org.seam.Store.InvalidRequest")
        raw.send(subscribeCall(["entity": "Session"], id: 100))
        XCTAssertEqual(try reply(raw).parameters["kind"]?.stringValue, "result", "the connection still serves")
        let status = try client().status()
        XCTAssertEqual(status["subscriptions"]?.int64Value, 2, "failed subscriptions leave nothing behind")
        XCTAssertEqual(status["channels"]?.int64Value, 1)
    }

    /// Clients that subscribe and vanish (closed sockets, mid-frame, killed processes) leave
    /// no subscription or channel behind, and commits go on.
    func testSubscribersThatVanishLeaveNothingBehind() throws {
        let c = try client()
        for i in 0..<50 {
            let raw = try broker.raw()
            raw.send(subscribeCall(["entity": "Session", "predicate": "stepIndex == \(i)"], id: i))
            if i % 2 == 0 { _ = raw.readFrame() }
            if i % 5 == 0 { raw.send(#"{"method":"org.seam.Store.Subscribe","param"#, nul: false) }
        }  // every RawClient is closed here
        try c.save([.insert(entity: "Session", values: ["name": "after", "startedAt": 1, "stepIndex": 4])])
        // Closes reach the broker in its next turns.
        var status = try c.status()
        for _ in 0..<100 where status["subscriptions"]?.int64Value != 0 || status["connections"]?.int64Value != 1 {
            broker.turn(maxWait: 0.001)
            status = try c.status()
        }
        XCTAssertEqual(status["subscriptions"]?.int64Value, 0)
        XCTAssertEqual(status["channels"]?.int64Value, 0)
        XCTAssertEqual(status["connections"]?.int64Value, 1)
    }

    func testSubscriptionsPerConnectionAreBounded() throws {
        let raw = try broker.raw()
        let limit = Limits.maxSubscriptionsPerConnection
        var batch = ""
        for i in 0...limit { batch += subscribeCall(["entity": "UserGroup"], id: i) + "\u{0}" }
        raw.send(Array(batch.utf8))
        var last: Reply?
        for _ in 0...limit { last = try reply(raw) }
        XCTAssertEqual(last?.id, .integer(Int64(limit)))
        XCTAssertEqual(last?.error, "org.seam.Store.LimitReached")
        let status = try client().status()
        XCTAssertEqual(status["subscriptions"]?.int64Value, Int64(limit))
        XCTAssertEqual(status["channels"]?.int64Value, 1, "identical queries share one channel")
    }
}
