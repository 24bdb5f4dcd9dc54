import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamTestSupport
import XCTest

/// A big save is written in steps (`SteppedSaves`): while it runs, another client's saves into
/// the other store and its reads are answered; a save into its store waits and comes after it;
/// it is still one save — one number, one reply, one diff for a subscriber — and its caller's
/// next call is answered after it.
final class SaveInStepsTests: BrokerTestCase {
    private func reply(_ client: RawClient, timeout: Double = 60) throws -> Reply {
        guard let frame = client.readFrameBytes(timeout: timeout) else { throw ClientError(.disconnected) }
        return try Reply(try JSON.decode(frame))
    }

    private func running(_ c: SeamConnection) throws -> Bool { try c.status()["saveInSteps"].map { $0 != .null } ?? false }

    func testOthersAreServedWhileABigSaveIsWrittenAndItStaysOneSave() throws {
        let subscriber = try RawClient(broker.socketPath)
        subscriber.send(Call(method: "org.seam.Store.Subscribe", parameters: ["entity": "Timer", "fields": ["name"]], more: true, id: .integer(1)).frame())
        XCTAssertEqual(try reply(subscriber).parameters["kind"]?.stringValue, "result")

        // The big save, and a call pipelined after it.
        let rows = 10_000
        let saver = try RawClient(broker.socketPath)
        saver.send(Call(method: "org.seam.Store.Hello", parameters: ["version": 1], id: .integer(1)).frame())
        XCTAssertNil(try reply(saver).error)
        saver.send(Call(method: "org.seam.Store.Save", parameters: ["inserts": .array((0..<rows).map { i in
            ["entity": "Timer", "values": ["name": .string("big \(i)")]]
        })], id: .integer(2)).frame() + Call(method: "org.seam.Store.Count", parameters: ["entity": "Timer"], id: .integer(3)).frame())

        let other = try client()
        try eventually(30, "the save runs in steps") { (try? self.running(other)) == true }
        // A person sees it, and what it holds up (when it still ran after `seam status`, it ran
        // while status was asked: the saver has only this one).
        let shown = try Executables.run("seam", ["--socket", broker.socketPath, "status"])
        if try running(other) {
            XCTAssertTrue(shown.stdout.contains("saving in steps: 10000 operations into Cloud"), shown.stdout)
        }
        // Saves into the other store and reads are answered while it runs.
        var localSequences: [Int64] = []
        var answeredWhileRunning = 0
        while try running(other) {
            let saved = try other.call("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                "name": "beside", "startedAt": .integer(1_700_000_000)]]]])
            localSequences.append(saved["sequence"]?.int64Value ?? -1)
            XCTAssertEqual(try other.call("org.seam.Store.Count", ["entity": "Timer"])["count"]?.int64Value, 0,
                           "reads see what was committed before it")
            if try running(other) { answeredWhileRunning += 1 }
            if answeredWhileRunning >= 3 { break }
        }
        XCTAssertGreaterThan(answeredWhileRunning, 0, "a save into the other store was answered while the big one ran")
        // A save into its store waits for it, and comes after it.
        let after = try other.call("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": "after"]]]])

        let big = try reply(saver)
        XCTAssertNil(big.error, "\(big.parameters)")
        XCTAssertEqual(big.id, .integer(2))
        let bigSequence = try XCTUnwrap(big.parameters["sequence"]?.int64Value)
        XCTAssertEqual(big.parameters["changes"]?.arrayValue?.count, rows)
        XCTAssertTrue(localSequences.allSatisfy { $0 < bigSequence }, "its number was taken at its end: \(localSequences) < \(bigSequence)")
        XCTAssertGreaterThan(after["sequence"]?.int64Value ?? 0, bigSequence)
        let counted = try reply(saver)
        XCTAssertEqual(counted.id, .integer(3), "the saver's next call is answered after it")
        XCTAssertGreaterThanOrEqual(counted.parameters["count"]?.int64Value ?? 0, Int64(rows))

        // The subscriber hears it as one diff.
        var inserted: [Int64: Int] = [:]
        while inserted[bigSequence] == nil {
            let diff = try reply(subscriber)
            guard let sequence = diff.parameters["sequence"]?.int64Value else { continue }
            inserted[sequence] = diff.parameters["inserted"]?.arrayValue?.count
        }
        XCTAssertEqual(inserted[bigSequence], rows)
        XCTAssertEqual(try other.call("org.seam.Store.Count", ["entity": "Timer"])["count"]?.int64Value, Int64(rows + 1))
    }

    func testABigSaveThatFailsPartWayChangesNothingAndFreesItsStore() throws {
        let c = try client()
        let taken = try c.call("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": "taken"]]]])
        let uuid = try XCTUnwrap(taken["changes"]?[0]?["uuid"]?.stringValue)
        var inserts: [JSON] = (0..<2_000).map { i in ["entity": "Timer", "values": ["name": .string("big \(i)")]] }
        inserts[1_500] = ["entity": "Timer", "values": ["uuid": .string(uuid), "name": "twin"]]
        let saver = try RawClient(broker.socketPath)
        saver.send(Call(method: "org.seam.Store.Hello", parameters: ["version": 1], id: .integer(1)).frame())
        XCTAssertNil(try reply(saver).error)
        saver.send(Call(method: "org.seam.Store.Save", parameters: ["inserts": .array(inserts)], id: .integer(2)).frame())
        let failed = try reply(saver)
        XCTAssertEqual(failed.error, "org.seam.Store.Conflict", "\(failed.parameters)")
        XCTAssertTrue(failed.parameters["message"]?.stringValue?.contains(uuid) == true, "it names the row: \(failed.parameters)")
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Timer"])["count"]?.int64Value, 1, "nothing of it stayed")
        XCTAssertFalse(try running(c))
        _ = try c.call("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": "next"]]]])
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Timer"])["count"]?.int64Value, 2)
    }

    /// A big save's commit runs on a thread of its own, and a reader may see it before the loop
    /// has told anyone: subscriptions made all through a run of big saves each get a result and
    /// then every later save's diff once — no save missed, none applied twice.
    func testSubscriptionsMadeWhileBigSavesCommitJoinThemWithNoGapAndNoOverlap() throws {
        let saves = 24, rows = 300
        let saver = try RawClient(broker.socketPath)
        saver.send(Call(method: "org.seam.Store.Hello", parameters: ["version": 1], id: .integer(0)).frame())
        XCTAssertNil(try reply(saver).error)
        var frames: [UInt8] = []
        for k in 0..<saves {
            frames += Call(method: "org.seam.Store.Save", parameters: ["inserts": .array((0..<rows).map { i in
                ["entity": "Timer", "values": ["name": .string("save \(k) row \(i)")]]
            })], id: .integer(Int64(k + 1))).frame()
        }
        saver.send(frames)
        var subscribers: [RawClient] = []
        var answered = 0
        var last: Int64 = 0
        while answered < saves {
            if let frame = saver.readFrameBytes(timeout: 0.002) {
                let r = try Reply(try JSON.decode(frame))
                XCTAssertNil(r.error, "\(r.parameters)")
                last = max(last, r.parameters["sequence"]?.int64Value ?? 0)
                answered += 1
            }
            let s = try RawClient(broker.socketPath)
            s.send(Call(method: "org.seam.Store.Subscribe", parameters: ["entity": "Timer", "fields": ["name"]], more: true, id: .integer(1)).frame())
            subscribers.append(s)
        }
        XCTAssertGreaterThanOrEqual(subscribers.count, saves, "subscriptions were made all through the saves")
        for (n, s) in subscribers.enumerated() {
            var uuids = Set<String>()
            var at: Int64 = -1
            while at < last {
                let r = try reply(s)
                XCTAssertNil(r.error, "\(r.parameters)")
                let p = r.parameters
                let sequence = try XCTUnwrap(p["sequence"]?.int64Value)
                XCTAssertGreaterThan(sequence, at, "subscriber \(n): sequences only rise")
                switch p["kind"]?.stringValue {
                case "result":
                    XCTAssertEqual(at, -1, "subscriber \(n): one result, first")
                    for row in p["rows"]?.arrayValue ?? [] { uuids.insert(row["uuid"]?.stringValue ?? "") }
                case "diff":
                    XCTAssertNotEqual(at, -1, "subscriber \(n): a diff before its result")
                    for inserted in p["inserted"]?.arrayValue ?? [] {
                        let uuid = inserted["uuid"]?.stringValue ?? ""
                        XCTAssertTrue(uuids.insert(uuid).inserted, "subscriber \(n): a row its result already held came again at \(sequence)")
                    }
                    XCTAssertEqual(p["deleted"]?.arrayValue?.count ?? 0, 0)
                default:
                    XCTFail("subscriber \(n): \(p)")
                }
                at = sequence
            }
            XCTAssertEqual(uuids.count, saves * rows, "subscriber \(n) holds every row once")
        }
    }
}
