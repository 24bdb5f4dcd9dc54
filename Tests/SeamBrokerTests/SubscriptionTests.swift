import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamTestSupport
import Synchronization
import XCTest

/// Subscriptions against a real seamd: results, diffs, resume, backpressure, bad input.
final class SubscriptionTests: BrokerTestCase {
    @discardableResult
    func addSession(_ c: SeamConnection, _ name: String, state: String = "running", step: Int64 = 0) throws -> String {
        let u = UUIDText.random()
        try c.save([.insert(entity: "Session", values: ["uuid": .string(u), "name": .string(name), "state": .string(state),
                                                         "stepIndex": .integer(step), "startedAt": 1_700_000_000])])
        return u
    }

    /// Subscribes on a raw connection; returns the first update.
    func subscribe(_ raw: RawClient, _ parameters: JSONObject, id: Int? = nil) throws -> SubscriptionUpdate {
        raw.send(String(decoding: Call(method: "org.seam.Store.Subscribe", parameters: parameters, more: true,
                                       id: id.map { .integer(Int64($0)) }).frame().dropLast(), as: UTF8.self))
        return try next(raw)
    }

    func next(_ raw: RawClient, timeout: Double = 5) throws -> SubscriptionUpdate {
        let reply = try nextReply(raw, timeout: timeout)
        if let error = reply.error { throw VarlinkError(error, reply.parameters) }
        return try SubscriptionUpdate(reply.parameters)
    }

    func nextReply(_ raw: RawClient, timeout: Double = 5) throws -> Reply {
        guard let text = raw.readFrame(timeout: timeout) else { throw ClientError(.disconnected) }
        return try Reply(try JSON.decode(Array(text.utf8)))
    }

    func fetch(_ c: SeamConnection, _ p: JSONObject) throws -> [JSONObject] {
        var p = p
        p["since"] = nil
        return (try c.call("org.seam.Store.Fetch", p)["rows"]?.arrayValue ?? []).compactMap(\.objectValue)
    }

    // MARK: - Results and diffs

    func testResultThenDiffsKeepALimitedSortedWindow() throws {
        let c = try client()
        try addSession(c, "b")
        let cUUID = try addSession(c, "c")
        try addSession(c, "d")
        let raw = try RawClient(broker.socketPath)
        let query: JSONObject = ["entity": "Session", "sort": "name", "limit": 2, "fields": ["name"]]
        let first = try subscribe(raw, query)
        XCTAssertEqual(first.kind, .result)
        XCTAssertEqual(first.rows.map { $0["name"]?.stringValue }, ["b", "c"])
        XCTAssertEqual(first.rows.first?.keys.map { $0 }, ["uuid", "name"])
        var live = LiveResult()
        try live.apply(first)

        // A row that sorts first pushes "c" out of the window.
        let a = try addSession(c, "a")
        let d1 = try next(raw)
        XCTAssertEqual(d1.kind, .diff)
        XCTAssertEqual(d1.inserted.map(\.uuid), [a])
        XCTAssertEqual(d1.inserted.first?.index, 0)
        XCTAssertEqual(d1.deleted.map(\.uuid), [cUUID])
        XCTAssertEqual(d1.deleted.first?.index, 1)
        try live.apply(d1)
        XCTAssertEqual(live.rows, try fetch(c, query))

        // Deleting "a" lets "c" back in (the broker refetches the window).
        try c.save([.delete(entity: "Session", uuid: a)])
        let d2 = try next(raw)
        XCTAssertEqual(d2.deleted.map(\.uuid), [a])
        XCTAssertEqual(d2.inserted.map(\.uuid), [cUUID])
        try live.apply(d2)
        XCTAssertEqual(live.rows, try fetch(c, query))

        // An update of a field is an update; of a non-field, nothing.
        try c.save([.update(entity: "Session", uuid: cUUID, values: ["name": "bb"])])
        let d3 = try next(raw)
        XCTAssertEqual(d3.updated.map(\.changedKeys), [["name"]])
        try live.apply(d3)
        try c.save([.update(entity: "Session", uuid: cUUID, values: ["stepIndex": 3])])
        XCTAssertNil(raw.readFrame(timeout: 0.3), "stepIndex is neither a field nor a sort key nor in the predicate")
        XCTAssertEqual(live.rows, try fetch(c, query))
        XCTAssertEqual(live.sequence, d3.sequence)
    }

