import Glibc
import SeamSystem
import XCTest

/// The event loop: its upkeep between requests (`whenIdle`), which the checkpointer's catch-up
/// relies on, its spin window, and its deadlines on an injected clock.
final class EventLoopTests: XCTestCase {
    /// Deadlines follow the loop's clock: on a `ManualClock` they fire when the test moves time
    /// on, in the order they are due, and not before — a test turns the loop instead of sleeping.
    func testDeadlinesFollowAManualClockAndNoTimeIsSlept() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        var fired: [String] = []
        loop.after(5) { fired.append("5 s") }
        loop.after(60) { fired.append("a minute") }
        let cancelled = loop.after(1) { fired.append("cancelled") }
        loop.cancel(cancelled)
        let began = WallClock.monotonic()
        loop.turn(maxWait: 0)
        XCTAssertEqual(fired, [])
        clock.advance(4.999)
        loop.turn(maxWait: 0)
        XCTAssertEqual(fired, [], "not before it is due")
        clock.advance(0.001)
        loop.turn(maxWait: 0)
        XCTAssertEqual(fired, ["5 s"])
        clock.setNow(0)  // the wall clock set back: deadlines are on the monotonic one
        clock.advance(3600)
        loop.turn(maxWait: 0)
        XCTAssertEqual(fired, ["5 s", "a minute"])
        // A deadline set from within one fires on a later turn, at its own time.
        loop.after(2) { fired.append("later") }
        loop.turn(maxWait: 0)
        clock.advance(2)
        loop.turn(maxWait: 0)
        XCTAssertEqual(fired, ["5 s", "a minute", "later"])
        XCTAssertLessThan(WallClock.monotonic() - began, 0.5, "an hour of the loop's time took no real time")
    }

    func testAManualClockMovesOnlyWhenTold() {
        let clock = ManualClock(now: 100)
        XCTAssertEqual(clock.now, 100)
        XCTAssertEqual(clock.monotonic, 0)
        clock.advance(2.5)
        XCTAssertEqual(clock.now, 102.5)
        XCTAssertEqual(clock.monotonic, 2.5)
        clock.setNow(50)
        XCTAssertEqual(clock.now, 50)
        XCTAssertEqual(clock.monotonic, 2.5, "setting the wall clock leaves the monotonic one")
    }

    /// Upkeep runs only when it is due and nothing is ready: a readable descriptor is served
    /// first, whatever upkeep is waiting; once upkeep is no longer due, the loop blocks again
    /// rather than polling.
    func testUpkeepRunsOnlyWhenDueAndNothingIsReady() throws {
        let loop = try EventLoop()
        var pair: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        defer { close(pair[0]); close(pair[1]) }
        func send(_ byte: UInt8) {
            var b = byte
            _ = write(pair[1], &b, 1)
        }
        var log: [String] = []
        var due = true
        var asked = 0
        try loop.watch(pair[0], .read) { _ in
            var byte: UInt8 = 0
            _ = read(pair[0], &byte, 1)
            log.append("read \(byte)")
            // Idle for a while now, with nothing due: a loop that polled would ask `due` often.
            if byte == 2 { loop.after(0.2) { loop.stop() } }
        }
        loop.whenIdle({ asked += 1; return due }) {
            log.append("upkeep")
            due = false
            send(2)
        }
        send(1)  // ready before the loop's first turn: served before the upkeep
        loop.after(10) { loop.stop() }  // a safety net only
        loop.run()
        XCTAssertEqual(log, ["read 1", "upkeep", "read 2"])
        XCTAssertLessThan(asked, 20, "the loop blocked while nothing was due; it did not spin")
    }

    /// Upkeep waits for a deadline that is already due, as it waits for a ready descriptor.
    func testUpkeepWaitsForDueDeadlines() throws {
        let loop = try EventLoop()
        var log: [String] = []
        var due = true
        loop.whenIdle({ due }) {
            log.append("upkeep")
            due = false
            loop.after(0.05) { loop.stop() }
        }
        loop.after(0) { log.append("deadline") }
        loop.after(10) { loop.stop() }  // a safety net only
        loop.run()
        XCTAssertEqual(log, ["deadline", "upkeep"])
    }

    /// After a turn with work the loop polls for `spinSeconds` (so a request that follows is
    /// read at once), then sleeps: its thread uses about the window's CPU time, not the run's.
    /// A deadline inside the window is kept: the spin ends at it, and the wait after the spin is
    /// measured from then (reviewed: it was measured from before, and the deadline came late by
    /// the time spun).
    func testTheLoopSpinsAfterWorkThenSleeps() throws {
        let loop = try EventLoop()
        loop.spinSeconds = 0.2
        var pair: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        defer { close(pair[0]); close(pair[1]) }
        try loop.watch(pair[0], .read) { _ in
            var byte: UInt8 = 0
            _ = read(pair[0], &byte, 1)
        }
        var b: UInt8 = 1
        _ = write(pair[1], &b, 1)
        var fired: Double?
        let started = WallClock.monotonic()
        loop.after(0.05) { fired = WallClock.monotonic() - started }
        loop.after(0.6) { loop.stop() }
        let before = Self.threadCPUSeconds()
        loop.run()
        let used = Self.threadCPUSeconds() - before
        XCTAssertGreaterThan(used, 0.02, "it polled after the read")
        XCTAssertLessThan(used, 0.4, "it slept once the window had passed (0.6 s of running)")
        XCTAssertLessThan(try XCTUnwrap(fired), 0.08, "the deadline inside the window was not put off (late, it comes at 0.1 s)")
    }

    private static func threadCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
