@testable import SeamBroker
import SeamSchema
import XCTest

/// `RoleLifecycle`, a supervised role's life, event by event: no process, no socket, no clock
/// (times are given). Each transition the broker relies on, and a seeded walk of random events
/// that checks what must always hold.
final class RoleLifecycleTests: XCTestCase {
    private func started(oneShot: Bool = false, pid: Int32 = 100, at: Double = 0) -> RoleLifecycle {
        var life = RoleLifecycle(oneShot: oneShot)
        XCTAssertEqual(life.handle(.started(pid: pid, at: at), stopping: false), [])
        return life
    }

    func testACrashBacksOffAndTheBackoffGrowsUntilAHealthyRun() {
        var life = started()
        XCTAssertEqual(life.state, .running(pid: 100, since: 0))
        XCTAssertEqual(life.handle(.exited("exited 1", succeeded: false, at: 2), stopping: false), [.restart(after: 1)])
        XCTAssertEqual(life.state, .waiting(restartAt: 3))
        XCTAssertEqual(life.lastError, "exited 1")
        XCTAssertEqual(life.handle(.restartDue, stopping: false), [.start])
        XCTAssertEqual(life.restarts, 1)
        _ = life.handle(.started(pid: 101, at: 3), stopping: false)
        XCTAssertEqual(life.handle(.exited("killed by signal 9", succeeded: false, at: 4), stopping: false), [.restart(after: 2)])
        _ = life.handle(.restartDue, stopping: false)
        _ = life.handle(.started(pid: 102, at: 10), stopping: false)
        // A minute of running counts as healthy: the backoff starts over.
        XCTAssertEqual(life.handle(.exited("exited 1", succeeded: false, at: 10 + Backoff.healthy), stopping: false),
                       [.restart(after: Backoff.first)])
    }

    func testAStartThatFailsIsACrashAtOnceAndAOneShotOneEndsIt() {
        var life = RoleLifecycle(oneShot: false)
        XCTAssertEqual(life.handle(.failedToStart("program not found", at: 5), stopping: false), [.restart(after: 1)])
        XCTAssertEqual(life.state, .waiting(restartAt: 6))
        XCTAssertEqual(life.lastError, "program not found")

        var task = RoleLifecycle(oneShot: true)
        XCTAssertEqual(task.handle(.failedToStart("no socket", at: 0), stopping: false), [.oneShotEnded("no socket")])
        XCTAssertEqual(task.state, .stopped)
    }

    func testAOneShotTaskEndsOnceAndASuccessLeavesNoError() {
        var ok = started(oneShot: true)
        XCTAssertEqual(ok.handle(.exited("exited 0", succeeded: true, at: 1), stopping: false), [.oneShotEnded("exited 0")])
        XCTAssertEqual(ok.state, .stopped)
        XCTAssertNil(ok.lastError)
        XCTAssertEqual(ok.handle(.restartDue, stopping: false), [], "a one-shot task is never started again")

        var failed = started(oneShot: true)
        XCTAssertEqual(failed.handle(.exited("exited 2: no space", succeeded: false, at: 1), stopping: false),
                       [.oneShotEnded("exited 2: no space")])
        XCTAssertEqual(failed.lastError, "exited 2: no space")
    }

    func testAReloadTerminatesARunningRoleAndStartsItOnceItHasEndedWithNoBackoff() {
        var life = started()
        _ = life.handle(.exited("exited 1", succeeded: false, at: 1), stopping: false)
        _ = life.handle(.restartDue, stopping: false)
        _ = life.handle(.started(pid: 200, at: 2), stopping: false)
        XCTAssertEqual(life.handle(.reloadAsked, stopping: false), [.terminate(pid: 200)])
        XCTAssertTrue(life.reloading)
        XCTAssertNil(life.lastError, "a reload starts afresh")
        XCTAssertEqual(life.handle(.exited("exited 0", succeeded: true, at: 3), stopping: false), [.start])
        XCTAssertFalse(life.reloading)
        XCTAssertNil(life.lastError, "ending because it was asked to is no failure")
        XCTAssertEqual(life.restarts, 2)
        _ = life.handle(.started(pid: 201, at: 3), stopping: false)
        XCTAssertEqual(life.handle(.exited("exited 1", succeeded: false, at: 4), stopping: false), [.restart(after: Backoff.first)],
                       "the backoff started over")
    }

    func testAReloadOfAWaitingRoleCancelsItsRestartAndStartsItNow() {
        var life = RoleLifecycle(oneShot: false)
        _ = life.handle(.failedToStart("no program", at: 0), stopping: false)
        XCTAssertEqual(life.handle(.reloadAsked, stopping: false), [.cancelRestart, .start])
        XCTAssertEqual(life.state, .waiting(restartAt: nil))
        XCTAssertEqual(life.restarts, 1)
    }

    func testARetiredRoleStopsForGood() {
        var running = started()
        XCTAssertEqual(running.handle(.retireAsked, stopping: false), [.cancelRestart, .terminate(pid: 100)])
        XCTAssertEqual(running.handle(.exited("exited 0", succeeded: true, at: 1), stopping: false), [])
        XCTAssertEqual(running.state, .stopped)

        var waiting = RoleLifecycle(oneShot: false)
        _ = waiting.handle(.failedToStart("no program", at: 0), stopping: false)
        XCTAssertEqual(waiting.handle(.retireAsked, stopping: false), [.cancelRestart])
        XCTAssertEqual(waiting.state, .stopped)
        XCTAssertEqual(waiting.handle(.restartDue, stopping: false), [])
        XCTAssertTrue(waiting.retired)
    }

