import SeamSchema
import SeamTimers
import XCTest

/// The unified list: timers with their sessions, sessions without timers, in a person's order.
final class TimerListTests: XCTestCase {
    func row(_ values: [String: AttributeValue]) -> [String: AttributeValue] { values }

    func testTimersAndSessionsMergeByUUID() {
        let g1 = row(["uuid": .uuid("00000000-0000-4000-8000-00000000000a"), "name": .string("Kitchen"), "sortOrder": .integer(1)])
        let g0 = row(["uuid": .uuid("00000000-0000-4000-8000-00000000000b"), "name": .string("gym"), "sortOrder": .integer(0)])
        let tea = row(["uuid": .uuid("00000000-0000-4000-8000-000000000001"), "name": .string("tea"), "groupUUID": g1["uuid"]!,
                       "sortOrder": .integer(0)])
        let bread = row(["uuid": .uuid("00000000-0000-4000-8000-000000000002"), "name": .string("Bread"), "groupUUID": g1["uuid"]!,
                         "sortOrder": .integer(0)])
        let plank = row(["uuid": .uuid("00000000-0000-4000-8000-000000000003"), "name": .string("Plank"), "groupUUID": g0["uuid"]!])
        let loose = row(["uuid": .uuid("00000000-0000-4000-8000-000000000004"), "name": .string("Nap")])
        let lost = row(["uuid": .uuid("00000000-0000-4000-8000-000000000005"), "name": .string("Lost"),
                        "groupUUID": .uuid("00000000-0000-4000-8000-0000000000ff")])
        let teaRun = row(["uuid": .uuid("00000000-0000-4000-8000-000000000101"), "timerUUID": tea["uuid"]!, "name": .string("tea (old name)"),
                          "startedAt": .date(10)])
        let flashOld = row(["uuid": .uuid("00000000-0000-4000-8000-000000000102"), "timerUUID": .null, "startedAt": .date(5)])
        let flashNew = row(["uuid": .uuid("00000000-0000-4000-8000-000000000103"), "timerUUID": .null, "startedAt": .date(50)])
        let ghost = row(["uuid": .uuid("00000000-0000-4000-8000-000000000104"), "timerUUID": .uuid("00000000-0000-4000-8000-0000000000ee"),
                         "startedAt": .date(20)])
        let list = TimerList.build(timers: [tea, loose, plank, bread, lost], sessions: [flashOld, teaRun, ghost, flashNew],
                                   groups: [g1, g0])
        XCTAssertEqual(list.map(\.name), ["Plank", "Bread", "tea (old name)", "Lost", "Nap", "", "", ""])
        XCTAssertEqual(list.map(\.id).suffix(3), [flashNew["uuid"]!.stringValue!, ghost["uuid"]!.stringValue!,
                                                  flashOld["uuid"]!.stringValue!], "orphans, newest first")
        XCTAssertEqual(list[2].session?["uuid"], teaRun["uuid"], "the running copy's name is shown while it runs")
        XCTAssertEqual(list[2].timer?["name"], .string("tea"))
        XCTAssertTrue(list[3].groupMissing, "a group that never arrived is said, not hidden")
        XCTAssertTrue(list[6].timerMissing, "a session whose timer is gone is an orphan, marked")
        XCTAssertFalse(list[5].timerMissing, "a flash session is an ordinary orphan")
    }

    /// What sync can deliver, shown honestly: a group that never arrived, and two groups of one
    /// name made offline on two machines, each told apart by its short id (the end of its uuid).
    func testGroupLabelsSayWhatIsMissingAndTellTwinsApart() {
        let a = row(["uuid": .uuid("aaaaaaaa-0000-4000-8000-0000aaaaaaaa"), "name": .string("Kitchen")])
        let b = row(["uuid": .uuid("bbbbbbbb-0000-4000-8000-0000bbbbbbbb"), "name": .string("Kitchen")])
        let c = row(["uuid": .uuid("cccccccc-0000-4000-8000-0000cccccccc"), "name": .string("Gym")])
        let timers = [row(["uuid": .uuid("00000000-0000-4000-8000-000000000001"), "name": .string("one"), "groupUUID": a["uuid"]!]),
                      row(["uuid": .uuid("00000000-0000-4000-8000-000000000002"), "name": .string("two"), "groupUUID": b["uuid"]!]),
                      row(["uuid": .uuid("00000000-0000-4000-8000-000000000003"), "name": .string("three"), "groupUUID": c["uuid"]!]),
                      row(["uuid": .uuid("00000000-0000-4000-8000-000000000004"), "name": .string("four"),
                           "groupUUID": .uuid("dddddddd-0000-4000-8000-0000dddddddd")]),
                      row(["uuid": .uuid("00000000-0000-4000-8000-000000000005"), "name": .string("five")])]
        let groups = [a, b, c]
        let twins = TimerList.duplicateNames(groups)
        XCTAssertEqual(twins, ["Kitchen"])
        let labels = Dictionary(uniqueKeysWithValues: TimerList.build(timers: timers, sessions: [], groups: groups)
            .map { ($0.name, $0.groupLabel(duplicateNames: twins)) })
        XCTAssertEqual(labels, ["one": "Kitchen (aaaaaaaa)", "two": "Kitchen (bbbbbbbb)", "three": "Gym", "four": "(missing dddddddd)",
                                "five": ""])
    }
}
