import SeamJSON
import XCTest
@testable import SeamSync

/// The sync worker's decisions (`SyncPlanner`) with no server and no broker: what a batch of
/// server records does to this store, and what an export writes over the server's version.
final class SyncPlannerTests: XCTestCase {
    let planner = SyncPlanner(synced: ["Timer": ["uuid", "name", "icon"]], device: "here", serverToken: 40)
    let now = 1_800_000_000.0
    let a = RecordKey(type: "Timer", uuid: "00000000-0000-4000-8000-00000000000a")
    let b = RecordKey(type: "Timer", uuid: "00000000-0000-4000-8000-00000000000b")

    func incoming(_ key: RecordKey, _ fields: JSONObject, tag: Int64, deleted: Bool = false) -> SyncPlanner.Incoming {
        SyncPlanner.Incoming(key: key, fields: fields, tag: tag, deleted: deleted)
    }

    func entities(_ list: [JSON]) -> [String] { list.compactMap { $0["entity"]?.stringValue } }

    // MARK: - Import

    func testANewRecordIsInsertedAndItsFieldsOfANewerModelKept() {
        var local = SyncPlanner.Local()
        local.fresh = true
        let plan = planner.planImport([incoming(a, ["name": "Tea", "icon": "cup", "colour": "green"], tag: 41),
                                       incoming(b, ["name": "Run"], tag: 42)], local: local, now: now)
        XCTAssertEqual(plan.applied, 2)
        XCTAssertEqual(entities(plan.save.inserts), ["Timer", "SyncRecord", "Timer"], "a SyncRecord only where fields are kept")
        XCTAssertEqual(plan.save.inserts[0]["values"], ["uuid": .string(a.uuid), "name": "Tea", "icon": "cup"])
        let record = plan.save.inserts[1]["values"]
        XCTAssertEqual(record?["unknownFields"], ["colour": "green"])
        XCTAssertEqual(record?["changeTag"], "41")
        XCTAssertEqual(record?["recordUUID"]?.stringValue, a.uuid)
        XCTAssertEqual(Set(plan.insertedHere), [a, b], "a fresh import notes what it brought")
        XCTAssertEqual(plan.cleared, [a, b])
    }

    func testAKnownRecordIsUpdatedWithItsTagAndOwnWritesComingBackAreNothing() {
        var local = SyncPlanner.Local()
        local.known = [a: ("sr-a", 30), b: ("sr-b", 42)]
        local.existing = [a, b]
        let plan = planner.planImport([incoming(a, ["name": "Green tea"], tag: 43), incoming(b, ["name": "mine"], tag: 42)],
                                      local: local, now: now)
        XCTAssertEqual(plan.applied, 1)
        XCTAssertEqual(plan.save.inserts, [])
        XCTAssertEqual(plan.save.updates.map { $0["uuid"]?.stringValue }, [a.uuid, "sr-a"])
        XCTAssertEqual(plan.save.updates[1]["values"]?["changeTag"], "43")
        XCTAssertEqual(plan.cleared, [a], "b was this machine's own write")
        XCTAssertEqual(plan.insertedHere, [], "not a fresh import")
    }

    func testATombstoneDeletesTheRowAndItsSyncRecord() {
        var local = SyncPlanner.Local()
        local.known = [a: ("sr-a", 30)]
        local.existing = [a]
        let plan = planner.planImport([incoming(a, [:], tag: 44, deleted: true), incoming(b, [:], tag: 45, deleted: true)],
                                      local: local, now: now)
        XCTAssertEqual(plan.save.deletes.map { $0["uuid"]?.stringValue }, [a.uuid, "sr-a"], "b is not here: nothing to delete")
        XCTAssertEqual(plan.applied, 2)
    }

    /// A record edited here since the last export: the server's version does not go over it,
    /// and a row held without a SyncRecord gets one of tag 0, so that the token does not count
    /// the server's version as held (the export then merges by the clocks).
    func testARecordEditedHereIsPassedOverAndMarkedAsNotHeld() {
        var local = SyncPlanner.Local()
        local.existing = [a]
        local.pending = [a, b]
        let plan = planner.planImport([incoming(a, ["name": "theirs"], tag: 46), incoming(b, ["name": "theirs"], tag: 47)],
                                      local: local, now: now)
        XCTAssertEqual(plan.applied, 0)
        XCTAssertEqual(plan.cleared, [])
        XCTAssertEqual(entities(plan.save.inserts), ["SyncRecord"], "b was deleted here: its delete's export leaves no record")
        XCTAssertEqual(plan.save.inserts[0]["values"]?["changeTag"], "0")
        XCTAssertEqual(plan.save.updates, [])
    }

    // MARK: - Export

