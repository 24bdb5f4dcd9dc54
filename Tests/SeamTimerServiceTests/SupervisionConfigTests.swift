import SeamBroker
import SeamJSON
import SeamProtocol
import SeamWatch
import XCTest

/// The pure parts of supervision and of `seam watch`: what a configuration file asks for, the
/// restart policy, and what the board shows.
final class SupervisionConfigTests: XCTestCase {
    func parse(_ text: String) -> SupervisorConfiguration { SupervisorConfiguration.parse(Array(text.utf8), path: "seamd.json") }

    func testAMissingOrEmptyFileMeansTheTickerAlone() {
        XCTAssertEqual(SupervisorConfiguration.defaults.roles.map(\.name), ["ticker"])
        XCTAssertEqual(parse("{}"), SupervisorConfiguration.defaults)
    }

    func testRolesAndPlugins() {
        let c = parse(#"""
            {"roles": {"ticker": {"command": ["/opt/seam/seam-ticker", "--socket", "x"]}},
             "plugins": [{"name": "logger", "command": ["python3", "log.py"], "environment": {"LEVEL": "debug"}},
                         {"name": "off", "command": ["true"], "enabled": false}]}
            """#)
        XCTAssertEqual(c.problems, [])
        XCTAssertEqual(c.roles.map(\.name), ["ticker", "plugin:logger"])
        XCTAssertEqual(c.roles[0].command, ["/opt/seam/seam-ticker", "--socket", "x"])
        XCTAssertEqual(c.roles[1].role, "plugin")
        XCTAssertEqual(c.roles[1].author, "plugin:logger")
        XCTAssertEqual(c.roles[1].environment, ["LEVEL": "debug"])
        XCTAssertEqual(parse(#"{"roles": {"ticker": {"enabled": false}}}"#).roles, [])
    }

    /// The migration worker is never among the roles started at once: it runs per migration.
    /// `enabled: false` only stops seamd migrating at start; its command and environment can
    /// be set; bad values are reported and the defaults kept.
    func testTheMigrateRole() {
        let defaults = parse("{}")
        XCTAssertEqual(defaults.migrator, SupervisorConfiguration.defaultMigrator)
        XCTAssertTrue(defaults.migrator.oneShot)
        XCTAssertTrue(defaults.migratesAtStart)
        let c = parse(#"{"roles": {"migrate": {"enabled": false, "command": ["/opt/m", "-v"], "environment": {"A": "b"}}}}"#)
        XCTAssertEqual(c.roles.map(\.name), ["ticker"])
        XCTAssertFalse(c.migratesAtStart)
        XCTAssertEqual(c.migrator.command, ["/opt/m", "-v"])
        XCTAssertEqual(c.migrator.environment, ["A": "b"])
        XCTAssertEqual(c.problems, [])
        let bad = parse(#"{"roles": {"migrate": {"enabled": "no", "command": [], "environment": []}}}"#)
        XCTAssertEqual(bad.migrator, SupervisorConfiguration.defaultMigrator)
        XCTAssertTrue(bad.migratesAtStart)
        XCTAssertEqual(bad.problems.count, 3, bad.problems.joined(separator: "\n"))
        XCTAssertEqual(parse(#"{"roles": {"migrate": 7}}"#).problems, ["seamd.json: roles.migrate is not an object; using the default"])
    }

    /// A broken file is reported and the defaults run; a broken entry is reported and the rest run.
    func testBadInputIsReportedEntryByEntry() {
        for text in ["", "{", "not json", "[1, 2]", "\"ticker\"", String(repeating: "[", count: 100)] {
            let c = parse(text)
            XCTAssertEqual(c.roles, SupervisorConfiguration.builtIn, text)
            XCTAssertEqual(c.problems.count, 1, text)
            XCTAssertTrue(c.problems[0].hasPrefix("seamd.json is not"), c.problems[0])
        }
        let c = parse(#"""
            {"colour": "blue", "roles": {"ticker": {"command": []}, "janitor": {}},
             "plugins": [3, {"command": ["x"]}, {"name": "bad name!", "command": ["x"]}, {"name": "a", "command": "x"},
                         {"name": "b", "command": ["b"], "environment": {"K": 1}}, {"name": "c", "command": ["c"]},
                         {"name": "c", "command": ["c2"]}]}
            """#)
        XCTAssertEqual(c.roles.map(\.name), ["ticker", "plugin:c"])
        XCTAssertEqual(c.roles[0].command, ["seam-ticker"], "a bad command falls back to the default")
        XCTAssertEqual(c.problems.count, 9, c.problems.joined(separator: "\n"))
        XCTAssertTrue(c.problems.contains { $0.contains("unknown key 'colour'") })
        XCTAssertTrue(c.problems.contains { $0.contains("unknown role 'janitor'") })
        XCTAssertTrue(c.problems.contains { $0.contains("a second plugin named 'c'") })
    }

    func testBackoffDoublesToAMinuteAndResetsAfterAMinuteOfHealth() {
        var b = Backoff()
        let quick = (0..<9).map { _ in b.delay(afterRunning: 0.1) }
        XCTAssertEqual(quick, [1, 2, 4, 8, 16, 32, 60, 60, 60])
        XCTAssertEqual(b.delay(afterRunning: 59), 60, "not yet a minute of health")
        XCTAssertEqual(b.delay(afterRunning: 60), 1, "a minute of health starts over")
        XCTAssertEqual(b.delay(afterRunning: 5), 2)
    }

    // MARK: - The watch board

    func session(_ uuid: String, name: String, state: String, stepIndex: Int = 0, round: Int = 0, repeatCount: Int = 1,
                 endsAt: String? = "2026-12-01T10:05:00.000Z") -> JSONObject {
        var row: JSONObject = ["uuid": .string(uuid), "name": .string(name), "state": .string(state), "stepIndex": .integer(Int64(stepIndex)),
                               "round": .integer(Int64(round)), "repeatCount": .integer(Int64(repeatCount)),
                               "steps": [["label": "Work", "seconds": 1500], ["label": "Rest", "seconds": 300]],
                               "startedAt": "2026-12-01T09:40:00.000Z"]
        row["stepEndsAt"] = endsAt.map(JSON.string) ?? .null
        if state == "paused" { row["pausedAt"] = "2026-12-01T10:00:00.000Z" }
        if state == "finished" { row["finishedAt"] = "2026-12-01T10:05:00.000Z" }
        return row
    }

    func update(_ p: JSONObject) throws -> SubscriptionUpdate { try SubscriptionUpdate(p) }

    func testTheBoardFollowsTheChannelAndMarksFinishes() throws {
        let tenOClock = 1_796_119_200.0  // 2026-12-01T10:00:00Z
        var board = WatchBoard()
        var events = try board.apply(update(["subscription": 1, "kind": "result", "sequence": 5,
                                             "rows": [.object(session("a", name: "Pomodoro", state: "running", repeatCount: 2)),
                                                      .object(session("b", name: "Tea", state: "paused"))]]), now: tenOClock)
        XCTAssertEqual(events.map(\.kind), [.now, .now])
        var lines = board.lines(now: tenOClock, width: 80, height: 10).map(\.text)
        XCTAssertEqual(lines.count, 4)
        XCTAssertEqual(lines[0], "seam watch · 10:00:00 · 1 running, 1 paused")
        XCTAssertEqual(lines[1], "Pomodoro  ▶ running   Work 1/2 · round 1/2  5:00 left")
        XCTAssertEqual(lines[2], "Tea       ‖ paused    Work 1/2  5:00 left, paused")

        events = try board.apply(update(["subscription": 1, "kind": "diff", "sequence": 6, "updated": [[
            "uuid": "a", "index": 0, "changedKeys": ["state", "stepEndsAt", "finishedAt"],
            "row": .object(session("a", name: "Pomodoro", state: "finished", endsAt: nil)),
        ]]]), now: tenOClock + 300)
        XCTAssertEqual(events.map(\.kind), [.finished])
        let drawn = board.lines(now: tenOClock + 301, width: 80, height: 10)
        XCTAssertTrue(drawn[1].highlighted)
        XCTAssertEqual(drawn[1].text, "Pomodoro  ✓ finished  at 10:05:00")
        XCTAssertFalse(board.lines(now: tenOClock + 300 + WatchBoard.highlightSeconds + 1, width: 80, height: 10)[1].highlighted)

        // Narrow and short terminals: every line fits, and what does not fit is counted.
        lines = board.lines(now: tenOClock, width: 20, height: 3).map(\.text)
        XCTAssertEqual(lines.count, 3)
        XCTAssertTrue(lines.allSatisfy { $0.count <= 20 }, "\(lines)")
        XCTAssertTrue(lines[1].hasPrefix("… and 2 more"))

        events = try board.apply(update(["subscription": 1, "kind": "diff", "sequence": 7, "deleted": [["uuid": "b", "index": 1]]]),
                                 now: tenOClock)
        XCTAssertEqual(events, [WatchBoard.Event(kind: .removed, uuid: "b", text: "Tea: removed")])
        XCTAssertEqual(WatchBoard(utcOffset: 3600).timeOfDay(tenOClock), "11:00:00")
    }

    /// Names, step labels and notes come from the store, which any plugin may have written: an
    /// escape sequence or a newline in one is shown, not obeyed.
    func testTheBoardShowsControlCharactersAndDoesNotObeyThem() throws {
        let tenOClock = 1_796_119_200.0  // 2026-12-01T10:00:00Z
        var forged = session("a", name: "\u{1B}]0;owned\u{07}\u{1B}[2J", state: "running")
        forged["note"] = "ok\n01:00:00 finished: fake\u{9B}"
        forged["steps"] = [["label": "W\rork", "seconds": 300]]
        var board = WatchBoard()
        let events = try board.apply(update(["subscription": 1, "kind": "result", "sequence": 1, "rows": [.object(forged)]]),
                                     now: tenOClock)
        let line = board.lines(now: tenOClock, width: 200, height: 10)[1].text
        for text in [line, events.first?.text ?? ""] {
            XCTAssertFalse(text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, text)
        }
        XCTAssertEqual(events.first?.text,
                       #"\u{1B}]0;owned\u{7}\u{1B}[2J  ▶ running   W\u{D}ork 1/1  5:00 left  “ok\u{A}01:00:00 finished: fake\u{9B}”"#)
    }

    /// A session's note ends its line; a session without one shows nothing for it.
    func testTheBoardShowsANote() throws {
        let tenOClock = 1_796_119_200.0  // 2026-12-01T10:00:00Z
        var tea = session("a", name: "Tea", state: "running")
        tea["note"] = "for the guests"
        var bread = session("b", name: "Bread", state: "running")
        bread["note"] = ""
        var board = WatchBoard()
        let events = try board.apply(update(["subscription": 1, "kind": "result", "sequence": 1, "rows": [.object(tea), .object(bread)]]),
                                     now: tenOClock)
        XCTAssertEqual(events.first?.text, "Tea  ▶ running   Work 1/2  5:00 left  “for the guests”")
        let lines = board.lines(now: tenOClock, width: 80, height: 10).map(\.text)
        XCTAssertEqual(lines[1], "Tea    ▶ running   Work 1/2  5:00 left  “for the guests”")
        XCTAssertEqual(lines[2], "Bread  ▶ running   Work 1/2  5:00 left")
    }
}
