import SeamSchema
import SeamTimers
import XCTest

final class DurationAndStepTests: XCTestCase {
    func testDurationsAsPeopleTypeThem() throws {
        let cases: [(String, Int)] = [("90s", 90), ("5m", 300), ("1h30m", 5400), ("2h", 7200), ("1h0m5s", 3605), ("1:30", 90),
                                      ("1:02:03", 3723), ("45", 45), (" 3m ", 180), ("0:01", 1)]
        for (text, seconds) in cases { XCTAssertEqual(try DurationText.parse(text), seconds, text) }
        for bad in ["", "m", "5x", "1m1h", "5m5m", "1:", ":30", "1:60", "1:2:3:4", "-5s", "1.5m", "5 m", "0s", "0:00", "8d", "999999h"] {
            XCTAssertThrowsError(try DurationText.parse(bad), bad)
        }
        XCTAssertEqual(DurationText.format(5400), "1h30m")
        XCTAssertEqual(DurationText.format(3605), "1h0m5s")
        XCTAssertEqual(DurationText.format(45), "45s")
        XCTAssertEqual(DurationText.format(0), "0s")
        XCTAssertEqual(DurationText.clock(245), "4:05")
        XCTAssertEqual(DurationText.clock(3723), "1:02:03")
        XCTAssertEqual(DurationText.clock(0.2), "0:01", "a started second shows")
        for s in [1, 59, 60, 61, 3599, 3600, 3601, 86_399, 604_800] { XCTAssertEqual(try DurationText.parse(DurationText.format(s)), s) }
    }

    /// Every value past a week in a form that is a duration gets the one message that says so,
    /// however many digits it has; a form that is not a duration gets the other.
    func testEveryDurationPastAWeekIsSaidToBeSo() {
        func message(_ text: String) -> String {
            do { _ = try DurationText.parse(text); return "accepted" } catch { return error.description }
        }
        for long in ["169h", "99999999h", "999999999999999999999h", "604801", "99999999", "9999999:00", "10081m", "168h0m1s", "7000:00:00"] {
            XCTAssertEqual(message(long), "'\(long)' is longer than a week: a step lasts at most 168h (7 days)", long)
        }
        XCTAssertEqual(try DurationText.parse("168h"), 604_800)
        XCTAssertEqual(try DurationText.parse("000000000090"), 90, "leading zeros are no magnitude")
        for bad in ["soon", "5 minutes", "1:60", "-5m", "1h1h"] { XCTAssertTrue(message(bad).contains("is not a duration"), bad) }
    }

    func testStepsParseAndKeepUnknownKeys() throws {
        XCTAssertEqual(try Step.parse("Steep=3m"), Step(label: "Steep", seconds: 180))
        XCTAssertEqual(try Step.parse("a=b=1:00"), Step(label: "a=b", seconds: 60), "the last = splits")
        for bad in ["Steep", "=3m", "Steep=", "Steep=0s", "Steep=soon"] { XCTAssertThrowsError(try Step.parse(bad), bad) }
        let text = #"[{"label":"Steep","seconds":180,"sound":"bell"},{"label":"Rest","seconds":60}]"#
        let steps = try Steps.decode(text)
        XCTAssertEqual(steps.map(\.seconds), [180, 60])
        XCTAssertEqual(Steps.encode(steps), text, "a key from a later version survives")
        for bad in ["{}", "[1]", #"[{"label":"x"}]"#, #"[{"label":"x","seconds":0}]"#, "not json", #"[{"seconds":5}]"#] {
            XCTAssertThrowsError(try Steps.decode(bad), bad)
        }
    }
}

final class SessionClockTests: XCTestCase {
    func testRunsThroughStepsAndRoundsOnTheWallClock() throws {
        var c = try SessionClock.start(steps: [60, 30], repeatCount: 2, at: 1000)
        XCTAssertEqual(c.nextDue, 1060)
        XCTAssertEqual(c.advance(to: 1059.9), [])
        let t = c.advance(to: 1061)
        XCTAssertEqual(t, [SessionClock.Transition(stepIndex: 0, round: 0, due: 1060, lateness: 1)])
        XCTAssertEqual(c.stepIndex, 1)
        XCTAssertEqual(c.stepEndsAt, 1090, "the next step starts when the last was due, not when noticed")
        // Down for an hour: every step lands where it should; finished when it was due.
        let caught = c.advance(to: 4600)
        XCTAssertEqual(caught.map(\.due), [1090, 1150, 1180])
        XCTAssertEqual(c.state, .finished)
        XCTAssertEqual(c.finishedAt, 1180)
        XCTAssertNil(c.nextDue)
        XCTAssertEqual(caught.last?.lateness, 3420)
    }