    /// A save that touches no channel's rows sends nothing; one that touches several sends each
    /// its own diff, and one diff per channel however many rows the commit changed.
    func testOneDiffPerChannelPerCommitAndOnlyToChannelsItTouches() throws {
        let c = try client()
        let raw = try RawClient(broker.socketPath)
        let running = try subscribe(raw, ["entity": "Session", "predicate": "state == \"running\""], id: 1)
        let paused = try subscribe(raw, ["entity": "Session", "predicate": "state == \"paused\""], id: 2)
        XCTAssertNotEqual(running.subscription, paused.subscription)
        try c.save([
            .insert(entity: "Session", values: ["name": "x", "state": "running", "startedAt": 1]),
            .insert(entity: "Session", values: ["name": "y", "state": "running", "startedAt": 2]),
        ])
        let reply = try nextReply(raw)
        XCTAssertEqual(reply.id, .integer(1))
        XCTAssertTrue(reply.continues)
        let update = try SubscriptionUpdate(reply.parameters)
        XCTAssertEqual(update.inserted.count, 2, "one diff holds both rows")
        XCTAssertNil(raw.readFrame(timeout: 0.3), "the paused channel heard nothing")
        try c.save([.insert(entity: "Timer", values: ["name": "t"])])
        XCTAssertNil(raw.readFrame(timeout: 0.3), "a Timer save touches no Session channel")
    }