    func testNothingStartsAgainWhileSeamdStops() {
        var life = started()
        XCTAssertEqual(life.handle(.shutdown, stopping: true), [.cancelRestart])
        XCTAssertEqual(life.handle(.exited("killed by signal 15", succeeded: false, at: 1), stopping: true), [])
        XCTAssertEqual(life.state, .stopped)

        var reloading = started()
        _ = reloading.handle(.reloadAsked, stopping: false)
        XCTAssertEqual(reloading.handle(.exited("exited 0", succeeded: true, at: 1), stopping: true), [], "not even a reload")

        var failing = RoleLifecycle(oneShot: false)
        XCTAssertEqual(failing.handle(.failedToStart("no socket", at: 0), stopping: true), [])
        XCTAssertEqual(failing.state, .stopped)

        var waiting = RoleLifecycle(oneShot: false)
        _ = waiting.handle(.failedToStart("no program", at: 0), stopping: false)
        XCTAssertEqual(waiting.handle(.shutdown, stopping: true), [.cancelRestart])
        XCTAssertNil(waiting.restartAt)
        XCTAssertEqual(waiting.handle(.restartDue, stopping: true), [])
        _ = waiting.handle(.stoppedAtShutdown, stopping: true)
        XCTAssertEqual(waiting.state, .stopped)
    }

    /// Random events, as the broker feeds them (a `.start` answered at once by `started` or
    /// `failedToStart`, as `start(p)` spawns before it returns; an `exited` only while running;
    /// `restartDue` only while a restart is scheduled), with what must hold after each: a pid
    /// only while running, a restart time exactly while one is scheduled, no start for a retired
    /// role or while seamd stops, a backoff within its bounds, a retired role stopped once its
    /// process has ended, and a one-shot task never scheduled again.
    func testRandomEventsKeepTheLifecycleLegal() {
        let seed = UInt64(ProcessInfo.processInfo.environment["SEAM_TEST_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64(Int64.max))
        print("RoleLifecycleTests: seed \(seed) (replay: SEAM_TEST_SEED=\(seed))")
        var random = SplitMix64(seed: seed)
        var counts: [String: Int] = [:]
        for walk in 0..<300 {
            var life = RoleLifecycle(oneShot: random.next() % 4 == 0)
            var now = 0.0, nextPID: Int32 = 1, stopping = false, restartScheduled = false
            func spawn() -> RoleLifecycle.Event {
                nextPID += 1
                return random.next() % 5 == 0 ? .failedToStart("cannot", at: now) : .started(pid: nextPID, at: now)
            }
            var pending: [RoleLifecycle.Event] = [spawn()]
            for step in 0..<80 {
                now += Double(random.next() % 100) / 10
                let event: RoleLifecycle.Event
                if !pending.isEmpty {
                    event = pending.removeFirst()
                } else {
                    // Mostly what a role's life is made of; now and then a person's reload, a
                    // retirement or seamd stopping, after which little happens.
                    var candidates: [RoleLifecycle.Event] = []
                    if life.pid != nil { candidates.append(.exited("exited 1", succeeded: random.next() % 2 == 0, at: now)) }
                    if restartScheduled { candidates.append(.restartDue) }
                    let roll = random.next() % 100
                    if roll < 2 {
                        event = .retireAsked
                    } else if roll < 4, !stopping {
                        event = .shutdown
                    } else if roll < 14 || candidates.isEmpty {
                        event = .reloadAsked
                    } else {
                        event = candidates[Int(random.next() % UInt64(candidates.count))]
                    }
                }
                if case .shutdown = event { stopping = true }
                if case .restartDue = event { restartScheduled = false }
                let wasRetired = life.retired
                let actions = life.handle(event, stopping: stopping)
                counts["\(event)".prefix { $0 != "(" }.description, default: 0] += 1
                let context = "walk \(walk), step \(step): \(event) → \(actions), \(life.state)"
                for action in actions {
                    switch action {
                    case .start:
                        XCTAssertFalse(stopping, context)
                        XCTAssertFalse(life.retired, context)
                        pending.append(spawn())
                    case .restart(let delay):
                        XCTAssertTrue((Backoff.first...Backoff.limit).contains(delay), context)
                        XCTAssertFalse(life.oneShot, context)
                        XCTAssertFalse(restartScheduled, "a second restart scheduled: \(context)")
                        restartScheduled = true
                    case .cancelRestart:
                        restartScheduled = false
                    case .terminate(let pid):
                        XCTAssertEqual(pid, life.pid, context)
                    case .oneShotEnded:
                        XCTAssertTrue(life.oneShot, context)
                        XCTAssertEqual(life.state, .stopped, context)
                    }
                }
                switch life.state {
                case .running(let pid, _): XCTAssertEqual(life.pid, pid, context)
                case .waiting(let at): XCTAssertEqual(at != nil, restartScheduled, context)
                case .stopped: XCTAssertFalse(restartScheduled, context)
                }
                if wasRetired { XCTAssertTrue(life.retired, context) }
                if life.retired, life.pid == nil { XCTAssertEqual(life.state, .stopped, context) }
            }
        }
        print("RoleLifecycleTests: events \(counts.sorted { $0.key < $1.key })")
        XCTAssertGreaterThan(counts["restartDue"] ?? 0, 100)
        XCTAssertGreaterThan(counts["exited"] ?? 0, 100)
    }
}
