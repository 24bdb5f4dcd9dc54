import Foundation
import SeamContext
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// Routing, fetching, saving, change sets and link rules — on store files.
final class ContextTests: ContextTestCase {
    func testInsertsAreRoutedByConfiguration() throws { try onFilesAndInMemory(checkInsertsAreRoutedByConfiguration) }
    func testDefaultsAreFilledAndUUIDsGenerated() throws { try onFilesAndInMemory(checkDefaultsAreFilledAndUUIDsGenerated) }
    func testFetchRequests() throws { try onFilesAndInMemory(checkFetchRequests) }
    func testUpdatesReportOnlyChangedKeys() throws { try onFilesAndInMemory(checkUpdatesReportOnlyChangedKeys) }
    func testSequenceNumbersIncreaseAcrossBothStoresAndTheRingAnswersSince() throws { try onFilesAndInMemory(checkSequenceNumbersIncreaseAcrossBothStoresAndTheRingAnswersSince) }
    func testDeletingATimerDeletesItsSessionAcrossTheSeam() throws { try onFilesAndInMemory(checkDeletingATimerDeletesItsSessionAcrossTheSeam) }
    func testDeletingAGroupNullifiesItsTimers() throws { try onFilesAndInMemory(checkDeletingAGroupNullifiesItsTimers) }
    func testASyncDeleteLeavesTheRunningSessionAsAnOrphan() throws { try onFilesAndInMemory(checkASyncDeleteLeavesTheRunningSessionAsAnOrphan) }
    func testASyncDeleteOfAGroupLeavesItsTimersAlone() throws { try onFilesAndInMemory(checkASyncDeleteOfAGroupLeavesItsTimersAlone) }
    func testASecondSessionForOneTimerIsRefusedAndNothingChanges() throws { try onFilesAndInMemory(checkASecondSessionForOneTimerIsRefusedAndNothingChanges) }
    func testBadInputGetsTypedErrors() throws { try onFilesAndInMemory(checkBadInputGetsTypedErrors) }
    func testAParentAndItsChildDeleteInEitherOrder() throws { try onFilesAndInMemory(checkAParentAndItsChildDeleteInEitherOrder) }
    func testInsertingAnExistingRowAndDeletingItIsADuplicate() throws { try onFilesAndInMemory(checkInsertingAnExistingRowAndDeletingItIsADuplicate) }
    func testASaveReplacesATimersSessionInAnyOrder() throws { try onFilesAndInMemory(checkASaveReplacesATimersSessionInAnyOrder) }
    func testManyLinkedRowsDeleteInOneSave() throws { try onFilesAndInMemory(checkManyLinkedRowsDeleteInOneSave) }
    func testAConditionalSaveOlderThanTheHistoryKeptIsRefused() throws {
        try onFilesAndInMemory(checkAConditionalSaveOlderThanTheHistoryKeptIsRefused)
    }
    func testDanglingLinksAreReported() throws { try onFilesAndInMemory(checkDanglingLinksAreReported) }
    func testHistoryKeepsCloudChangesAndCanBePurged() throws { try onFilesAndInMemory(checkHistoryKeepsCloudChangesAndCanBePurged) }
    func testSnapshotsPinReads() throws { try onFilesAndInMemory(checkSnapshotsPinReads) }
    func testTheSequenceSurvivesReopening() throws { try onFilesAndInMemory(checkTheSequenceSurvivesReopening) }
    func testAStoreRefusedAtOpenStillHoldsItsSequenceNumbers() throws { try onFilesAndInMemory(checkAStoreRefusedAtOpenStillHoldsItsSequenceNumbers) }
    func testAnUpdateToCanonicallyEquivalentTextIsSaved() throws { try onFilesAndInMemory(checkAnUpdateToCanonicallyEquivalentTextIsSaved) }

