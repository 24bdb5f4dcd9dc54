import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamTestSupport
import XCTest

/// A big save is written in steps (`Broker+Steps`): while it runs, another client's saves into
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
}