    /// Identical queries share one channel; Unsubscribe ends one with an "end" reply.
    func testIdenticalSubscriptionsShareAChannelAndUnsubscribeEndsOne() throws {
        let c = try client()
        let raw = try RawClient(broker.socketPath)
        let q: JSONObject = ["entity": "Session", "predicate": "stepIndex > 1"]
        let s1 = try subscribe(raw, q, id: 1)
        let s2 = try subscribe(raw, q, id: 2)
        let other = try RawClient(broker.socketPath)
        _ = try subscribe(other, q)
        var status = try c.status()
        XCTAssertEqual(status["subscriptions"]?.int64Value, 3)
        XCTAssertEqual(status["channels"]?.int64Value, 1)
        raw.send(#"{"method":"org.seam.Store.Unsubscribe","parameters":{"subscription":\#(s1.subscription)},"id":9}"#)
        let end = try nextReply(raw)
        XCTAssertEqual(end.id, .integer(1))
        XCTAssertFalse(end.continues)
        XCTAssertEqual(end.parameters["kind"]?.stringValue, "end")
        XCTAssertEqual(try nextReply(raw).id, .integer(9))
        try addSession(c, "z", step: 5)
        XCTAssertEqual(try nextReply(raw).id, .integer(2), "the other subscription goes on")
        XCTAssertEqual(try next(other).inserted.count, 1)
        _ = s2
        // The ended subscription is gone; the other two remain.
        status = try c.status()
        XCTAssertEqual(status["subscriptions"]?.int64Value, 2)
    }

    // MARK: - Resume

    func testResumeGetsTheMissedDiffOrAResync() throws {
        let c = try client()
        try addSession(c, "a")
        let q: JSONObject = ["entity": "Session", "sort": "-name", "limit": 3]
        var live = LiveResult()
        do {
            let raw = try RawClient(broker.socketPath)
            try live.apply(try subscribe(raw, q))
        }  // the subscriber goes away
        let b = try addSession(c, "b")
        try addSession(c, "c")
        try c.save([.update(entity: "Session", uuid: b, values: ["name": "bz"])])
        var p = q
        p["since"] = .integer(live.sequence!)
        let raw = try RawClient(broker.socketPath)
        let resumed = try subscribe(raw, p)
        XCTAssertEqual(resumed.kind, .diff)
        try live.apply(resumed)
        XCTAssertEqual(live.rows, try fetch(c, q))

        // Ahead of the broker: an error that says so.
        p["since"] = .integer(live.sequence! + 100)
        XCTAssertThrowsError(try subscribe(try RawClient(broker.socketPath), p)) { e in
            XCTAssertEqual((e as? VarlinkError)?.name, "org.seam.Store.SequenceAhead")
        }

        // A change the ring of a restarted broker does not hold: a resync, marked with where it
        // resumes from.
        try addSession(c, "before the restart")
        broker = try broker.restarted()
        let c2 = try client()
        try addSession(c2, "d")
        p["since"] = .integer(live.sequence!)
        let resync = try subscribe(try RawClient(broker.socketPath), p)
        XCTAssertEqual(resync.kind, .resync)
        XCTAssertEqual(resync.from, live.sequence)
        try live.apply(resync)
        XCTAssertEqual(live.rows, try fetch(c2, q))
    }

    /// A store restored from an older copy (seamd stopped cleanly each time) holds an older
    /// number: saves after it take numbers past every one handed out before (the directory's
    /// lease says how far), so a resume from a number heard before the restore gets a fresh
    /// result. (Before, the next saves took the numbers again, and the resume got their diffs,
    /// applied to rows the store no longer holds.)
    func testAResumeAfterAStoreIsRestoredFromAnOlderCopyGetsAFreshResult() throws {
        var c = try client()
        try addSession(c, "a")
        broker.stop()
        let older = TemporaryDirectory("seam-older")
        for name in try FileManager.default.contentsOfDirectory(atPath: broker.dataDirectory) where name.hasSuffix(".sqlite") {
            try FileManager.default.copyItem(atPath: broker.dataDirectory + "/" + name, toPath: older.file(name))
        }
        broker = try broker.restarted()
        c = try client()
        let q: JSONObject = ["entity": "Session", "sort": "name", "fields": ["name"]]
        var raw = try RawClient(broker.socketPath)
        var live = LiveResult()
        try live.apply(try subscribe(raw, q))
        for name in ["b", "c"] {
            try addSession(c, name)
            try live.apply(try next(raw))
        }
        XCTAssertEqual(live.rows.map { $0["name"]?.stringValue }, ["a", "b", "c"])
        let heard = try XCTUnwrap(live.sequence)
        broker.stop()
        for name in try FileManager.default.contentsOfDirectory(atPath: broker.dataDirectory)
        where name.hasPrefix("Cloud.sqlite") || name.hasPrefix("Local.sqlite") {
            try FileManager.default.removeItem(atPath: broker.dataDirectory + "/" + name)
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: older.path) {
            try FileManager.default.copyItem(atPath: older.file(name), toPath: broker.dataDirectory + "/" + name)
        }
        broker = try broker.restarted()
        c = try client()
        for name in ["d", "e", "f"] { try addSession(c, name) }  // past the number the subscriber heard
        XCTAssertTrue(broker.log.contains("restored from an older copy"), broker.log.suffix(600).description)
        raw = try RawClient(broker.socketPath)
        var resume = q
        resume["since"] = .integer(heard)
        let first = try subscribe(raw, resume)
        XCTAssertEqual(first.kind, .resync)
        XCTAssertGreaterThan(first.sequence, heard + 1)
        try live.apply(first)
        XCTAssertEqual(live.rows.map { $0["name"]?.stringValue }, ["a", "d", "e", "f"], "what the restored store holds, and the saves since")
    }

    /// The same when one store is restored and the other holds the last number: a client that
    /// fetched at that number and subscribes from it gets a fresh result, not "nothing since"
    /// over rows the restored store no longer holds.
    func testASubscriptionFromBeforeOneStoreIsRestoredGetsAFreshResult() throws {
        var c = try client()
        try c.save([.insert(entity: "UserGroup", values: ["name": "a"])])
        broker.stop()
        let older = TemporaryDirectory("seam-older")
        try FileManager.default.copyItem(atPath: broker.dataDirectory + "/Cloud.sqlite", toPath: older.file("Cloud.sqlite"))
        broker = try broker.restarted()
        c = try client()
        try c.save([.insert(entity: "UserGroup", values: ["name": "b"])])
        try addSession(c, "last")  // the last number is Local's
        let q: JSONObject = ["entity": "UserGroup", "sort": "name", "fields": ["name"]]
        let fetched = try c.call("org.seam.Store.Fetch", q)
        XCTAssertEqual(fetched["rows"]?.arrayValue?.count, 2)
        let at = try XCTUnwrap(fetched["sequence"]?.int64Value)
        broker.stop()
        for name in try FileManager.default.contentsOfDirectory(atPath: broker.dataDirectory) where name.hasPrefix("Cloud.sqlite") {
            try FileManager.default.removeItem(atPath: broker.dataDirectory + "/" + name)
        }
        try FileManager.default.copyItem(atPath: older.file("Cloud.sqlite"), toPath: broker.dataDirectory + "/Cloud.sqlite")
        broker = try broker.restarted()
        XCTAssertTrue(broker.log.contains("Cloud holds an older sequence number"), broker.log.suffix(600).description)
        var resume = q
        resume["since"] = .integer(at)
        let first = try subscribe(try RawClient(broker.socketPath), resume)
        XCTAssertEqual(first.kind, .resync)
        XCTAssertEqual(first.rows.map { $0["name"]?.stringValue }, ["a"], "what the restored store holds")
    }

    /// A power cut takes back saves a subscriber was told of (normal durability): the broker
    /// that starts on what reached the disk numbers its saves past them, so that a resume from
    /// before gets a fresh result, never "nothing since" over rows that are gone.
    func testAResumeAfterAPowerCutGetsAFreshResult() throws {
        try resumeAfterAPowerCut(restartedWith: [])
    }

    /// The same, when the broker that starts after the cut has full durability (a likely answer
    /// to a power cut): the numbers still move on, though it keeps no marker of its own.
    func testAResumeAfterAPowerCutGetsAFreshResultUnderFullDurability() throws {
        try resumeAfterAPowerCut(restartedWith: ["--durability", "full"])
    }

    private func resumeAfterAPowerCut(restartedWith arguments: [String]) throws {
        let c = try client()
        try addSession(c, "a")
        let q: JSONObject = ["entity": "Session", "sort": "name", "fields": ["name"]]
        let raw = try RawClient(broker.socketPath)
        var live = LiveResult()
        try live.apply(try subscribe(raw, q))
        // What the disk holds when the power goes: the directory as it is now (seamd running).
        let diskDirectory = TemporaryDirectory("seam-disk")
        let disk = diskDirectory.path
        defer { withExtendedLifetime(diskDirectory) {} }
        for name in try FileManager.default.contentsOfDirectory(atPath: broker.dataDirectory)
        where !name.hasSuffix("-shm") && name != "seamd.lock" && name != "backups" {
            try FileManager.default.copyItem(atPath: broker.dataDirectory + "/" + name, toPath: disk + "/" + name)
        }
        // A save the subscriber hears of, then the cut: it never reached the disk.
        try addSession(c, "lost")
        try live.apply(try next(raw))
        XCTAssertEqual(live.rows.map { $0["name"]?.stringValue }, ["a", "lost"])
        kill(broker.process.processIdentifier, SIGKILL)
        broker.process.waitUntilExit()

        broker = try BrokerProcess(arguments: arguments, dataDirectory: disk)
        let c2 = try client()
        try addSession(c2, "b")  // on the old broker, it took the number the lost save had
        var p = q
        p["since"] = .integer(live.sequence!)
        let resumed = try subscribe(try RawClient(broker.socketPath), p)
        XCTAssertEqual(resumed.kind, .resync, "a resume from a number the cut took back")
        try live.apply(resumed)
        XCTAssertEqual(live.rows.map { $0["name"]?.stringValue }, ["a", "b"])
        XCTAssertEqual(live.rows, try fetch(c2, q))

        // A clean stop leaves the numbers as they are.
        let before = try c2.status()["sequence"]?.int64Value
        broker = try broker.restarted()
        XCTAssertEqual(try client().status()["sequence"]?.int64Value, before)
    }

    /// SeamSubscriber: an AsyncSequence that survives a broker restart without missing a change.
    func testSubscriberStreamResumesAcrossARestart() async throws {
        let c = try client()
        try addSession(c, "a")
        let subscriber = try SeamSubscriber.connect(path: broker.socketPath, reconnectTimeout: 20)
        defer { subscriber.close() }
        var updates = subscriber.subscribe(LiveQuery("Session", sort: "name", fields: ["name"])).makeAsyncIterator()
        var live = LiveResult()
        try live.apply(try await XCTUnwrapAsync(try await updates.next()))
        XCTAssertEqual(live.rows.count, 1)
        try addSession(c, "b")
        try live.apply(try await XCTUnwrapAsync(try await updates.next()))
        XCTAssertEqual(live.rows.map { $0["name"]?.stringValue }, ["a", "b"])

        broker = try broker.restarted()
        let c2 = try client()
        try addSession(c2, "c")
        // The stream reconnects by itself and resumes: a resync (the new broker's ring is empty).
        while live.rows.count < 3 {
            let u = try await XCTUnwrapAsync(try await updates.next())
            try live.apply(u)
        }
        XCTAssertEqual(live.rows, try fetch(c2, ["entity": "Session", "sort": "name", "fields": ["name"]]))
    }

    /// A consumer that falls behind costs the subscriber `bufferLimit` updates, not one per
    /// commit, and the broker nothing while it takes none: the rest comes as one diff (or
    /// resync) once it takes what is held.
    func testASlowConsumerHoldsAtMostTheBufferLimit() async throws {
        let c = try client()
        try addSession(c, "a")
        // Through a relay that counts what the broker sends the subscriber.
        let sent = Mutex(0)
        let proxy = try FrameProxy(upstream: broker.socketPath, in: broker.directory, drop: { _ in
            sent.withLock { $0 += 1 }
            return false
        })
        defer { proxy.stop() }
        let subscriber = try SeamSubscriber.connect(path: proxy.socketPath, reconnectTimeout: 20, bufferLimit: 4)
        defer { subscriber.close() }
        let query = LiveQuery("Session", sort: "name", fields: ["name"])
        var updates = subscriber.subscribe(query).makeAsyncIterator()
        var live = LiveResult()
        try live.apply(try await XCTUnwrapAsync(try await updates.next()))
        for i in 0..<200 { try addSession(c, String(format: "s%03d", i)) }
        // Nothing taken meanwhile: the stream is full, its subscription ends at the broker, and
        // nothing is asked of the broker while the consumer takes nothing.
        var subscriptions: Int64?
        for _ in 0..<100 where subscriptions != 0 {
            subscriptions = try c.status()["subscriptions"]?.int64Value
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        XCTAssertEqual(subscriptions, 0, "the full stream's subscription ended")
        // A second stream on the same connection: its result comes after what the full stream,
        // had it been subscribed again meanwhile, would have been sent.
        let before = sent.withLock { $0 }
        var marker = subscriber.subscribe(LiveQuery("Timer")).makeAsyncIterator()
        let markerResult = try await XCTUnwrapAsync(try await marker.next())
        XCTAssertEqual(markerResult.kind, .result)
        XCTAssertEqual(sent.withLock { $0 } - before, 1, "not subscribed again (a fresh result each time) while nothing is taken")
        let expected = try fetch(c, ["entity": "Session", "sort": "name", "fields": ["name"]])
        var taken = 0
        while live.rows != expected {
            let u = try await XCTUnwrapAsync(try await updates.next())
            try live.apply(u)
            taken += 1
            XCTAssertLessThan(taken, 20, "one update per commit: the stream held them all")
            if taken >= 20 { break }
        }
        XCTAssertEqual(live.rows.count, 201)
        // It follows again, one diff per commit.
        try addSession(c, "z")
        try live.apply(try await XCTUnwrapAsync(try await updates.next()))
        XCTAssertEqual(live.rows.last?["name"]?.stringValue, "z")
        XCTAssertEqual(try c.status()["subscriptions"]?.int64Value, 2, "the stream, and the second")
        _ = marker  // the second stream lives to here: its subscription is one of the two
    }

    /// A stream ended before its first reply came still unsubscribes: the broker keeps nothing
    /// for it (it used to keep the subscription until the connection closed).
    func testAStreamEndedBeforeItsFirstReplyIsUnsubscribed() async throws {
        let c = try client()
        let subscriber = try SeamSubscriber.connect(path: broker.socketPath, reconnectTimeout: 20)
        defer { subscriber.close() }
        for _ in 0..<20 {
            let task = Task { for try await _ in subscriber.subscribe(LiveQuery("Session", sort: "name")) {} }
            task.cancel()
            _ = await task.result
        }
        var count: Int64 = -1
        for _ in 0..<100 {
            count = try c.status()["subscriptions"]?.int64Value ?? -1
            if count == 0 { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        XCTAssertEqual(count, 0, "every ended stream was unsubscribed")
        // The connection still serves a stream that is kept.
        var updates = subscriber.subscribe(LiveQuery("Session", sort: "name")).makeAsyncIterator()
        let first = try await XCTUnwrapAsync(try await updates.next())
        XCTAssertEqual(first.kind, .result)
        // The last of the ended streams may still be in flight when the count first reads 0.
        for _ in 0..<100 {
            count = try c.status()["subscriptions"]?.int64Value ?? -1
            if count == 1 { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        XCTAssertEqual(count, 1, "only the kept stream is left")
    }

    // MARK: - The property

    /// Random saves against random channels: the array each subscriber keeps by applying diffs
    /// always equals a fresh fetch of its query.
    func testAppliedDiffsAlwaysEqualAFreshFetch() throws {
        let rounds = max(20, Int(ProcessInfo.processInfo.environment["SEAM_PROPERTY_ITERATIONS"] ?? "") ?? 60) / 3
        let seed = ProcessInfo.processInfo.environment["SEAM_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("SubscriptionTests: seed \(seed) (replay: SEAM_TEST_SEED=\(seed)), \(rounds) rounds")
        var random = SplitMix64(seed: seed)
        func pick<T>(_ xs: [T]) -> T { xs[Int(random.next() % UInt64(xs.count))] }
        let c = try client()
        let names = ["a", "b", "c", "d", "e", "ab"]
        let states = ["running", "paused", "finished"]
        let predicates: [(String?, JSONObject)] = [
            (nil, [:]), ("state == \"running\"", [:]), ("stepIndex > 1", [:]), ("name BEGINSWITH \"a\" OR state == \"paused\"", [:]),
            ("name == $n", ["n": "b"]), ("state != \"finished\" AND stepIndex <= 2", [:]),
        ]
        let sorts = ["", "name", "-stepIndex, name", "state, -name", "-uuid"]
        let raw = try RawClient(broker.socketPath)
        var queries: [JSONObject] = []
        var lives: [Int: LiveResult] = [:]
        for id in 0..<14 {
            let (predicate, parameters) = pick(predicates)
            var q: JSONObject = ["entity": "Session"]
            if let predicate { q["predicate"] = .string(predicate) }
            if !parameters.isEmpty { q["parameters"] = .object(parameters) }
            let sort = pick(sorts)
            if !sort.isEmpty { q["sort"] = .string(sort) }
            if let limit = pick([nil, nil, 1, 2, 4] as [Int?]) { q["limit"] = .integer(Int64(limit)) }
            if random.next() % 2 == 0 { q["fields"] = ["name", "state"] }
            queries.append(q)
            var live = LiveResult()
            try live.apply(try subscribe(raw, q, id: id))
            lives[id] = live
        }
        // The barrier: a Timer channel, which no Session save touches.
        let (_, timers) = try c.save([.insert(entity: "Timer", values: ["name": "barrier"])])
        let barrier = timers[0]
        _ = try subscribe(raw, ["entity": "Timer"], id: 99)
        var existing: [String] = []
        for round in 0..<rounds {
            var changes: [SeamConnection.Change] = []
            for _ in 0..<(1 + Int(random.next() % 3)) {
                let roll = random.next() % 10
                if existing.isEmpty || roll < 4 {
                    changes.append(.insert(entity: "Session", values: ["uuid": .string(UUIDText.random()), "name": .string(pick(names)),
                                                                        "state": .string(pick(states)), "stepIndex": .integer(Int64(random.next() % 4)),
                                                                        "startedAt": 1_700_000_000]))
                } else if roll < 6 {
                    let u = pick(existing)
                    existing.removeAll { $0 == u }
                    changes.append(.delete(entity: "Session", uuid: u))
                } else {
                    let u = pick(existing)
                    var values: JSONObject = [:]
                    if random.next() % 2 == 0 { values["name"] = .string(pick(names)) }
                    if random.next() % 2 == 0 { values["state"] = .string(pick(states)) }
                    values["stepIndex"] = .integer(Int64(random.next() % 4))
                    changes.append(.update(entity: "Session", uuid: u, values: values))
                }
            }
            // No two operations on one row in a save: keep the first.
            var seen = Set<String>()
            changes = changes.filter { ch in
                switch ch {
                case .insert: return true
                case .update(_, let u, _), .delete(_, let u): return seen.insert(u).inserted
                }
            }
            let (_, inserted) = try c.save(changes)
            existing += inserted
            // The barrier's save comes after: once its diff is read, every diff of the round was.
            let (barrierSequence, _) = try c.save([.update(entity: "Timer", uuid: barrier, values: ["repeatCount": .integer(Int64(round + 2))])])
            while true {
                let reply = try nextReply(raw)
                guard case .integer(let id)? = reply.id else { return XCTFail("a reply without an id") }
                let update = try SubscriptionUpdate(reply.parameters)
                if id == 99 {
                    if update.sequence == barrierSequence { break }
                    continue
                }
                try lives[Int(id)]!.apply(update)
            }
            for (id, q) in queries.enumerated() {
                let expected = try fetch(c, q)
                XCTAssertEqual(lives[id]!.rows, expected, "seed \(seed) round \(round): \(q)")
                if lives[id]!.rows != expected { return }
            }
        }
    }
}

/// `XCTUnwrap` for an async value (XCTest's takes an autoclosure that cannot await).
func XCTUnwrapAsync<T>(_ value: T?, file: StaticString = #filePath, line: UInt = #line) async throws -> T {
    try XCTUnwrap(value, file: file, line: line)
}
