import SeamCommandLine
import SeamJSON
import SeamProtocol
import SeamWatch
import XCTest

/// `WatchBoard` as a pure function of updates and time: no broker, no terminal.
final class WatchBoardTests: XCTestCase {
    var sequence: Int64 = 0

    func session(_ uuid: String, _ name: String, state: String = "running", at t: Double = 1_000) -> JSONObject {
        var row: JSONObject = ["uuid": .string(uuid), "name": .string(name), "state": .string(state), "startedAt": .double(t),
                               "steps": [["label": "Boil", "seconds": 600]], "stepIndex": 0, "round": 0, "repeatCount": 1,
                               "stepEndsAt": .double(t + 600)]
        if state == "finished" { row["finishedAt"] = .double(t + 1) }
        return row
    }

    func update(_ kind: String, _ members: JSONObject) throws -> SubscriptionUpdate {
        sequence += 1
        var p: JSONObject = ["subscription": 1, "kind": .string(kind), "sequence": .integer(sequence)]
        for (k, v) in members { p[k] = v }
        return try SubscriptionUpdate(p)
    }

    func changed(_ row: JSONObject, index: Int = 0, keys: [String]) throws -> SubscriptionUpdate {
        try update("diff", ["updated": [["uuid": row["uuid"]!, "index": .integer(Int64(index)), "row": .object(row),
                                         "changedKeys": .array(keys.map(JSON.string))]]])
    }

    /// The bell: by default at each step a session moves to (a Pomodoro's Work ending) and at its
    /// end; `end` only at the end; `off` never.
    func testTheBellRingsAtEachStepByDefault() throws {
        var board = WatchBoard(utcOffset: 0)
        let s = session("s", "Pomodoro")
        _ = try board.apply(try update("result", ["rows": [.object(s)]]), now: 1_000)
        var moved = s
        moved["stepIndex"] = 1
        let step = try board.apply(try changed(moved, keys: ["stepIndex", "stepEndsAt"]), now: 1_600)
        XCTAssertEqual(step.map(\.kind), [.step])
        XCTAssertTrue(WatchBoard.Bell.steps.rings(for: step))
        XCTAssertFalse(WatchBoard.Bell.end.rings(for: step))
        var done = moved
        done["state"] = "finished"
        done["finishedAt"] = 1_900
        let end = try board.apply(try changed(done, keys: ["state", "finishedAt"]), now: 1_900)
        XCTAssertEqual(end.map(\.kind), [.finished])
        for bell in [WatchBoard.Bell.steps, .end] { XCTAssertTrue(bell.rings(for: end), "\(bell)") }
        for events in [step, end, []] { XCTAssertFalse(WatchBoard.Bell.off.rings(for: events)) }
        XCTAssertFalse(WatchBoard.Bell.steps.rings(for: []))
    }

    /// A session that finishes is highlighted; reset and running again, it is not (it was, for
    /// the rest of the 30 seconds, though nothing about it had finished).
    func testAHighlightEndsWhenTheSessionRunsAgain() throws {
        var board = WatchBoard()
        _ = try board.apply(try update("result", ["rows": [.object(session("s1", "Tea"))]]), now: 1_000)
        let finished = try board.apply(try changed(session("s1", "Tea", state: "finished"), keys: ["state", "finishedAt"]), now: 1_001)
        XCTAssertEqual(finished.map(\.kind), [.finished])
        XCTAssertEqual(board.lines(now: 1_002, width: 80, height: 10).filter(\.highlighted).count, 1)

        let again = try board.apply(try changed(session("s1", "Tea", at: 1_003), keys: ["state", "finishedAt", "stepEndsAt"]), now: 1_003)
        XCTAssertEqual(again.map(\.kind), [.started])
        XCTAssertEqual(board.lines(now: 1_004, width: 80, height: 10).filter(\.highlighted), [], "running again: not highlighted")
        XCTAssertTrue(board.highlightedUntil.isEmpty)
    }

    /// A resync that finds a highlighted session no longer finished drops its highlight too.
    func testAResyncDropsHighlightsOfSessionsNoLongerFinished() throws {
        var board = WatchBoard()
        _ = try board.apply(try update("result", ["rows": [.object(session("s1", "Tea"))]]), now: 1_000)
        _ = try board.apply(try changed(session("s1", "Tea", state: "finished"), keys: ["state"]), now: 1_001)
        _ = try board.apply(try update("resync", ["rows": [.object(session("s1", "Tea", at: 1_002))], "from": 1]), now: 1_002)
        XCTAssertEqual(board.lines(now: 1_003, width: 80, height: 10).filter(\.highlighted), [])
    }

    /// Wide names (CJK, emoji) take two columns each: lines fit the width in columns, and the
    /// state column lines up under names of any script.
    func testWideNamesAreMeasuredInColumns() throws {
        var board = WatchBoard()
        let rows = [session("s1", "お茶"), session("s2", "Tea", at: 1_001), session("s3", "🍝 pasta", at: 1_002)]
        _ = try board.apply(try update("result", ["rows": .array(rows.map(JSON.object))]), now: 1_010)
        let lines = board.lines(now: 1_010, width: 80, height: 10).map(\.text)
        let sessionLines = lines.filter { $0.contains("▶") }
        XCTAssertEqual(sessionLines.count, 3, "\(lines)")
        let stateColumns = sessionLines.map { line in DisplayWidth.columns(String(line[..<line.firstIndex(of: "▶")!])) }
        XCTAssertEqual(Set(stateColumns), [10], "\(sessionLines)")

        let long = session("s4", String(repeating: "長い名前", count: 10), at: 1_003)
        _ = try board.apply(try update("diff", ["inserted": [["uuid": "s4", "index": 3, "row": .object(long)]]]), now: 1_010)
        for width in [20, 30, 41] {
            for line in board.lines(now: 1_010, width: width, height: 10) {
                XCTAssertLessThanOrEqual(DisplayWidth.columns(line.text), width, line.text)
            }
        }
    }
}
