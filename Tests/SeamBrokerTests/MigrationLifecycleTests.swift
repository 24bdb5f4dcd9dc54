import SeamSchema
import SeamStore
import XCTest
@testable import SeamBroker

/// `MigrationLifecycle` with no files and no worker: each transition, and a seeded walk of
/// random events that checks what every run must hold.
final class MigrationLifecycleTests: XCTestCase {
    func progress(_ phase: MigrationProgress.Phase, rows: Int = 10) -> MigrationProgress {
        MigrationProgress(phase: phase, configuration: "Cloud", rowsDone: rows, rowsTotal: 100)
    }

    func testReportsMoveTheProgressWhileTheWorkerBuilds() {
        var life = MigrationLifecycle(firstStore: "Local")
        XCTAssertEqual(life.progress.configuration, "Local")
        XCTAssertEqual(life.progress.phase, .preparing)
        XCTAssertEqual(life.handle(.report(progress(.copying, rows: 40))), [.progressed])
        XCTAssertEqual(life.progress.rowsDone, 40)
        XCTAssertEqual(life.state, .building)
        XCTAssertTrue(life.takesWorkerCalls)
    }

    func testFinishedCopiesAreVerifiedThenSwappedAndTheWorkerToldTheBackups() {
        var life = MigrationLifecycle(firstStore: "Cloud")
        XCTAssertEqual(life.handle(.finished), [.verifyCopies])
        XCTAssertEqual(life.state, .verifying)
        XCTAssertEqual(life.progress.phase, .verifying)
        XCTAssertFalse(life.takesWorkerCalls, "once it said Finished, its calls are refused")
        XCTAssertEqual(life.handle(.verified(failure: nil)), [.swap])
        XCTAssertEqual(life.progress.phase, .swapping)
        XCTAssertEqual(life.handle(.swapped(backups: ["b/Cloud.sqlite"])),
                       [.end(.done(backups: ["b/Cloud.sqlite"])), .answerWorker(.success(["b/Cloud.sqlite"]))])
        XCTAssertEqual(life.state, .ended)
        XCTAssertEqual(life.progress.phase, .done)
        XCTAssertEqual(life.progress.fraction, 1)
    }

    func testACopyThatDoesNotVerifyEndsTheRunAndTheWorkerHearsWhy() {
        var life = MigrationLifecycle(firstStore: "Cloud")
        _ = life.handle(.finished)
        let actions = life.handle(.verified(failure: "row count differs"))
        let message = "the worker's copy was refused: row count differs"
        XCTAssertEqual(actions, [.end(.failed(message)), .answerWorker(.failure(.init(message: message)))])
        XCTAssertEqual(life.state, .ended)
    }

    func testASwapThatCannotBeginOrStopsPartWayIsSaidSo() {
        var refused = MigrationLifecycle(firstStore: "Cloud")
        _ = refused.handle(.finished)
        _ = refused.handle(.verified(failure: nil))
        guard case .end(.failed(let message))? = refused.handle(.swapRefused("EACCES")).first else { return XCTFail() }
        XCTAssertTrue(message.contains("EACCES") && message.contains("served as they were"), message)

        var stopped = MigrationLifecycle(firstStore: "Cloud")
        _ = stopped.handle(.finished)
        _ = stopped.handle(.verified(failure: nil))
        let actions = stopped.handle(.swapStoppedPartWay("EIO"))
        guard case .end(.unfinishedSwap(let why))? = actions.first, case .answerWorker(.failure)? = actions.last else {
            return XCTFail("\(actions)")
        }
        XCTAssertTrue(why.contains("EIO") && why.contains("seam migrate"), why)
    }

    func testAWorkerThatFailsOrDiesBeforeItFinishedEndsTheRun() {
        var failed = MigrationLifecycle(firstStore: "Cloud")
        XCTAssertEqual(failed.handle(.failed("disk full")), [.end(.failed("seam-migrate failed: disk full"))])
        XCTAssertEqual(failed.handle(.workerEnded("exit status 1")), [], "its exit after Failed is no second failure")

        var silent = MigrationLifecycle(firstStore: "Cloud")
        XCTAssertEqual(silent.handle(.failed("")), [.end(.failed("seam-migrate failed: (it gave no reason)"))])

        var died = MigrationLifecycle(firstStore: "Cloud")
        XCTAssertEqual(died.handle(.workerEnded("killed by signal 9")), [.end(.failed("seam-migrate ended before it finished: killed by signal 9"))])
    }

    func testAWorkerThatEndsAfterFinishedChangesNothing() {
        var life = MigrationLifecycle(firstStore: "Cloud")
        _ = life.handle(.finished)
        XCTAssertEqual(life.handle(.workerEnded("exit status 0")), [])
        XCTAssertEqual(life.state, .verifying)
        XCTAssertEqual(life.handle(.report(progress(.copying))), [], "a report after Finished is out of order")
        XCTAssertEqual(life.progress.phase, .verifying)
    }

    /// Any order of events: a run ends at most once, answers the worker at most once and only
    /// after it said Finished, swaps only what verified, and says nothing once ended.
    func testRandomEventsEndARunOnceAndAnswerTheWorkerOnce() {
        for seed in UInt64(1)...2000 {
            var random = SplitMix64(seed: seed)
            var life = MigrationLifecycle(firstStore: "Cloud")
            var ends = 0, answers = 0, finished = false, verified = false
            for _ in 0..<12 {
                let events: [MigrationLifecycle.Event] = [
                    .report(progress(.copying)), .finished, .failed("x"), .workerEnded("exit"), .verified(failure: nil),
                    .verified(failure: "bad"), .swapped(backups: []), .swapRefused("no"), .swapStoppedPartWay("io"),
                ]
                let event = events[Int(random.next() % UInt64(events.count))]
                let wasEnded = life.state == .ended
                if case .finished = event, life.state == .building { finished = true }
                if case .verified(nil) = event, life.state == .verifying { verified = true }
                let actions = life.handle(event)
                if wasEnded { XCTAssertEqual(actions, [], "seed \(seed): an ended run does nothing") }
                for a in actions {
                    switch a {
                    case .end: ends += 1
                    case .answerWorker: answers += 1; XCTAssertTrue(finished, "seed \(seed): answered a Finished never said")
                    case .swap: XCTAssertTrue(verified, "seed \(seed): swapped what did not verify")
                    default: break
                    }
                }
            }
            XCTAssertLessThanOrEqual(ends, 1, "seed \(seed)")
            XCTAssertLessThanOrEqual(answers, 1, "seed \(seed)")
            if life.state == .ended { XCTAssertEqual(ends, 1, "seed \(seed)") }
            if finished, life.state == .ended { XCTAssertEqual(answers, 1, "seed \(seed): a Finished worker is always answered") }
        }
    }
}
