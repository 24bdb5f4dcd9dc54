import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamSystem
import SeamTestSupport
import SeamTimerService
import XCTest

/// org.seam.Timers through seamd's broker, in this process on a `ManualClock`: the session
/// lifecycle as the seed describes it, with time moved on by hand rather than waited through.
final class TimerServiceTests: EmbeddedBrokerTestCase {
    let clock = ManualClock(now: 1_800_000_000)

    override func setUpWithError() throws { broker = try EmbeddedBroker(clock: clock) }

    func addTimer(_ c: SeamConnection, _ name: String, steps: [(String, Int)], repeatCount: Int = 1) throws -> String {
        let json = JSON.array(steps.map { ["label": .string($0.0), "seconds": .integer(Int64($0.1))] })
        return try c.save([.insert(entity: "Timer", values: ["name": .string(name), "steps": json,
                                                             "repeatCount": .integer(Int64(repeatCount))])]).inserted[0]
    }

    func expectError(_ name: String, _ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) { e in
            XCTAssertEqual((e as? ClientError)?.remoteName, name, "\(e)", file: file, line: line)
        }
    }

    func testTheCommittedInterfaceFileMatches() throws {
        XCTAssertEqual(try RepositoryFiles.text("Protocol/org.seam.Timers.varlink"), TimerService.description)
        let info = try client().call("org.varlink.service.GetInfo")
        XCTAssertEqual(info["interfaces"]?.arrayValue?.compactMap(\.stringValue), ["org.seam.Maintenance", "org.seam.Metrics", "org.seam.Migration", "org.seam.Store", "org.seam.Sync", "org.seam.Timers", "org.varlink.service"])
    }

    /// Start copies the timer wholesale; editing the timer changes nothing in the run; starting
    /// a running timer is refused; a finished session is replaced; deleting the timer deletes it.
    func testStartCopiesAndEditsApplyToTheNextRun() throws {
        let c = try client()
        let tea = try addTimer(c, "Tea", steps: [("Steep", 180), ("Rest", 60)], repeatCount: 2)
        let started = try c.call("org.seam.Timers.Start", ["timer": .string(tea)])
        let session = try XCTUnwrap(started["session"]?.stringValue)
        var row = try XCTUnwrap(c.row("Session", uuid: session))
        XCTAssertEqual(row["name"]?.stringValue, "Tea")
        XCTAssertEqual(row["state"]?.stringValue, "running")
        XCTAssertEqual(row["repeatCount"]?.int64Value, 2)
        XCTAssertEqual(row["steps"]?.arrayValue?.count, 2)
        XCTAssertNotNil(row["stepEndsAt"]?.stringValue)

        try c.save([.update(entity: "Timer", uuid: tea, values: ["name": "Green tea", "steps": [["label": "Steep", "seconds": 90]]])])
        row = try XCTUnwrap(c.row("Session", uuid: session))
        XCTAssertEqual(row["name"]?.stringValue, "Tea", "the run keeps what it started with")
        XCTAssertEqual(row["steps"]?.arrayValue?.count, 2)

        expectError("org.seam.Timers.AlreadyRunning") { _ = try c.call("org.seam.Timers.Start", ["timer": .string(tea)]) }
        XCTAssertEqual(try c.call("org.seam.Timers.Stop", ["session": .string(session)])["state"]?.stringValue, "finished")
        let again = try c.call("org.seam.Timers.Start", ["timer": .string(tea)])
        XCTAssertEqual(again["replaced"]?.stringValue, session, "a finished session is replaced in the same save")
        let second = try XCTUnwrap(again["session"]?.stringValue)
        XCTAssertNil(try c.row("Session", uuid: session))
        XCTAssertEqual(try c.row("Session", uuid: second)?["name"]?.stringValue, "Green tea", "the next run has the edit")

        try c.save([.delete(entity: "Timer", uuid: tea)])
        XCTAssertNil(try c.row("Session", uuid: second), "deleting a timer deletes its session")
    }

    /// Start copies the timer's sound with the rest; a flash session has none; editing the
    /// timer's sound changes nothing in the session under way, and the next run has the edit.
    func testStartCopiesTheSound() throws {
        let c = try client()
        let tea = try addTimer(c, "Tea", steps: [("Steep", 180)])
        let silent = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(tea)])["session"]?.stringValue)
        XCTAssertEqual(try c.row("Session", uuid: silent)?["sound"]?.stringValue, "", "a timer without a sound gives none")
        try c.call("org.seam.Timers.Stop", ["session": .string(silent)])

        try c.save([.update(entity: "Timer", uuid: tea, values: ["sound": "gong — 鐘"])])
        let session = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(tea)])["session"]?.stringValue)
        XCTAssertEqual(try c.row("Session", uuid: session)?["sound"]?.stringValue, "gong — 鐘")
        try c.save([.update(entity: "Timer", uuid: tea, values: ["sound": "bell"])])
        XCTAssertEqual(try c.row("Session", uuid: session)?["sound"]?.stringValue, "gong — 鐘", "the run keeps what it started with")
        try c.call("org.seam.Timers.Stop", ["session": .string(session)])
        let next = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(tea)])["session"]?.stringValue)
        XCTAssertEqual(try c.row("Session", uuid: next)?["sound"]?.stringValue, "bell", "the next run has the edit")

        let flash = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 60])["session"]?.stringValue)
        XCTAssertEqual(try c.row("Session", uuid: flash)?["sound"]?.stringValue, "")
    }

    /// The note of a new session comes from the call (a timer has none to copy): Start and Flash
    /// keep the one given, and without one (or with null) it is empty. It does not carry over to
    /// the timer's next run.
    func testTheNoteComesFromTheCall() throws {
        let c = try client()
        let tea = try addTimer(c, "Tea", steps: [("Steep", 180)])
        let first = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(tea), "note": "for the guests"])["session"]?.stringValue)
        let row = try XCTUnwrap(c.row("Session", uuid: first))
        XCTAssertEqual(row["note"]?.stringValue, "for the guests")
        XCTAssertEqual(row["name"]?.stringValue, "Tea", "the rest still comes from the timer")
        XCTAssertEqual(try c.call("org.seam.Timers.Stop", ["session": .string(first)])["state"]?.stringValue, "finished")
        let next = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(tea)])["session"]?.stringValue)
        XCTAssertEqual(try c.row("Session", uuid: next)?["note"]?.stringValue, "")

        func flashNote(_ p: JSONObject) throws -> String? {
            let s = try XCTUnwrap(try c.call("org.seam.Timers.Flash", p)["session"]?.stringValue)
            return try c.row("Session", uuid: s)?["note"]?.stringValue
        }
        XCTAssertEqual(try flashNote(["seconds": 90, "name": "Pasta", "note": "salt the water — ✓"]), "salt the water — ✓")
        XCTAssertEqual(try flashNote(["seconds": 90, "note": .null]), "")
        XCTAssertEqual(try flashNote(["seconds": 90]), "")
        let sessions = try c.count("Session")
        expectError("org.varlink.service.InvalidParameter") { _ = try c.call("org.seam.Timers.Flash", ["seconds": 90, "note": 5]) }
        expectError("org.varlink.service.InvalidParameter") {
            _ = try c.call("org.seam.Timers.Start", ["timer": .string(tea), "note": ["a"]])
        }
        XCTAssertEqual(try c.count("Session"), sessions, "a refused call saves nothing")
    }

    func testLifecycleAndWrongStates() throws {
        let c = try client()
        let flash = try c.call("org.seam.Timers.Flash", ["seconds": 300, "name": "Pasta"])
        let s = try XCTUnwrap(flash["session"]?.stringValue)
        let row = try XCTUnwrap(c.row("Session", uuid: s))
        XCTAssertEqual(row["timerUUID"], .null, "a flash session has no timer")
        XCTAssertEqual(row["name"]?.stringValue, "Pasta")
        func op(_ m: String) throws -> String? { try c.call("org.seam.Timers.\(m)", ["session": .string(s)])["state"]?.stringValue }
        XCTAssertEqual(try op("Pause"), "paused")
        expectError("org.seam.Timers.WrongState") { _ = try op("Pause") }
        XCTAssertEqual(try op("Resume"), "running")
        XCTAssertEqual(try op("Reset"), "running")
        XCTAssertEqual(try op("Skip"), "finished", "skipping the only step finishes")
        expectError("org.seam.Timers.WrongState") { _ = try op("Pause") }
        expectError("org.seam.Timers.WrongState") { _ = try op("Stop") }
        XCTAssertEqual(try c.call("org.seam.Timers.Clear")["deleted"]?.int64Value, 1)
        XCTAssertNil(try c.row("Session", uuid: s))
        expectError("org.seam.Timers.NotFound") { _ = try op("Pause") }
        expectError("org.seam.Timers.NotFound") { _ = try c.call("org.seam.Timers.Start", ["timer": .string(UUIDText.random())]) }
        expectError("org.varlink.service.InvalidParameter") { _ = try c.call("org.seam.Timers.Flash", ["seconds": 0]) }
        expectError("org.varlink.service.InvalidParameter") { _ = try c.call("org.seam.Timers.Pause", [:]) }
        expectError("org.varlink.service.MethodNotFound") { _ = try c.call("org.seam.Timers.Frobnicate", [:]) }
        let empty = try addTimer(c, "Empty", steps: [])
        expectError("org.seam.Timers.InvalidTimer") { _ = try c.call("org.seam.Timers.Start", ["timer": .string(empty)]) }
        // Without Hello a connection may not start anything.
        let readOnly = try broker.client(hello: false)
        expectError("org.seam.Store.PermissionDenied") { _ = try readOnly.call("org.seam.Timers.Flash", ["seconds": 5]) }
    }

    /// With no ticker (none runs beside this seamd), steps that ended are past before a
    /// person's change applies: a skip skips the step running now, and a stop of a session
    /// whose last step ended records when it was due.
    func testAPersonsChangeComesAfterTheStepsThatEnded() throws {
        let c = try client()
        let timer = try addTimer(c, "Tea", steps: [("steep", 1), ("rest", 30)])
        let tea = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(timer)])["session"]?.stringValue)
        let flash = try c.call("org.seam.Timers.Flash", ["seconds": 1])
        let f = try XCTUnwrap(flash["session"]?.stringValue)
        clock.advance(1.3)
        XCTAssertEqual(try c.call("org.seam.Timers.Skip", ["session": .string(tea)])["state"]?.stringValue, "finished",
                       "the rest step was running; skipping it ends the last step")
        XCTAssertEqual(try c.call("org.seam.Timers.Stop", ["session": .string(f)])["state"]?.stringValue, "finished")
        let row = try XCTUnwrap(c.row("Session", uuid: f))
        let started = try XCTUnwrap(row["startedAt"]?.stringValue.flatMap(RFC3339.parse))
        let finished = try XCTUnwrap(row["finishedAt"]?.stringValue.flatMap(RFC3339.parse))
        XCTAssertEqual(finished - started, 1, accuracy: 1e-3, "finished when due, not when stopped")
    }

    /// Resumed, a session has the time it had left when paused, though the wall clock was set
    /// back meanwhile (the pause was taken on a clock an hour fast).
    func testResumeKeepsTheTimeLeftWhenTheClockWentBack() throws {
        let c = try client()
        let s = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 60])["session"]?.stringValue)
        _ = try c.call("org.seam.Timers.Pause", ["session": .string(s)])
        let row = try XCTUnwrap(c.row("Session", uuid: s))
        let paused = try XCTUnwrap(row["pausedAt"]?.stringValue.flatMap(RFC3339.parse))
        let end = try XCTUnwrap(row["stepEndsAt"]?.stringValue.flatMap(RFC3339.parse))
        try c.save([.update(entity: "Session", uuid: s, values: ["pausedAt": .string(RFC3339.format(paused + 3600)),
                                                                 "stepEndsAt": .string(RFC3339.format(end + 3600))])])
        _ = try c.call("org.seam.Timers.Resume", ["session": .string(s)])
        let resumed = try XCTUnwrap(c.row("Session", uuid: s)?["stepEndsAt"]?.stringValue.flatMap(RFC3339.parse))
        XCTAssertEqual(resumed - clock.now, end - paused, accuracy: 1e-6, "the minute it had left, not an hour more")
    }

    /// A paused session whose dates a plugin set at the ends of the range cannot be resumed
    /// into a step end past year 9999: Resume is refused, and the row stays as it was.
    func testAResumeBeyondTheLastDateIsRefused() throws {
        let c = try client()
        let s = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 60])["session"]?.stringValue)
        _ = try c.call("org.seam.Timers.Pause", ["session": .string(s)])
        try c.save([.update(entity: "Session", uuid: s, values: ["pausedAt": "0001-01-01T00:00:00Z", "stepEndsAt": "9999-12-31T00:00:00Z"])])
        let before = try XCTUnwrap(c.row("Session", uuid: s))
        XCTAssertThrowsError(try c.call("org.seam.Timers.Resume", ["session": .string(s)])) { error in
            XCTAssertTrue("\(error)".contains("9999-12-31"), "\(error)")
        }
        XCTAssertEqual(try c.row("Session", uuid: s), before)
    }

    /// A running session whose position does not fit its steps (a plugin wrote it so) can be
    /// stopped; every other change says so.
    func testASessionThatDoesNotFitItsStepsCanBeStopped() throws {
        let c = try client()
        let s = try c.save([.insert(entity: "Session", values: ["name": "Broken", "state": "running", "steps": .array([]), "startedAt": .string(RFC3339.format(clock.now - 65)),
                                                                "stepEndsAt": .string(RFC3339.format(clock.now - 5))])]).inserted[0]
        expectError("org.seam.Timers.InvalidTimer") { _ = try c.call("org.seam.Timers.Pause", ["session": .string(s)]) }
        XCTAssertEqual(try c.call("org.seam.Timers.Stop", ["session": .string(s)])["state"]?.stringValue, "finished")
        XCTAssertEqual(try c.row("Session", uuid: s)?["state"]?.stringValue, "finished")
        expectError("org.seam.Timers.WrongState") { _ = try c.call("org.seam.Timers.Stop", ["session": .string(s)]) }
    }

    /// A session written with more rounds or steps than a start allows (a plugin may write
    /// sessions) is refused as one that does not fit: walking its step ends from long ago held
    /// the broker's thread for as long as it took (10^15 rounds of one second). Stop ends it.
    func testASessionOutsideTheBoundsIsRefusedNotWalked() throws {
        let c = try client()
        let longAgo = RFC3339.format(clock.now - 8_000_000)
        let s = try c.save([.insert(entity: "Session", values: [
            "name": "Endless", "state": "running", "steps": .array([["label": "a", "seconds": 1]]),
            "repeatCount": .integer(1_000_000_000_000_000), "startedAt": .string(longAgo), "stepEndsAt": .string(longAgo),
        ])]).inserted[0]
        for m in ["Pause", "Advance", "Skip"] {
            expectError("org.seam.Timers.InvalidTimer") { _ = try c.call("org.seam.Timers.\(m)", ["session": .string(s)]) }
        }
        XCTAssertEqual(try c.call("org.seam.Timers.Stop", ["session": .string(s)])["state"]?.stringValue, "finished")
    }

    /// A change refused because the session finished meanwhile still keeps that it finished:
    /// the state the error names is the stored one.
    func testARefusedChangeKeepsTheStepsThatEnded() throws {
        let c = try client()
        let timer = try addTimer(c, "Two", steps: [("a", 1), ("b", 1)])
        let s = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(timer)])["session"]?.stringValue)
        clock.advance(2.3)
        expectError("org.seam.Timers.WrongState") { _ = try c.call("org.seam.Timers.Pause", ["session": .string(s)]) }
        XCTAssertEqual(try c.row("Session", uuid: s)?["state"]?.stringValue, "finished")
    }

    /// A finished session with no steps (a run from before release 4) cannot be reset into a
    /// running session that no method can then move; parameters of the wrong type are refused.
    func testResetNeedsStepsAndParametersTheirTypes() throws {
        let c = try client()
        let now = RFC3339.format(clock.now)
        let s = try c.save([.insert(entity: "Session", values: ["name": "Old run", "state": "finished", "steps": .array([]),
                                                                "startedAt": .string(now), "finishedAt": .string(now)])]).inserted[0]
        expectError("org.seam.Timers.InvalidTimer") { _ = try c.call("org.seam.Timers.Reset", ["session": .string(s)]) }
        XCTAssertEqual(try c.row("Session", uuid: s)?["state"]?.stringValue, "finished")
        expectError("org.varlink.service.InvalidParameter") { _ = try c.call("org.seam.Timers.Flash", ["seconds": 5, "name": 5]) }
        let other = try broker.client(hello: false)
        expectError("org.varlink.service.InvalidParameter") { _ = try other.call("org.seam.Store.Hello", ["version": 1, "role": 5]) }
        expectError("org.varlink.service.InvalidParameter") { _ = try other.call("org.seam.Store.Hello", ["version": 1, "name": 5]) }
    }

    /// Advance moves a session along the wall clock; a one-second flash finishes on time and
    /// records when it was due.
    func testAdvanceFinishesOnTheWallClock() throws {
        let c = try client()
        let s = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 1])["session"]?.stringValue)
        let early = try c.call("org.seam.Timers.Advance", ["session": .string(s)])
        XCTAssertEqual(early["transitions"]?.arrayValue?.count, 0)
        XCTAssertEqual(early["sequence"], .null, "nothing due, nothing saved")
        let due = try XCTUnwrap(early["nextDue"]?.doubleValue)
        clock.advance(1.2)
        let late = try c.call("org.seam.Timers.Advance", ["session": .string(s)])
        XCTAssertEqual(late["state"]?.stringValue, "finished")
        let t = try XCTUnwrap(late["transitions"]?.arrayValue?.first)
        XCTAssertEqual(t["due"]?.doubleValue ?? 0, due, accuracy: 1e-6)
        XCTAssertEqual(t["lateness"]?.doubleValue ?? -1, 0.2, accuracy: 1e-6, "late by what the clock moved past it")
        XCTAssertEqual(try c.row("Session", uuid: s)?["finishedAt"], .string(RFC3339.format(due)), "finished when it was due")
    }

    /// A session long overdue passes tens of thousands of step ends at once: the reply lists the
    /// last 100 and counts the rest, so it stays small (all of them ran to megabytes, past what
    /// the ticker read).
    func testALongOverdueSessionListsItsLastStepEndsAndCountsTheRest() throws {
        let c = try client()
        let now = clock.now
        let steps: JSON = .array((0..<100).map { _ in ["label": "s", "seconds": 1] })
        func overdue() throws -> String {
            try c.save([.insert(entity: "Session", values: [
                "name": "Drill", "state": "running", "steps": steps, "repeatCount": 1000, "stepIndex": 0, "round": 0,
                "startedAt": .string(RFC3339.format(now - 50_000)), "stepEndsAt": .string(RFC3339.format(now - 49_999)),
            ])]).inserted[0]
        }
        let one = try overdue(), two = try overdue()
        let single = try c.call("org.seam.Timers.Advance", ["session": .string(one)])
        let many = try c.call("org.seam.Timers.AdvanceMany", ["sessions": [.string(two)]])
        for (uuid, reply) in [(one, single), (two, try XCTUnwrap(many["advanced"]?[0]?.objectValue))] {
            let listed = try XCTUnwrap(reply["transitions"]?.arrayValue)
            XCTAssertEqual(listed.count, 100)
            let earlier = try XCTUnwrap(reply["earlierTransitions"]?.int64Value)
            let row = try XCTUnwrap(c.row("Session", uuid: uuid))
            let position = try XCTUnwrap(row["round"]?.int64Value) * 100 + XCTUnwrap(row["stepIndex"]?.int64Value)
            XCTAssertEqual(earlier + 100, position, "every step end that passed, listed or counted")
            XCTAssertGreaterThan(earlier, 49_000)
            let last = try XCTUnwrap(listed.last)
            XCTAssertEqual((last["round"]?.int64Value ?? 0) * 100 + (last["stepIndex"]?.int64Value ?? 0), position - 1, "the last ones")
        }
        let early = try c.call("org.seam.Timers.Advance", ["session": .string(one)])
        XCTAssertEqual(early["earlierTransitions"], .integer(0))
    }

    func testAdvanceManySkipsWhatIsGoneOrNotDue() throws {
        let c = try client()
        let due = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 1])["session"]?.stringValue)
        let later = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 600])["session"]?.stringValue)
        clock.advance(1.1)
        // Named twice, a session is advanced once.
        let r = try c.call("org.seam.Timers.AdvanceMany", ["sessions": [.string(due), .string(later), .string(UUIDText.random()), .string(due)]])
        XCTAssertEqual(r["advanced"]?.arrayValue?.compactMap { $0["session"]?.stringValue }, [due])
        XCTAssertEqual(r["advanced"]?[0]?["state"]?.stringValue, "finished")
        XCTAssertNotNil(r["sequence"]?.int64Value)
        XCTAssertEqual(try c.call("org.seam.Timers.AdvanceMany", ["sessions": [.string(later)]])["sequence"], .null, "nothing due, no save")
        XCTAssertThrowsError(try c.call("org.seam.Timers.AdvanceMany", ["sessions": "x"]))
    }

    /// Two Starts of one timer at the same moment, from two connections: one session.
    func testConcurrentStartsGiveOneSession() throws {
        let c = try client()
        let tea = try addTimer(c, "Tea", steps: [("Steep", 180)])
        let call = #"{"method":"org.seam.Timers.Start","parameters":{"timer":"\#(tea)"}}"#
        let hello = #"{"method":"org.seam.Store.Hello","parameters":{"version":1}}"#
        let clients = try (0..<8).map { _ in try broker.raw() }
        for r in clients {
            r.send(hello)
            _ = r.readFrame()
        }
        for r in clients { r.send(call) }
        var started = 0, refused = 0
        for r in clients {
            let text = try XCTUnwrap(r.readFrame())
            if text.contains("\"session\"") && !text.contains("error") { started += 1 }
            if text.contains("org.seam.Timers.AlreadyRunning") { refused += 1 }
        }
        XCTAssertEqual(started, 1)
        XCTAssertEqual(refused, 7)
        XCTAssertEqual(try c.count("Session", where: "timerUUID == $t", parameters: ["t": .string(tea)]), 1)
    }
}

