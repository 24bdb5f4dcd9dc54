import SeamBroker
import SeamContext
import SeamJSON
import SeamSchema
import SeamSystem
import SeamTimerService
import SeamTimers
import XCTest

/// The timer service's methods in this process, on an in-memory context and a `ManualClock`:
/// a Pomodoro of hours runs through its steps, pauses and resumes as the test moves time on —
/// no seamd, no socket, and no second of real time waited.
final class TimerServiceClockTests: XCTestCase {
    private var clock: ManualClock!
    private var context: Context!

    override func setUpWithError() throws {
        clock = ManualClock(now: 1_800_000_000)
        context = try Context(inMemory: TimerApp.schema)
    }

    private func call(_ member: String, _ parameters: JSONObject = [:]) throws -> JSONObject {
        switch TimerService.interface.handler(member, parameters, .direct(context, clock: clock)) {
        case .success(let reply): return reply
        case .failure(let error): throw error
        }
    }

    private func session(_ uuid: String) throws -> [String: AttributeValue] {
        try XCTUnwrap(try context.row("Session", uuid)?.values)
    }

    func testAPomodoroRunsPausesAndFinishesOnTheTestsClock() throws {
        var request = SaveRequest()
        request.insert("Timer", ["name": .string("Pomodoro"), "repeatCount": .integer(2),
                                 "steps": .json(#"[{"label":"work","seconds":1500},{"label":"break","seconds":300}]"#)])
        let timer = try XCTUnwrap(try context.save(request)?.changes.first?.uuid)
        let began = WallClock.monotonic()
        let start = clock.now

        let started = try call("Start", ["timer": .string(timer)])
        let uuid = try XCTUnwrap(started["session"]?.stringValue)
        XCTAssertEqual(try session(uuid)["stepEndsAt"]?.doubleValue, start + 1500)

        // Nothing is due before its time.
        clock.advance(1499)
        XCTAssertEqual(try call("Advance", ["session": .string(uuid)])["transitions"]?.arrayValue?.count, 0)
        // Work ends: the break runs, and the step end was on time by this clock.
        clock.advance(1)
        let first = try call("Advance", ["session": .string(uuid)])
        XCTAssertEqual(first["transitions"]?.arrayValue?.count, 1)
        XCTAssertEqual(first["transitions"]?[0]?["lateness"]?.doubleValue, 0)
        XCTAssertEqual(try session(uuid)["stepIndex"]?.integerValue, 1)
        XCTAssertEqual(first["nextDue"]?.doubleValue, start + 1800)

        // Paused for an hour halfway through the break: the hour is not counted.
        clock.advance(150)
        XCTAssertEqual(try call("Pause", ["session": .string(uuid)])["state"]?.stringValue, "paused")
        clock.advance(3600)
        XCTAssertEqual(try call("Resume", ["session": .string(uuid)])["state"]?.stringValue, "running")
        XCTAssertEqual(try session(uuid)["stepEndsAt"]?.doubleValue, start + 1800 + 3600)

        // A machine asleep through the whole second round: one Advance passes every step that
        // ended, and the session finishes when its last step did.
        clock.advance(150 + 1800 + 60)
        let last = try call("Advance", ["session": .string(uuid)])
        XCTAssertEqual(last["state"]?.stringValue, "finished")
        XCTAssertEqual(last["transitions"]?.arrayValue?.count, 3, "the break's end, round two's work and its break")
        XCTAssertEqual(last["transitions"]?[2]?["lateness"]?.doubleValue, 60)
        XCTAssertEqual(try session(uuid)["finishedAt"]?.doubleValue, start + 3600 + 2 * 1800)

        XCTAssertEqual(try call("Clear")["deleted"]?.int64Value, 1)
        XCTAssertLessThan(WallClock.monotonic() - began, 1, "two hours of the timer's time took no real time")
    }

    /// A wall clock set back (by a person, by NTP) is the broker's "now" as it is: a Flash
    /// started then ends at its own length from that time.
    func testTheServiceReadsItsClocksNowEvenWhenTheClockIsSetBack() throws {
        clock.setNow(1_700_000_000)
        let flash = try call("Flash", ["seconds": .integer(60), "name": .string("Tea")])
        let uuid = try XCTUnwrap(flash["session"]?.stringValue)
        XCTAssertEqual(try session(uuid)["stepEndsAt"]?.doubleValue, 1_700_000_060)
        clock.advance(60)
        XCTAssertEqual(try call("Advance", ["session": .string(uuid)])["state"]?.stringValue, "finished")
    }
}
