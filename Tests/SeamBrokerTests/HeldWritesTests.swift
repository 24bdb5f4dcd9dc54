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
        let localDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { localDone.signal() }
            while !stop.value {
                do {
                    _ = try local.value.call("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                        "name": .string("beside \(localSaves.value)"), "startedAt": .integer(1_700_000_000)]]]])
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
        let names = try c.fetch("Session", fields: ["name"]).compactMap { $0["name"]?.stringValue }
        let twice = Dictionary(grouping: names, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        XCTAssertEqual(twice, [], "saved more than once; seamd's log:\n\(broker.log)")
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