    func checkInsertsAreRoutedByConfiguration() throws {
        let timer = try addTimer("Tea")
        let session = try addSession(timer: timer)
        XCTAssertEqual(try context.store(of: "Timer"), inMemory ? "Default" : "Cloud")
        XCTAssertEqual(try context.store(of: "Session"), inMemory ? "Default" : "Local")
        XCTAssertEqual(try context.row("Timer", timer)?["name"], .string("Tea"))
        XCTAssertEqual(try context.row("Session", session)?["timerUUID"], .uuid(timer))
        if !inMemory {
            let cloud = try XCTUnwrap(context.database("Cloud"))
            let local = try XCTUnwrap(context.database("Local"))
            XCTAssertEqual(try cloud.scalar("SELECT count(*) FROM Timer"), .integer(1))
            XCTAssertEqual(try local.scalar("SELECT count(*) FROM Session"), .integer(1))
            XCTAssertEqual(try local.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'Timer'"), .integer(0))
        }
    }

    func checkDefaultsAreFilledAndUUIDsGenerated() throws {
        let set = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "UserGroup", values: ["name": .string("Kitchen")])])))
        let uuid = set.changes[0].uuid
        XCTAssertTrue(UUIDText.isCanonical(uuid))
        let row = try XCTUnwrap(context.row("UserGroup", uuid))
        XCTAssertEqual(row["sortOrder"], .integer(0))
        XCTAssertEqual(row["createdAt"], .date(0))
        // Time-ordered (UUIDv7): of now, each greater than the one before, in one save or several.
        let ms = try XCTUnwrap(TimeOrderedUUIDs.millisecond(of: uuid), "a version-7 UUID: \(uuid)")
        XCTAssertLessThan(abs(Double(ms) / 1000 - Date().timeIntervalSince1970), 60)
        var made = [uuid]
        for _ in 0..<3 {
            let more = try XCTUnwrap(context.save(SaveRequest((0..<200).map { .insert(entity: "UserGroup", values: ["name": .string("g\($0)")]) })))
            made += more.changes.map(\.uuid)
        }
        XCTAssertEqual(made, made.sorted())
        XCTAssertEqual(Set(made).count, made.count)
        // A key a client gives is kept as it is.
        let given = "0f8fad5b-d9cb-469f-a165-70867728950e"
        XCTAssertEqual(try context.save(SaveRequest([.insert(entity: "UserGroup", values: ["uuid": .uuid(given), "name": .string("Given")])]))?.changes[0].uuid, given)
    }

    func checkFetchRequests() throws {
        for (i, name) in ["b", "A", "c", "D", "e"].enumerated() { try addTimer(name, sortOrder: Int64(i % 2)) }
        let all = try context.fetch(FetchRequest("Timer", sort: "name[c]"))
        XCTAssertEqual(all.map { $0["name"].stringValue! }, ["A", "b", "c", "D", "e"])
        let page = try context.fetch(FetchRequest("Timer", sort: "name[c]", limit: 2, offset: 1, attributes: ["name"]))
        XCTAssertEqual(page.map { $0["name"].stringValue! }, ["b", "c"])
        XCTAssertEqual(page[0].values.keys.sorted(), ["name", "uuid"], "selected attributes, and always uuid")
        let odd = try context.fetch(FetchRequest("Timer", where: "sortOrder == $o", parameters: ["o": .integer(1)], sort: "-name"))
        XCTAssertEqual(odd.map { $0["name"].stringValue! }, ["D", "A"])
        XCTAssertEqual(try context.count(FetchRequest("Timer", where: "name BEGINSWITH[c] 'd' OR name == 'e'")), 2)
        XCTAssertEqual(try context.fetch(FetchRequest("Timer", offset: 3)).count, 2)
    }

    func checkUpdatesReportOnlyChangedKeys() throws {
        let timer = try addTimer("Tea")
        let set = try XCTUnwrap(context.save(SaveRequest([.update(entity: "Timer", uuid: timer,
                                                                   values: ["name": .string("Green tea"), "icon": .string("clock")])])))
        XCTAssertEqual(set.changes.count, 1)
        XCTAssertEqual(set.changes[0].kind, .update)
        XCTAssertEqual(set.changes[0].changedKeys, ["name"], "icon was already 'clock'")
        XCTAssertEqual(set.changes[0].old?["name"], .string("Tea"))
        XCTAssertEqual(set.changes[0].new?["name"], .string("Green tea"))
        XCTAssertNil(try context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("Green tea")])])),
                     "a save that changes nothing commits nothing")
    }

    func checkSequenceNumbersIncreaseAcrossBothStoresAndTheRingAnswersSince() throws {
        let start = context.sequence
        let timer = try addTimer("A")
        try addSession(timer: timer)
        try addTimer("B")
        XCTAssertEqual(context.sequence, start + 3)
        let since = try XCTUnwrap(context.changes(since: start + 1))
        XCTAssertEqual(since.map(\.sequence), [start + 2, start + 3])
        XCTAssertEqual(since[0].changes[0].store, inMemory ? "Default" : "Local")
        XCTAssertEqual(since[1].changes[0].store, inMemory ? "Default" : "Cloud")
        XCTAssertEqual(context.changes(since: context.sequence), [])
        XCTAssertNil(context.changes(since: context.sequence + 1), "a sequence ahead of the stores")
    }

    func testTheRingSaysWhenItNoLongerReachesBack() {
        var ring = ChangeRing(capacity: 3)
        for s in 1...5 { ring.append(ChangeSet(sequence: Int64(s), author: "cli", time: 0, changes: [])) }
        XCTAssertEqual(ring.since(2)?.map(\.sequence), [3, 4, 5])
        XCTAssertNil(ring.since(1), "change set 2 is gone: the reader must fetch afresh")
        XCTAssertEqual(ring.since(5)?.count, 0)
        XCTAssertEqual(ring.oldest, 3)
    }

    /// Canonically equivalent text is still a change: the store keeps and sorts bytes.
    func checkAnUpdateToCanonicallyEquivalentTextIsSaved() throws {
        let timer = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "Timer", values: ["name": .string("caf\u{E9}")])])))
            .changes[0].uuid
        let set = try XCTUnwrap(context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("cafe\u{301}")])])),
                                "Swift's == calls these equal; the save must not")
        XCTAssertEqual(set.changes.first?.changedKeys, ["name"])
        XCTAssertEqual(Array(try XCTUnwrap(context.row("Timer", timer)?["name"].stringValue).utf8), Array("cafe\u{301}".utf8))
    }

    func testTheRingIsBoundedByRowsToo() {
        let change = RowChange(store: "Local", entity: "Session", uuid: "u", kind: .insert, changedKeys: [], old: nil, new: [:])
        var ring = ChangeRing(capacity: 1000, maxRows: 10)
        for s in 1...300 { ring.append(ChangeSet(sequence: Int64(s), author: "cli", time: 0, changes: Array(repeating: change, count: 4))) }
        XCTAssertEqual(ring.count, 2, "two sets of four rows fit in ten")
        XCTAssertEqual(ring.since(298)?.map(\.sequence), [299, 300])
        XCTAssertNil(ring.since(297))
        ring.append(ChangeSet(sequence: 301, author: "cli", time: 0, changes: Array(repeating: change, count: 50)))
        XCTAssertEqual(ring.since(300)?.map(\.sequence), [301], "one set larger than the bound is still held")
    }

    func checkDeletingATimerDeletesItsSessionAcrossTheSeam() throws {
        let timer = try addTimer("Tea")
        let session = try addSession(timer: timer)
        let flash = try addSession(timer: nil)
        let set = try XCTUnwrap(context.save(SaveRequest([.delete(entity: "Timer", uuid: timer)])))
        XCTAssertEqual(Set(set.changes.map { "\($0.entity) \($0.kind)" }), ["Timer delete", "Session delete"])
        XCTAssertEqual(set.changes.first { $0.entity == "Session" }?.old?["uuid"], .uuid(session))
        XCTAssertNil(try context.row("Session", session), "no ghost session")
        XCTAssertNotNil(try context.row("Session", flash), "orphans are valid and untouched")
    }

    func checkDeletingAGroupNullifiesItsTimers() throws {
        let group = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "UserGroup", values: ["name": .string("G")])])))
            .changes[0].uuid
        let a = try addTimer("A", group: group)
        let b = try addTimer("B", group: group)
        let set = try XCTUnwrap(context.save(SaveRequest([.delete(entity: "UserGroup", uuid: group)])))
        XCTAssertEqual(set.changes.filter { $0.kind == .update }.map(\.changedKeys), [["groupUUID"], ["groupUUID"]])
        XCTAssertEqual(try context.row("Timer", a)?["groupUUID"], .null)
        XCTAssertEqual(try context.row("Timer", b)?["groupUUID"], .null)
    }

    /// A sync delete reaching into another store keeps the linking rows: a cascade (or deny)
    /// clears their link instead, but a `none` rule leaves it as it is, dangling, as the rule
    /// says. (Every rule became a nullify.)
    func testASyncDeleteKeepsANoneLinkAsItIs() throws {
        var m = ModelDraft(model: "Links")
        try m.addConfiguration("Cloud")
        try m.addConfiguration("Local")
        try m.addEntity(Entity("Parent", attributes: [Attribute("uuid", .uuid)]), in: "Cloud")
        try m.addEntity(Entity("Kept", attributes: [Attribute("uuid", .uuid), Attribute("parentUUID", .uuid, optional: true)],
                               links: [Link("parentUUID", to: "Parent", onDelete: .none)]), in: "Local")
        try m.addEntity(Entity("Owned", attributes: [Attribute("uuid", .uuid), Attribute("parentUUID", .uuid, optional: true)],
                               links: [Link("parentUUID", to: "Parent", onDelete: .cascade)]), in: "Local")
        let schema = try Schema([try VersionedModel([m])])
        let links = try Context(directory: temp.file("links"), schema: schema)
        let parent = UUIDText.random(), kept = UUIDText.random(), owned = UUIDText.random()
        try links.save(SaveRequest([.insert(entity: "Parent", values: ["uuid": .uuid(parent)])]))
        try links.save(SaveRequest([.insert(entity: "Kept", values: ["uuid": .uuid(kept), "parentUUID": .uuid(parent)]),
                                    .insert(entity: "Owned", values: ["uuid": .uuid(owned), "parentUUID": .uuid(parent)])]))
        try links.save(SaveRequest([.delete(entity: "Parent", uuid: parent)]), author: "sync")
        XCTAssertEqual(try links.row("Kept", kept)?["parentUUID"], .uuid(parent), "none: left as it is")
        XCTAssertEqual(try links.row("Owned", owned)?["parentUUID"], .null, "cascade: kept, its link cleared")
    }

    /// The seed: a remote delete leaves the run alone. A sync-authored delete of a timer keeps its
    /// running session, as an orphan.
    func checkASyncDeleteLeavesTheRunningSessionAsAnOrphan() throws {
        let timer = try addTimer("Tea")
        let session = try addSession(timer: timer)
        let set = try XCTUnwrap(context.save(SaveRequest([.delete(entity: "Timer", uuid: timer)]), author: "sync"))
        XCTAssertEqual(set.author, "sync")
        let kept = try XCTUnwrap(context.row("Session", session))
        XCTAssertEqual(kept["timerUUID"], .null)
        XCTAssertEqual(kept["state"], .string("running"))
    }

    /// A sync-authored delete of a group changes no timer: the deleting machine's own
    /// nullifications arrive through sync, and a timer linked to it since keeps its link
    /// (dangling), as it is on the server.
    func checkASyncDeleteOfAGroupLeavesItsTimersAlone() throws {
        let group = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "UserGroup", values: ["name": .string("G")])])))
            .changes[0].uuid
        let a = try addTimer("A", group: group)
        let set = try XCTUnwrap(context.save(SaveRequest([.delete(entity: "UserGroup", uuid: group)]), author: "sync"))
        XCTAssertEqual(set.changes.map(\.entity), ["UserGroup"])
        XCTAssertEqual(try context.row("Timer", a)?["groupUUID"], .uuid(group))
    }

    func checkASecondSessionForOneTimerIsRefusedAndNothingChanges() throws {
        let timer = try addTimer("Tea")
        try addSession(timer: timer)
        let before = context.sequence
        expectError({
            try self.context.save(SaveRequest([
                .insert(entity: "Timer", values: ["name": .string("Other")]),
                .insert(entity: "Session", values: ["timerUUID": .uuid(timer), "startedAt": .date(1)]),
            ]))
        }) { if case .constraint("Session", let d) = $0 { return d.contains("Session.timerUUID") } else { return false } }
        XCTAssertEqual(context.sequence, before)
        XCTAssertEqual(try context.count(FetchRequest("Timer")), 1, "the timer of the failed save is not there either")
        XCTAssertEqual(try context.count(FetchRequest("Session")), 1)
    }

    /// A timer and its session deleted in one save: in either order. (Cascaded first, the
    /// session's own delete found it gone and refused the save.)
    func checkAParentAndItsChildDeleteInEitherOrder() throws {
        for sessionFirst in [false, true] {
            let timer = try addTimer("Tea \(sessionFirst)")
            let session = try addSession(timer: timer)
            let deletes: [SaveRequest.Operation] = [.delete(entity: "Timer", uuid: timer), .delete(entity: "Session", uuid: session)]
            let set = try XCTUnwrap(try context.save(SaveRequest(sessionFirst ? deletes.reversed() : deletes)))
            XCTAssertEqual(set.changes.filter { $0.kind == .delete }.count, 2, "session first: \(sessionFirst)")
            XCTAssertEqual(try context.count(FetchRequest("Session", where: "uuid == $u", parameters: ["u": .string(session)])), 0)
        }
    }

    /// An insert of a uuid the store holds, deleted in the same save, is the duplicate it is:
    /// the save is refused and the row stays. (It used to pass as a save that changed nothing.)
    func checkInsertingAnExistingRowAndDeletingItIsADuplicate() throws {
        let timer = try addTimer("Tea")
        let session = try addSession(timer: nil)
        expectError({ try self.context.save(SaveRequest([.insert(entity: "Session", values: ["uuid": .string(session), "name": .string("x"), "startedAt": .date(1)]),
                                                          .delete(entity: "Session", uuid: session)])) }) {
            if case .duplicate("Session", session) = $0 { return true } else { return false }
        }
        XCTAssertEqual(try context.count(FetchRequest("Session", where: "uuid == $u", parameters: ["u": .string(session)])), 1)
        _ = timer
    }

    /// A save may put a timer's new session in place of its old one, whatever the order of its
    /// operations: deletes run first (the unique timerUUID refused the insert before).
    func checkASaveReplacesATimersSessionInAnyOrder() throws {
        let timer = try addTimer("Tea")
        let old = try addSession(timer: timer)
        let replaced = try XCTUnwrap(try context.save(SaveRequest([
            .insert(entity: "Session", values: ["name": .string("Tea"), "timerUUID": .string(timer), "state": .string("running"), "startedAt": .date(1)]),
            .delete(entity: "Session", uuid: old),
        ])))
        XCTAssertEqual(replaced.changes.map(\.kind), [.insert, .delete], "the change set lists them as the request did")
        XCTAssertEqual(try context.count(FetchRequest("Session", where: "timerUUID == $t", parameters: ["t": .string(timer)])), 1)
    }

    /// Thousands of linked rows deleted in one save: every link rule applied (cascades here).
    /// Finding the staged rows that link to each deleted one took a pass over every row staged,
    /// quadratic: 10,000 such deletes held the broker 90 s (a reviewer's figure, debug build).
    func checkManyLinkedRowsDeleteInOneSave() throws {
        var timers: [String] = []
        var ops: [SaveRequest.Operation] = []
        for i in 0..<2000 {
            let uuid = UUIDText.random()
            timers.append(uuid)
            ops.append(.insert(entity: "Timer", values: ["uuid": .string(uuid), "name": .string("T\(i)")]))
        }
        try context.save(SaveRequest(ops))
        try context.save(SaveRequest(timers.map { .insert(entity: "Session", values: ["name": .string("s"), "timerUUID": .string($0),
                                                                                      "state": .string("running"), "startedAt": .date(1)]) }))
        let set = try XCTUnwrap(try context.save(SaveRequest(timers.map { .delete(entity: "Timer", uuid: $0) })))
        XCTAssertEqual(set.changes.count, 4000)
        XCTAssertEqual(try context.count(FetchRequest("Session")), 0)
    }

    /// A conditional save older than the history kept is refused: what changed after it is
    /// forgotten, so a change to its rows cannot be seen. (It passed, and overwrote that change.)
    func checkAConditionalSaveOlderThanTheHistoryKeptIsRefused() throws {
        let timer = try addTimer("Tea")
        let read = context.sequence
        try context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("Green tea")])]))
        let changed = context.sequence
        try context.purgeHistory(through: changed)  // what sync does once it has exported
        var stale = SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("Black tea")])])
        stale.unchangedSince = read
        expectError({ try self.context.save(stale) }) {
            if case .historyForgotten(read, changed) = $0 { return true } else { return false }
        }
        XCTAssertEqual(try context.fetch(FetchRequest("Timer", where: "uuid == $u", parameters: ["u": .string(timer)])).first?["name"],
                       .string("Green tea"))
        stale.unchangedSince = changed
        XCTAssertNotNil(try context.save(stale), "from where the history is kept, it holds")
    }

    func checkBadInputGetsTypedErrors() throws {
        let timer = try addTimer("Tea")
        expectError({ try self.context.save(SaveRequest([.insert(entity: "Alarm", values: [:])])) }) {
            if case .unknownEntity("Alarm") = $0 { return true } else { return false }
        }
        expectError({ try self.context.save(SaveRequest([.insert(entity: "Timer", values: ["name": .string("x"), "colur": .string("red")])])) }) {
            if case .unknownAttribute("Timer", "colur") = $0 { return true } else { return false }
        }
        expectError({ try self.context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["repeatCount": .string("two")])])) }) {
            if case .wrongType("Timer", "repeatCount", .integer, "string") = $0 { return true } else { return false }
        }
        expectError({ try self.context.save(SaveRequest([.insert(entity: "Timer", values: [:])])) }) {
            if case .missingValue("Timer", "name") = $0 { return true } else { return false }
        }
        expectError({ try self.context.save(SaveRequest([.insert(entity: "Timer", values: ["name": .string(String(repeating: "x", count: 2 << 20))])])) }) {
            if case .valueTooLarge("Timer", "name", _, _) = $0 { return true } else { return false }
        }
        expectError({ try self.context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("Te\u{0}a")])])) }) {
            if case .invalidValue("Timer", "name", let reason) = $0 { return reason.contains("U+0000") } else { return false }
        }
        expectError({ try self.context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["steps": .json(#"[{"label":"a\u0000","seconds":1}]"#)])])) }) {
            if case .invalidValue("Timer", "steps", let reason) = $0 { return reason.contains("U+0000") } else { return false }
        }
        // A date no RFC 3339 timestamp can write (a service's arithmetic on a hostile row).
        for date in [253_402_400_000.0, -62_135_596_801.0] {
            expectError({ try self.context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["createdAt": .date(date)])])) }) {
                if case .invalidValue("Timer", "createdAt", let reason) = $0 { return reason.contains("9999-12-31") } else { return false }
            }
        }
        // An escaped backslash before `u0000` is no NUL.
        XCTAssertNoThrow(try context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["steps": .json(#"[{"label":"a\\u0000","seconds":1}]"#)])])))
        expectError({ try self.context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["steps": .json("[1,")])])) }) {
            if case .invalidValue("Timer", "steps", _) = $0 { return true } else { return false }
        }
        expectError({ try self.context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["steps": .json(" null ")])])) }) {
            if case .missingValue("Timer", "steps") = $0 { return true } else { return false }  // JSON null is no value
        }
        expectError({ try self.context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["groupUUID": .string("NOT-A-UUID")])])) }) {
            if case .invalidValue("Timer", "groupUUID", _) = $0 { return true } else { return false }
        }
        let missing = UUIDText.random()
        expectError({ try self.context.save(SaveRequest([.update(entity: "Timer", uuid: missing, values: ["name": .string("x")])])) }) {
            if case .notFound("Timer", missing) = $0 { return true } else { return false }
        }
        expectError({ try self.context.save(SaveRequest([.delete(entity: "Session", uuid: missing)])) }) {
            if case .notFound("Session", missing) = $0 { return true } else { return false }
        }
        expectError({ try self.context.save(SaveRequest([.insert(entity: "Timer", values: ["uuid": .uuid(timer), "name": .string("x")])])) }) {
            if case .duplicate("Timer", timer) = $0 { return true } else { return false }
        }
        // The row that collided is named, not the first insert of its entity.
        expectError({ try self.context.save(SaveRequest([.insert(entity: "Timer", values: ["name": .string("new")]),
                                                         .insert(entity: "Timer", values: ["uuid": .uuid(timer), "name": .string("x")])])) }) {
            if case .duplicate("Timer", timer) = $0 { return true } else { return false }
        }
        expectError({ _ = try self.context.fetch(FetchRequest("Timer", where: "name ==")) }) {
            if case .query = $0 { return true } else { return false }
        }
        XCTAssertEqual(try context.count(FetchRequest("Timer")), 1)
        XCTAssertEqual(try context.row("Timer", timer)?["name"], .string("Tea"), "no failed save changed anything")
    }

    func checkDanglingLinksAreReported() throws {
        let timer = try addTimer("Tea")
        let session = try addSession(timer: timer)
        XCTAssertEqual(try context.danglingLinks(), [])
        // What sync can deliver: the timer gone, the session still pointing at it.
        let db = try XCTUnwrap(context.database(try context.store(of: "Timer")))
        try db.run("DELETE FROM Timer WHERE uuid = ?", [.string(timer)])
        XCTAssertEqual(try context.danglingLinks().map(\.uuid), [session])
        XCTAssertNil(try context.row("Timer", timer), "a lookup across the link handles not-found")
    }

    func checkHistoryKeepsCloudChangesAndCanBePurged() throws {
        let timer = try addTimer("Tea")
        try addSession(timer: timer)
        try context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("Mint")])]), author: "sync")
        let history = try context.history(since: 0)
        XCTAssertEqual(history.map(\.author), ["cli", "sync"], "the session (Local) is not history")
        XCTAssertEqual(history[1].changes[0].new?["name"], .string("Mint"))
        XCTAssertEqual(history[1].changes[0].old?["name"], .string("Tea"))
        try context.purgeHistory(through: history[0].sequence)
        XCTAssertEqual(try context.history(since: 0).map(\.sequence), [history[1].sequence])
        try context.purgeHistory(olderThan: Context.now() + 1)
        XCTAssertEqual(try context.history(since: 0), [])
        // By age: the entries recorded before the time go, the rest stay (the walk stops at the
        // first entry recorded at the time or later).
        for (i, time) in [100.0, 200, 300, 400].enumerated() {
            try context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("v\(i)")])]), time: time)
        }
        let dated = try context.history(since: 0)
        XCTAssertEqual(dated.map(\.time), [100, 200, 300, 400])
        try context.purgeHistory(olderThan: 50)
        XCTAssertEqual(try context.history(since: 0).count, 4, "nothing is that old")
        try context.purgeHistory(olderThan: 250)
        XCTAssertEqual(try context.history(since: 0).map(\.time), [300, 400])
        try context.purgeHistory(olderThan: 300)
        XCTAssertEqual(try context.history(since: 0).map(\.time), [300, 400], "an entry of exactly that time stays")
        try context.purgeHistory(olderThan: 1_000)
        XCTAssertEqual(try context.history(since: 0), [])
        try context.purgeHistory(olderThan: 1_000)
        // One save while the clock ran a year ahead does not keep the entries after it.
        let now = Context.now()
        for (i, time) in [now - 9_000, now + 365 * 86_400, now - 8_000, now - 10].enumerated() {
            try context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("w\(i)")])]), time: time)
        }
        try context.purgeHistory(olderThan: now - 1_000)
        XCTAssertEqual(try context.history(since: 0).map(\.time), [now - 10])
        // Every 64th save forgets what is older than the retention on its own, unless sync is
        // set up (the owner says so as it comes and goes): then only what it exported goes.
        try context.purgeHistory(olderThan: now + 1)
        let monthAgo = now - 30 * 86_400
        context.syncConfigured = true
        for i in 0..<64 {
            try context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("x\(i)")])]), time: monthAgo + Double(i))
        }
        XCTAssertEqual(try context.history(since: 0).count, 64, "kept for sync to export, however old")
        context.syncConfigured = false
        for i in 0..<64 { try context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("y\(i)")])])) }
        let kept = try context.history(since: 0)
        XCTAssertFalse(kept.contains { $0.time < now - 86_400 }, "sync gone: forgotten by age again")
        XCTAssertFalse(kept.isEmpty)
    }

    func checkSnapshotsPinReads() throws {
        let timer = try addTimer("Tea")
        if inMemory {
            expectError({ _ = try self.context.withSnapshot { _ in 0 } }) {
                if case .snapshotUnsupported = $0 { return true } else { return false }
            }
            return
        }
        try context.withSnapshot { snapshot in
            try self.context.save(SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("Mint")])]))
            try self.addTimer("Later")
            XCTAssertEqual(try snapshot.row("Timer", timer)?["name"], .string("Tea"))
            XCTAssertEqual(try snapshot.count(FetchRequest("Timer")), 1)
        }
        XCTAssertEqual(try context.row("Timer", timer)?["name"], .string("Mint"))
    }

    func checkTheSequenceSurvivesReopening() throws {
        if inMemory { return }
        try addTimer("A")
        try addSession(timer: nil)
        let seq = context.sequence
        context = nil
        context = try Context(directory: temp.path, schema: TimerApp.schema)
        XCTAssertEqual(context.sequence, seq)
        try addTimer("B")
        XCTAssertEqual(context.sequence, seq + 1)
    }

    /// Cloud's last saves came after Local's; when Cloud is refused at the next open (here: it
    /// says it holds another configuration, then: it is of another layout format), a save to
    /// Local still gets a number above them all, never one Cloud has used.
    func checkAStoreRefusedAtOpenStillHoldsItsSequenceNumbers() throws {
        if inMemory { return }
        for (key, value, reason) in [("configuration", "Elsewhere", "it says it holds configuration 'Elsewhere'"),
                                     ("format", "2", "its layout is format 2")] {
            try addSession(timer: nil)
            for name in ["A", "B", "C"] { try addTimer(name) }
            let used = context.sequence
            let original = try XCTUnwrap(context.database("Cloud")).scalar("SELECT value FROM seam_store WHERE key = ?", [.string(key)])
            context = nil
            try setStoreKey(key, .string(value))
            var options = Context.Options()
            options.servesOutdated = true  // the broker's: the stores that can serve do
            context = try Context(directory: temp.path, schema: TimerApp.schema, options: options)
            XCTAssertTrue(context.closedStores["Cloud"]?.contains(reason) == true, "\(context.closedStores)")
            XCTAssertEqual(context.sequence, used, "the numbers Cloud used")
            try addSession(timer: nil)
            XCTAssertEqual(context.sequence, used + 1)
            context = nil
            try setStoreKey(key, original)
            context = try Context(directory: temp.path, schema: TimerApp.schema)
            XCTAssertNil(context.closedStores["Cloud"])
            XCTAssertEqual(context.sequence, used + 1)
        }
    }

    private func setStoreKey(_ key: String, _ value: AttributeValue) throws {
        let cloud = try Database(path: temp.path + "/Cloud.sqlite")
        try cloud.run("UPDATE seam_store SET value = ? WHERE key = ?", [value, .string(key)])
        cloud.close()
    }
}
