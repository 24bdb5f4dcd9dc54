@testable import SeamBroker
import SeamSchema
import XCTest

/// `SubscriptionFlow` with no socket: every transition, and a seeded walk that checks what a
/// subscriber would hold against the commits made.
final class SubscriptionFlowTests: XCTestCase {
    private func frame(_ n: Int64, size: Int = 10) -> [UInt8] { [UInt8](repeating: UInt8(n % 200), count: size) }

    private func sent(_ actions: [SubscriptionFlow.Action]) -> [Int64] {
        actions.compactMap { if case .send(_, let s) = $0 { return s } else { return nil } }
    }

    func testALiveSubscriptionIsSentEachDiffWhileItsBacklogIsWithinBudget() {
        var flow = SubscriptionFlow()
        XCTAssertEqual(sent(flow.diff({ self.frame(1) }, sequence: 1, lastSent: 0, queued: 0, budget: 100)), [1])
        XCTAssertEqual(sent(flow.diff({ self.frame(2) }, sequence: 2, lastSent: 1, queued: 100, budget: 100)), [2])
        XCTAssertEqual(flow.state, .live)
    }

    func testPastItsBudgetItFallsBehindAndIsSentNothingUntilItDrains() {
        var flow = SubscriptionFlow()
        XCTAssertEqual(flow.diff({ self.frame(5) }, sequence: 5, lastSent: 4, queued: 101, budget: 100), [])
        XCTAssertEqual(flow.state, .behind(from: 4))
        XCTAssertEqual(flow.missedFrom, 4)
        var made = false
        XCTAssertEqual(flow.diff({ made = true; return self.frame(6) }, sequence: 6, lastSent: 4, queued: 0, budget: 100), [])
        XCTAssertFalse(made, "no frame is made for a subscription that is behind")
        XCTAssertEqual(flow.drained(now: 6), [.build(from: 4)])
        XCTAssertEqual(flow.state, .resyncing(from: 4, at: 6))
        XCTAssertEqual(flow.drained(now: 7), [], "one resync at a time")
    }

    func testAFrameLargerThanTheRoomLeftIsNotQueued() {
        var flow = SubscriptionFlow()
        XCTAssertEqual(flow.diff({ self.frame(3, size: 50) }, sequence: 3, lastSent: 2, queued: 10, budget: 100, room: 40), [])
        XCTAssertEqual(flow.state, .behind(from: 2))
    }

    func testDiffsWhileAResyncIsBuiltAreHeldAndFollowItInOrder() {
        var flow = SubscriptionFlow()
        _ = flow.diff({ self.frame(2) }, sequence: 2, lastSent: 1, queued: 500, budget: 100)
        _ = flow.drained(now: 3)
        for n in Int64(3)...6 { XCTAssertEqual(flow.diff({ self.frame(n) }, sequence: n, lastSent: 1, queued: 0, budget: 100), []) }
        // Built as of 4 (a commit after the moment asked for reached the snapshot): 5 and 6 follow.
        let out = flow.built([1, 2, 3], sequence: 4)
        XCTAssertEqual(sent(out), [4, 5, 6])
        XCTAssertEqual(flow.state, .live)
        XCTAssertEqual(flow.held, [])
    }

    func testHeldDiffsPastTheBudgetLeaveItBehindAfterTheResync() {
        var flow = SubscriptionFlow()
        _ = flow.diff({ self.frame(2) }, sequence: 2, lastSent: 1, queued: 500, budget: 100)
        _ = flow.drained(now: 2)
        for n in Int64(3)...20 { _ = flow.diff({ self.frame(n, size: 10) }, sequence: n, lastSent: 1, queued: 0, budget: 100) }
        XCTAssertTrue(flow.heldOverflowed)
        XCTAssertEqual(sent(flow.built([9], sequence: 2)), [2], "the resync alone")
        XCTAssertEqual(flow.state, .behind(from: 2))
        XCTAssertEqual(flow.drained(now: 20), [.build(from: 2)])
    }

    func testAFirstResultIsFollowedByTheDiffsHeldWhileItWasBuilt() {
        var flow = SubscriptionFlow(loadingAt: 10)
        XCTAssertEqual(flow.missedFrom, nil)
        XCTAssertEqual(flow.diff({ self.frame(10) }, sequence: 10, lastSent: 10, queued: 0, budget: 100), [], "not after its moment")
        _ = flow.diff({ self.frame(11) }, sequence: 11, lastSent: 10, queued: 0, budget: 100)
        XCTAssertEqual(sent(flow.built([0], sequence: 10)), [10, 11])
        XCTAssertEqual(flow.state, .live)
    }

    func testAFailedResyncIsTriedAgainAtTheNextDrain() {
        var flow = SubscriptionFlow()
        _ = flow.diff({ self.frame(2) }, sequence: 2, lastSent: 1, queued: 500, budget: 100)
        _ = flow.drained(now: 2)
        flow.resyncFailed()
        XCTAssertEqual(flow.state, .behind(from: 1))
        XCTAssertEqual(flow.drained(now: 3), [.build(from: 1)])
    }

    func testFallingBehindWhileAResultIsBuiltSendsItThenResyncs() {
        var flow = SubscriptionFlow(loadingAt: 1)
        flow.fallBehind(from: 1)
        XCTAssertEqual(sent(flow.built([0], sequence: 1)), [1])
        XCTAssertEqual(flow.state, .behind(from: 1))
        var live = SubscriptionFlow()
        live.fallBehind(from: 7)
        XCTAssertEqual(live.state, .behind(from: 7))
    }

    /// Events at random (commits of random sizes, reads, results built at random later moments):
    /// what the subscriber is sent always applies in order — each frame's sequence above the
    /// last — and after a final drain and build it stands at the last commit.
    func testARandomWalkNeverSendsOutOfOrderAndEndsCurrent() {
        for seed in UInt64(1)...200 {
            var rng = SplitMix64(seed: seed)
            var flow = SubscriptionFlow(loadingAt: 0)
            var sequence: Int64 = 0
            var lastSent: Int64 = -1
            var queued = 0
            var pendingBuild: Int64? = 0  // the moment a result is being built at
            func apply(_ actions: [SubscriptionFlow.Action]) {
                for case .send(let f, let s) in actions {
                    XCTAssertGreaterThan(s, lastSent, "seed \(seed): in order")
                    lastSent = s
                    queued += f.count
                }
            }
            for _ in 0..<300 {
                switch rng.next() % 4 {
                case 0, 1:
                    sequence += 1
                    let n = sequence
                    apply(flow.diff({ self.frame(n, size: Int(rng.next() % 40) + 1) }, sequence: n, lastSent: max(lastSent, 0),
                                    queued: queued, budget: 100))
                case 2:
                    queued = 0
                    if !flow.drained(now: sequence).isEmpty { pendingBuild = sequence }
                default:
                    if let at = pendingBuild {
                        apply(flow.built([1], sequence: at + Int64(rng.next() % UInt64(sequence - at + 1))))
                        pendingBuild = nil
                    }
                }
            }
            if let at = pendingBuild { apply(flow.built([1], sequence: at)) }
            queued = 0
            if !flow.drained(now: sequence).isEmpty { apply(flow.built([1], sequence: sequence)) }
            XCTAssertEqual(flow.state, .live, "seed \(seed)")
            XCTAssertEqual(lastSent, sequence, "seed \(seed): current at the end")
        }
    }
}
