import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamTestSupport
import Synchronization
import XCTest

/// seam-ticker as a real process beside a real seamd: steps end on time; a killed ticker's
/// replacement catches up exactly.
final class TickerTests: BrokerTestCase {
    final class TickerProcess {
        let process = Process()
        let logFile: String

        init(socket: String, directory: TemporaryDirectory) throws {
            logFile = directory.file("ticker-\(UUID().uuidString.prefix(6)).log")
            _ = FileManager.default.createFile(atPath: logFile, contents: nil)
            process.executableURL = URL(fileURLWithPath: Executables.path("seam-ticker"))
            process.arguments = ["--socket", socket]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logFile))
            try process.run()
        }

        var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

        func kill() {
            if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }

        deinit { kill() }
    }

    func waitUntilFinished(_ c: SeamConnection, _ sessions: [String], within seconds: Double) throws -> [JSONObject] {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let rows = try sessions.map { try XCTUnwrap(c.row("Session", uuid: $0)) }
            if rows.allSatisfy({ $0["state"]?.stringValue == "finished" }) { return rows }
            if Date() > deadline { return rows }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    func seconds(_ json: JSON?) -> Double { json?.stringValue.flatMap(RFC3339.parse) ?? .nan }

    func testStepsEndOnTimeAndAKilledTickerIsReplacedWithoutLoss() throws {
        let c = try client()
        var ticker = try TickerProcess(socket: broker.socketPath, directory: broker.directory)
        let timer = try c.save([.insert(entity: "Timer", values: ["name": "Quick", "repeatCount": 2,
                                                                  "steps": [["label": "a", "seconds": 1], ["label": "b", "seconds": 1]]])]).inserted[0]
        let quick = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(timer)])["session"]?.stringValue)
        let flash = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 1])["session"]?.stringValue)
        let rows = try waitUntilFinished(c, [quick, flash], within: 8)
        XCTAssertEqual(rows.map { $0["state"]?.stringValue }, ["finished", "finished"], ticker.log)
        XCTAssertEqual(seconds(rows[0]["finishedAt"]) - seconds(rows[0]["startedAt"]), 4, accuracy: 1e-3, "four 1 s steps")
        XCTAssertEqual(seconds(rows[1]["finishedAt"]) - seconds(rows[1]["startedAt"]), 1, accuracy: 1e-3)

        // Killed mid-run: sessions keep their wall-clock times; the next ticker catches up.
        let running = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 1])["session"]?.stringValue)
        ticker.kill()
        let whileDown = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 1])["session"]?.stringValue)
        // Its step ends with no ticker running: the row's own end, not a guess, is waited for.
        let due = seconds(try c.row("Session", uuid: whileDown)?["stepEndsAt"])
        XCTAssertFalse(due.isNaN)
        while Date().timeIntervalSince1970 < due + 0.05 { usleep(10_000) }
        XCTAssertEqual(try c.row("Session", uuid: whileDown)?["state"]?.stringValue, "running", "nobody advanced it")
        ticker = try TickerProcess(socket: broker.socketPath, directory: broker.directory)
        let caught = try waitUntilFinished(c, [running, whileDown], within: 5)
        for row in caught {
            XCTAssertEqual(row["state"]?.stringValue, "finished", ticker.log)
            XCTAssertEqual(seconds(row["finishedAt"]) - seconds(row["startedAt"]), 1, accuracy: 1e-3, "finished when due, not when caught")
        }
        // The ticker logs when the reply to its AdvanceMany arrives, just after the commit the rows show.
        let deadline = Date().addingTimeInterval(5)
        while !ticker.log.contains("ms late; finished") && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(ticker.log.contains("ms late; finished"), ticker.log)
    }

    /// A due session the broker leaves as it is (its position does not fit its steps) is
    /// tried again less and less often, with one line in the log: not in a loop that keeps
    /// the ticker and seamd busy. Stopped, it leaves the ticker's result.
    func testASessionThatCannotAdvanceIsHeldBackNotSpunOn() throws {
        let c = try client()
        let ticker = try TickerProcess(socket: broker.socketPath, directory: broker.directory)
        let s = try c.save([.insert(entity: "Session", values: ["name": "Broken", "state": "running", "steps": .array([]), "startedAt": .string(RFC3339.format(Date().timeIntervalSince1970 - 65)),
                                                                "stepEndsAt": .string(RFC3339.format(Date().timeIntervalSince1970 - 5))])]).inserted[0]
        try eventually(5, "the ticker said so") { ticker.log.contains("not advanced") }
        // A good session still ends on time beside it; the ticker is idle meanwhile, the broken
        // one held back (CPU time over the good one's second).
        let before = try cpuSeconds(ticker.process.processIdentifier), started = Date()
        let flash = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 1])["session"]?.stringValue)
        XCTAssertEqual(try waitUntilFinished(c, [flash], within: 5).first?["state"]?.stringValue, "finished", ticker.log)
        let used = try cpuSeconds(ticker.process.processIdentifier) - before
        XCTAssertLessThan(used, 0.2, "the ticker used \(used) s of CPU in \(Date().timeIntervalSince(started)) s\n\(ticker.log)")
        XCTAssertEqual(ticker.log.components(separatedBy: "not advanced").count - 1, 1, ticker.log)
        _ = try c.call("org.seam.Timers.Stop", ["session": .string(s)])
    }

    /// A diff that never reached the ticker (lost here on purpose, between seamd and the ticker)
    /// makes a later one not fit: the ticker ends its subscription and follows running sessions
    /// afresh. It does not pile subscriptions up, each delivering every diff again.
    func testATickerThatMissedADiffSubscribesAfreshInPlaceOfTheOld() throws {
        let losing = Mutex(false), results = Mutex(0), seen = Mutex<[String]>([])
        let proxy = try FrameProxy(upstream: broker.socketPath, in: broker.directory) { frame in
            seen.withLock { $0.append(String(frame.prefix(300))) }
            if frame.contains(#""kind":"result""#) { results.withLock { $0 += 1 } }
            return frame.contains(#""kind":"diff""#) && frame.contains(#""inserted""#) && losing.withLock { lose in
                defer { lose = false }
                return lose
            }
        }
        defer { proxy.stop() }
        let c = try client()
        let ticker = try TickerProcess(socket: proxy.socketPath, directory: broker.directory)
        try eventually(5, "the ticker subscribed") { try c.call("org.seam.Store.Status")["subscriptions"]?.int64Value == 1 }
        for round in 1...3 {
            // The result of the subscription it holds now on its way: a session started before that
            // result is read comes in it, not in a diff there is to lose.
            try eventually(5, "the ticker's result \(round) passed") { results.withLock { $0 } >= round }
            losing.withLock { $0 = true }
            let lost = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 600])["session"]?.stringValue)
            try eventually(5, "the insert was lost") { !losing.withLock { $0 } }
            if losing.withLock({ $0 }) {
                return XCTFail("round \(round): what reached the ticker:\n" + seen.withLock { $0.joined(separator: "\n") } + "\n" + ticker.log)
            }
            _ = try c.call("org.seam.Timers.Stop", ["session": .string(lost)])
            try eventually(5, "the ticker noticed, round \(round)") {
                ticker.log.components(separatedBy: "did not fit").count - 1 == round
            }
            try eventually(5, "one subscription, round \(round)") { try c.call("org.seam.Store.Status")["subscriptions"]?.int64Value == 1 }
        }
        // And it still ticks.
        let flash = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 1])["session"]?.stringValue)
        XCTAssertEqual(try waitUntilFinished(c, [flash], within: 5).first?["state"]?.stringValue, "finished", ticker.log)
        XCTAssertEqual(try c.call("org.seam.Store.Status")["subscriptions"]?.int64Value, 1, ticker.log)
    }

    /// Two tickers race for every step end. The one that loses finds the session moved on (its
    /// diff arrives before the reply): that is no session that cannot advance, and no line.
    func testASecondTickerIsHarmlessAndQuiet() throws {
        let c = try client()
        let tickers = try (0..<2).map { _ in try TickerProcess(socket: broker.socketPath, directory: broker.directory) }
        try eventually(5, "both subscribed") { try c.call("org.seam.Store.Status")["subscriptions"]?.int64Value == 2 }
        let timer = try c.save([.insert(entity: "Timer", values: ["name": "Laps", "repeatCount": 2,
                                                                  "steps": .array((0..<3).map { _ in ["label": "lap", "seconds": 1] })])]).inserted[0]
        var sessions = [try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(timer)])["session"]?.stringValue)]
        for seconds in 1...5 { sessions.append(try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": .integer(Int64(seconds))])["session"]?.stringValue)) }
        let rows = try waitUntilFinished(c, sessions, within: 12)
        XCTAssertEqual(Set(rows.map { $0["state"]?.stringValue }), ["finished"])
        XCTAssertEqual(seconds(rows[0]["finishedAt"]) - seconds(rows[0]["startedAt"]), 6, accuracy: 1e-3, "six 1 s steps, each once")
        for t in tickers { XCTAssertFalse(t.log.contains("not advanced"), t.log) }
    }

    func testTheTickerWaitsForABrokerThatIsNotThereYet() throws {
        let socket = broker.socketPath
        broker.stop()
        let ticker = try TickerProcess(socket: socket, directory: broker.directory)
        try eventually(5, "it says it keeps trying") { ticker.log.contains("yet; trying again for up to") }
        XCTAssertTrue(ticker.process.isRunning, "it keeps trying")
        broker = try broker.restarted()
        let c = try client()
        let s = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 1])["session"]?.stringValue)
        XCTAssertEqual(try waitUntilFinished(c, [s], within: 6).first?["state"]?.stringValue, "finished", ticker.log)
    }
}

/// User and system CPU time of a process so far (/proc/PID/stat), in seconds.
func cpuSeconds(_ pid: Int32) throws -> Double {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    let fields = stat[stat.index(after: try XCTUnwrap(stat.lastIndex(of: ")")))...].split(separator: " ")
    // After "pid (comm)": state is field 3, utime 14, stime 15 (1-based), so 11 and 12 here.
    let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
    return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
}
