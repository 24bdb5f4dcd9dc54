import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSystem
import SeamTestSupport
import SeamTicker
import XCTest

/// The ticker and the broker in this process, on one `ManualClock`: steps end exactly when due,
/// a replaced ticker catches up, a session that cannot advance is held back — as the clock is
/// moved by hand, with no second of real time waited. (`TickerTests` runs the real processes.)
final class TickerClockTests: XCTestCase {
    let clock = ManualClock(now: 1_800_000_000)
    var broker: EmbeddedBroker!
    let lines = Locked<[String]>([])
    let lateness = Locked<[Double]>([])

    override func setUpWithError() throws { broker = try EmbeddedBroker(clock: clock) }
    override func tearDown() { broker = nil }

    func ticker() throws -> Ticker {
        var options = Ticker.Options()
        options.clock = clock
        options.reconnectTimeout = 1
        let lateness = self.lateness
        options.onTransition = { late in lateness.mutate { $0.append(late) } }
        let lines = self.lines
        let t = try Ticker(options: options, log: { line in lines.mutate { $0.append(line) } }) { [unowned self] in
            try? self.broker.broker.connectPair().fd
        }
        try t.start()
        settle(t)
        return t
    }

    /// Turns the broker and the ticker until neither has anything left to do.
    func settle(_ t: Ticker) {
        var quiet = 0
        while quiet < 5 {
            _ = t.tick()
            broker.turn(maxWait: 0.001)
            if UnixSocket.waitReadable(t.descriptor, timeoutMilliseconds: 0) {
                XCTAssertNoThrow(try t.receive())
                quiet = 0
            } else {
                quiet += 1
            }
        }
    }

    func seconds(_ json: JSON?) -> Double { json?.stringValue.flatMap(RFC3339.parse) ?? .nan }

    func flash(_ c: SeamConnection, _ seconds: Int64) throws -> String {
        try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": .integer(seconds)])["session"]?.stringValue)
    }

    func testStepsEndExactlyWhenDueOnTheBrokersClock() throws {
        let t = try ticker()
        let c = try broker.client()
        let timer = try c.save([.insert(entity: "Timer", values: ["name": "Quick", "repeatCount": 2,
                                                                  "steps": [["label": "a", "seconds": 60], ["label": "b", "seconds": 60]]])]).inserted[0]
        let quick = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(timer)])["session"]?.stringValue)
        let short = try flash(c, 90)
        settle(t)
        clock.advance(59.75)
        settle(t)
        XCTAssertEqual(try c.row("Session", uuid: quick)?["stepIndex"]?.int64Value, 0, "a quarter second before its end")
        clock.advance(0.5)
        settle(t)
        XCTAssertEqual(try c.row("Session", uuid: quick)?["stepIndex"]?.int64Value, 1)
        XCTAssertEqual(lateness.value, [0.25], "late by what the clock moved past the end")
        clock.advance(180)
        settle(t)
        let rows = try [quick, short].map { try XCTUnwrap(try c.row("Session", uuid: $0)) }
        XCTAssertEqual(rows.map { $0["state"]?.stringValue }, ["finished", "finished"], lines.value.joined(separator: "\n"))
        XCTAssertEqual(seconds(rows[0]["finishedAt"]) - seconds(rows[0]["startedAt"]), 240, "four 60 s steps, finished when due")
        XCTAssertEqual(seconds(rows[1]["finishedAt"]) - seconds(rows[1]["startedAt"]), 90)
        XCTAssertTrue(lines.value.contains { $0.contains("finished") }, lines.value.joined(separator: "\n"))
    }

    /// Sessions keep their times while no ticker runs; the next catches up exactly.
    func testAReplacedTickerCatchesUpExactly() throws {
        var t: Ticker? = try ticker()
        let c = try broker.client()
        let s = try flash(c, 30)
        settle(try XCTUnwrap(t))
        t = nil  // gone: its connection closes
        broker.turn()
        clock.advance(100)
        broker.turn()
        XCTAssertEqual(try c.row("Session", uuid: s)?["state"]?.stringValue, "running", "nobody advanced it")
        let next = try ticker()
        settle(next)
        let row = try XCTUnwrap(try c.row("Session", uuid: s))
        XCTAssertEqual(row["state"]?.stringValue, "finished")
        XCTAssertEqual(seconds(row["finishedAt"]) - seconds(row["startedAt"]), 30, "finished when due, not when caught")
        XCTAssertEqual(lateness.value, [70])
        XCTAssertEqual(try c.call("org.seam.Store.Status")["subscriptions"]?.int64Value, 1, "the old ticker's subscription ended with it")
    }

    /// A due session the broker leaves as it is (its position does not fit its steps) is tried
    /// again less and less often, with one line in the log; a good session beside it still ends
    /// on time; stopped, it is let go.
    func testASessionThatCannotAdvanceIsHeldBackNotSpunOn() throws {
        let t = try ticker()
        let c = try broker.client()
        let broken = try c.save([.insert(entity: "Session", values: [
            "name": "Broken", "state": "running", "steps": .array([]), "startedAt": .string(RFC3339.format(clock.now - 65)),
            "stepEndsAt": .string(RFC3339.format(clock.now - 5)),
        ])]).inserted[0]
        settle(t)
        XCTAssertEqual(lines.value.filter { $0.contains("not advanced") }.count, 1, lines.value.joined(separator: "\n"))
        let good = try flash(c, 10)
        for _ in 0..<120 {  // two minutes, a second at a time
            clock.advance(1)
            settle(t)
        }
        XCTAssertEqual(lines.value.filter { $0.contains("not advanced") }.count, 1, "one line, not one a try")
        let row = try XCTUnwrap(try c.row("Session", uuid: good))
        XCTAssertEqual(seconds(row["finishedAt"]) - seconds(row["startedAt"]), 10)
        _ = try c.call("org.seam.Timers.Stop", ["session": .string(broken)])
        settle(t)
        XCTAssertEqual(try c.row("Session", uuid: broken)?["state"]?.stringValue, "finished")
    }
}
