import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamTestSupport
import XCTest

/// A store holds its writes while its WAL is drained (`WriteGate`): a writer that never
/// pauses makes its own store's calls wait now and then; the other store's writer is never
/// parked, nothing is refused or lost, and every parked call is answered.
final class HeldWritesTests: BrokerTestCase {
    private let configDirectory = TemporaryDirectory("held-writes")

    /// Checkpoints every 50 pages, so the hold comes at 400: each save below passes it.
    override func setUpWithError() throws {
        let config = configDirectory.file("seamd.json")
        try #"{"limits": {"checkpointFrames": 50}}"#.write(toFile: config, atomically: true, encoding: .utf8)
        broker = try BrokerProcess(arguments: ["--config", config, "--no-roles"])
    }

    private func cloudStore(_ c: SeamConnection) throws -> JSONObject {
        let stores = try c.status()["stores"]?.arrayValue ?? []
        return stores.first { $0["name"]?.stringValue == "Cloud" }?.objectValue ?? [:]
    }

    func testAWriterThatNeverPausesHoldsItsOwnStoreAndLosesNothing() throws {
        // 30 pipelined saves of 500 timers with 2 kB names, each some 500 WAL frames: past the
        // limit (400 here) at every save, whatever the pauses between them.
        let saves = 30, rows = 500
        let name = String(repeating: "n", count: 2_000)
        let writer = try RawClient(broker.socketPath)
        writer.send(String(decoding: Call(method: "org.seam.Store.Hello", parameters: ["version": 1], id: .integer(0)).frame().dropLast(),
                           as: UTF8.self))
        let frames = (0..<saves).map { s in
            Call(method: "org.seam.Store.Save", parameters: ["inserts": .array((0..<rows).map { r in
                ["entity": "Timer", "values": ["name": .string("\(s)-\(r) \(name)")]]
            })], id: .integer(Int64(s + 1))).frame()
        }
        let sending = Unchecked(writer)
        Thread.detachNewThread { for f in frames { sending.value.send(f) } }

        // Meanwhile another client saves Sessions (the Local store) one at a time.
        let local = Unchecked(try client())
        let stop = Locked(false)
        let localSaves = Locked(0), localFailures = Locked<[String]>([])
        // What each acknowledged save's reply said (its uuid and sequence number), to tell a
        // lost row from one saved with another's values, should a save go astray.
        let acknowledged = Locked<[String]>([])
        let localDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { localDone.signal() }
            while !stop.value {
                do {
                    let reply = try local.value.call("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                        "name": .string("beside \(localSaves.value)"), "startedAt": .integer(1_700_000_000)]]]])
                    let uuid = reply["changes"]?[0]?["uuid"]?.stringValue ?? "?"
                    acknowledged.mutate { $0.append("\(uuid) at \(reply["sequence"]?.int64Value ?? -1)") }
                    localSaves.mutate { $0 += 1 }
                } catch {
                    localFailures.mutate { $0.append("\(error)") }
                    return
                }
            }
        }

        XCTAssertNotNil(writer.readFrame(timeout: 10), "Hello answered")
        for s in 0..<saves {
            guard let frame = writer.readFrame(timeout: 60) else { return XCTFail("save \(s + 1) was never answered") }
            let reply = try Reply(try JSON.decode(Array(frame.utf8)))
            XCTAssertNil(reply.error, "save \(s + 1): \(reply.parameters)")
            XCTAssertEqual(reply.id, .integer(Int64(s + 1)), "replies in order")
        }
        stop.mutate { $0 = true }
        XCTAssertEqual(localDone.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(localFailures.value, [])
        XCTAssertGreaterThan(localSaves.value, 0)

        let c = try client()
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Timer"])["count"]?.int64Value, Int64(saves * rows))
        // Each acknowledged save once, and nothing else: a name twice is a call handled twice.
        let stored = try c.fetch("Session", fields: ["uuid", "name"])
        let names = stored.compactMap { $0["name"]?.stringValue }
        let byName = Dictionary(grouping: stored, by: { $0["name"]?.stringValue ?? "" })
        let twice = byName.filter { $0.value.count > 1 }.keys.sorted()
        let missing = (0..<localSaves.value).filter { byName["beside \($0)"] == nil }
        if !twice.isEmpty || !missing.isEmpty {
            // Where each went: the reply's uuid and sequence, and what the store holds at that uuid.
            let said = acknowledged.value
            for n in missing.prefix(20) {
                let uuid = String(said[n].prefix { $0 != " " })
                let held = try c.row("Session", uuid: uuid).map { "\($0)" } ?? "nothing"
                print("beside \(n): acknowledged as \(said[n]); the store holds \(held)")
            }
            for name in twice.prefix(20) {
                print("\(name): rows \(byName[name]!.map { $0["uuid"]?.stringValue ?? "?" })")
            }
        }
        XCTAssertEqual(twice, [], "saved more than once; seamd's log:\n\(broker.log)")
        XCTAssertEqual(missing, [], "acknowledged and not in the store; seamd's log:\n\(broker.log)")
        XCTAssertEqual(Set(names), Set((0..<localSaves.value).map { "beside \($0)" }), "the Sessions are the acknowledged saves")
        let cloud = try cloudStore(c)
        XCTAssertGreaterThan(cloud["writeHolds"]?.int64Value ?? 0, 0, "the Cloud store held its writes: \(cloud)")
        XCTAssertLessThan(cloud["walFrames"]?.int64Value ?? .max, 3 * 400 + 600, "its writer never went far past the inline bound")
    }
}

/// A client handed to the one thread that uses it.
private final class Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