    func testPauseResumeShiftTheStep() throws {
        var c = try SessionClock.start(steps: [60], repeatCount: 1, at: 0)
        try c.pause(at: 20)
        XCTAssertEqual(c.remaining(at: 500), 40, "time stands still while paused")
        XCTAssertEqual(c.advance(to: 500), [], "a paused session does not advance")
        XCTAssertThrowsError(try c.pause(at: 30))
        try c.resume(at: 100)
        XCTAssertEqual(c.stepEndsAt, 140)
        XCTAssertNil(c.pausedAt)
        XCTAssertThrowsError(try c.resume(at: 101))
    }

    func testSkipResetStop() throws {
        var c = try SessionClock.start(steps: [60, 30, 10], repeatCount: 1, at: 0)
        try c.skip(at: 5)
        XCTAssertEqual(c.stepIndex, 1)
        XCTAssertEqual(c.stepEndsAt, 35)
        try c.pause(at: 10)
        try c.skip(at: 12)
        XCTAssertEqual(c.stepIndex, 2)
        XCTAssertEqual(c.state, .paused, "skipping a paused session leaves it paused on the next step")
        XCTAssertEqual(c.remaining(at: 99), 10)
        try c.reset(at: 50)
        XCTAssertEqual(c.stepIndex, 0)
        XCTAssertEqual(c.state, .paused)
        XCTAssertEqual(c.remaining(at: 70), 60)
        try c.resume(at: 70)
        try c.skip(at: 71)
        try c.skip(at: 72)
        try c.skip(at: 73)
        XCTAssertEqual(c.state, .finished)
        XCTAssertEqual(c.finishedAt, 73)
        XCTAssertThrowsError(try c.skip(at: 74))
        XCTAssertThrowsError(try c.stop(at: 74))
        XCTAssertThrowsError(try c.pause(at: 74), "pausing a finished session")
        try c.reset(at: 80)
        XCTAssertEqual(c.state, .running, "a finished session runs again after reset")
        try c.stop(at: 81)
        XCTAssertEqual(c.finishedAt, 81)
    }

    func testStartRefusesWhatCannotRun() {
        XCTAssertThrowsError(try SessionClock.start(steps: [], repeatCount: 1, at: 0))
        XCTAssertThrowsError(try SessionClock.start(steps: [0], repeatCount: 1, at: 0))
        XCTAssertThrowsError(try SessionClock.start(steps: [5], repeatCount: 0, at: 0))
        XCTAssertThrowsError(try SessionClock.start(steps: Array(repeating: 1, count: 101), repeatCount: 1, at: 0))
    }

    func testReadsAndWritesSessionRows() throws {
        let c = try SessionClock.start(steps: [60, 30], repeatCount: 3, at: 1000)
        var row = c.values
        row["steps"] = .json(#"[{"label":"a","seconds":60},{"label":"b","seconds":30}]"#)
        row["repeatCount"] = .integer(3)
        XCTAssertEqual(try SessionClock(session: row), c)
        var broken = row
        broken["stepIndex"] = .integer(7)
        XCTAssertThrowsError(try SessionClock(session: broken))
        broken = row
        broken["state"] = .string("sleeping")
        XCTAssertThrowsError(try SessionClock(session: broken))
    }

    /// Random operations at random times never leave a session where its fields disagree, and
    /// advancing in many small hops lands where one big hop does.
    func testAdvancingInHopsEqualsOneJump() throws {
        var random = SplitMix64(seed: 42)
        for _ in 0..<500 {
            let steps = (0..<(1 + Int(random.next() % 4))).map { _ in 1 + Int(random.next() % 90) }
            let rounds = 1 + Int(random.next() % 3)
            var hops = try SessionClock.start(steps: steps, repeatCount: rounds, at: 0)
            var jump = hops
            var now = 0.0
            for _ in 0..<20 {
                now += Double(random.next() % 40)
                hops.advance(to: now)
            }
            jump.advance(to: now)
            XCTAssertEqual(hops.state, jump.state)
            XCTAssertEqual(hops.stepIndex, jump.stepIndex)
            XCTAssertEqual(hops.round, jump.round)
            XCTAssertEqual(hops.stepEndsAt, jump.stepEndsAt)
            XCTAssertEqual(hops.finishedAt, jump.finishedAt)
            if hops.state == .running { XCTAssertGreaterThan(hops.stepEndsAt!, now) }
        }
    }
}