    func outgoing(_ key: RecordKey, _ row: JSONObject?, stamps: [String: String] = [:], edited: Bool = true,
                  knownTag: Int64? = nil) -> SyncExport.Outgoing {
        SyncExport.Outgoing(key: key, row: row, stamps: stamps, edited: edited, knownTag: knownTag)
    }

    func v(_ seconds: Double, _ device: String) -> String { FieldVersion.stamp(time: seconds, device: device) }

    func testARecordTheServerLacksIsInsertedWithEveryAttribute() {
        let write = planner.planWrite(outgoing(a, ["uuid": .string(a.uuid), "name": "Tea", "icon": "cup"], stamps: ["name": v(100, "here")]),
                                      over: nil)
        guard case .insert(let fields, let versions, let adopt) = write else { return XCTFail("\(write)") }
        XCTAssertEqual(fields, ["name": "Tea", "icon": "cup"], "the uuid has a column of its own")
        XCTAssertEqual(versions, ["name": .string(v(100, "here"))])
        XCTAssertFalse(adopt)
        XCTAssertEqual(planner.planWrite(outgoing(a, nil), over: nil), .nothing(deletedThere: false), "a delete of what the server never had")
    }

    func testADeleteWinsWhicheverSideMadeIt() {
        let deleted: SyncPlanner.ServerRecord = ([:], [:], 50, true)
        XCTAssertEqual(planner.planWrite(outgoing(a, ["name": "edited here"], stamps: ["name": v(200, "here")]), over: deleted),
                       .nothing(deletedThere: true), "edited here, deleted there: it goes here too")
        let live: SyncPlanner.ServerRecord = (["name": "x"], ["name": .string(v(10, "there"))], 51, false)
        XCTAssertEqual(planner.planWrite(outgoing(a, nil), over: live), .tombstone(over: 51))
    }

    /// Edits of different fields on two machines both stand; of one field, the later version
    /// wins, and the machine whose edit lost takes the server's value back.
    func testConcurrentEditsMergeFieldByField() {
        let server: SyncPlanner.ServerRecord = (["name": "Tea", "icon": "mug"], ["name": .string(v(100, "there")), "icon": .string(v(300, "there"))],
                                                60, false)
        let mine = outgoing(a, ["name": "Green tea", "icon": "cup"], stamps: ["name": v(200, "here"), "icon": v(250, "here")], knownTag: 55)
        guard case .update(let fields, let versions, let over, let adopt) = planner.planWrite(mine, over: server) else { return XCTFail() }
        XCTAssertEqual(fields, ["name": "Green tea", "icon": "mug"], "name: mine is later; icon: theirs is")
        XCTAssertEqual(versions["name"], .string(v(200, "here")))
        XCTAssertEqual(versions["icon"], .string(v(300, "there")))
        XCTAssertEqual(over, 60)
        XCTAssertTrue(adopt, "the icon lost: this machine takes 'mug'")
    }

    /// An edit made after this machine held the server's version follows it, whatever the clocks:
    /// its stamp moves just past the version it replaced.
    func testAnEditMadeAfterHoldingTheServersVersionWinsOverAClockAhead() {
        let server: SyncPlanner.ServerRecord = (["name": "Tea"], ["name": .string(v(500, "there"))], 60, false)
        let held = outgoing(a, ["name": "Chai"], stamps: ["name": v(400, "here")], knownTag: 60)
        guard case .update(let fields, _, _, let adopt) = planner.planWrite(held, over: server) else { return XCTFail() }
        XCTAssertEqual(fields["name"], "Chai")
        XCTAssertFalse(adopt)
        // Not held (the server's version came while the edit waited): the clocks decide.
        let concurrent = outgoing(a, ["name": "Chai"], stamps: ["name": v(400, "here")], knownTag: 59)
        guard case .unchanged(let tag, let unchanged, let adoptTheirs) = planner.planWrite(concurrent, over: server) else { return XCTFail() }
        XCTAssertEqual(tag, 60)
        XCTAssertEqual(unchanged["name"], "Tea")
        XCTAssertTrue(adoptTheirs)
        // Without a SyncRecord, holding is the import's token having passed the tag (40 here).
        XCTAssertTrue(planner.holds(server, knownTag: 60))
        XCTAssertFalse(planner.holds(server, knownTag: nil))
        XCTAssertTrue(planner.holds((["name": "Tea"], [:], 40, false), knownTag: nil))
    }

    func testVersionsDatedPastAnyClockDoNotCount() {
        let versions: JSONObject = ["name": .string(v(now + 60, "there")), "icon": .string(v(now + 3 * 86_400, "rogue")), "bad": "not a version"]
        XCTAssertEqual(SyncPlanner.acceptedVersions(versions, now: now), ["name": .string(v(now + 60, "there"))])
    }
}
