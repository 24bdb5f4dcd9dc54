import SeamSchema
import XCTest
@testable import SeamBroker

/// `ConnectionLifecycle` with no socket: each transition, and a seeded walk of random events
/// that checks what every connection must hold.
final class ConnectionLifecycleTests: XCTestCase {
    typealias Life = ConnectionLifecycle
    let nothingLeft = Life.Remaining(queuedBytes: 0, subscriptions: 0, owesResync: false, repliesOwed: 0, callOut: false, callWaiting: false)

    func testAnOpenConnectionWatchesForCallsAndForRoomOnlyWhileSomethingIsQueued() {
        var life = Life()
        XCTAssertTrue(life.interest.read)
        XCTAssertFalse(life.interest.write)
        XCTAssertEqual(life.handle(.written(drained: false)), [.watch], "something is left: watch for room")
        XCTAssertTrue(life.interest.write)
        XCTAssertEqual(life.handle(.written(drained: false)), [], "already watched: epoll is not touched again")
        XCTAssertEqual(life.handle(.written(drained: true)), [.watch, .afterDrain])
        XCTAssertFalse(life.interest.write)
        XCTAssertEqual(life.handle(.written(drained: true)), [.afterDrain])
    }

    func testCallsHeldBackByTheOutboxResumeOnTheNextTurnOnceItIsRead() {
        var life = Life()
        _ = life.handle(.written(drained: false))
        XCTAssertEqual(life.handle(.outboxPastPause), [])
        XCTAssertEqual(life.calls, .heldBack)
        XCTAssertEqual(life.handle(.written(drained: true)), [.watch, .resumeCallsNextTurn])
        XCTAssertEqual(life.calls, .resuming)
        // Handling them fills the outbox again: they wait again.
        XCTAssertEqual(life.handle(.outboxPastPause), [])
        XCTAssertEqual(life.handle(.resumed), [])
        XCTAssertEqual(life.calls, .heldBack, "held again while resuming stays held")
        XCTAssertEqual(life.handle(.written(drained: true)), [.resumeCallsNextTurn])
        XCTAssertEqual(life.handle(.resumed), [])
        XCTAssertEqual(life.calls, .flowing)
    }

    func testAHalfClosedConnectionStaysWhileSomethingIsLeftForIt() {
        var life = Life()
        XCTAssertFalse(life.isFinished(nothingLeft), "its input is open")
        XCTAssertEqual(life.handle(.inputEnded), [.watch, .closeIfFinished])
        XCTAssertFalse(life.interest.read)
        XCTAssertEqual(life.handle(.inputEnded), [], "end of file once")
        XCTAssertTrue(life.isFinished(nothingLeft))
        for kept in [Life.Remaining(queuedBytes: 10, subscriptions: 0, owesResync: false, repliesOwed: 0, callOut: false, callWaiting: false),
                     Life.Remaining(queuedBytes: 0, subscriptions: 1, owesResync: false, repliesOwed: 0, callOut: false, callWaiting: false),
                     Life.Remaining(queuedBytes: 0, subscriptions: 0, owesResync: true, repliesOwed: 0, callOut: false, callWaiting: false),
                     Life.Remaining(queuedBytes: 0, subscriptions: 0, owesResync: false, repliesOwed: 1, callOut: false, callWaiting: false),
                     Life.Remaining(queuedBytes: 0, subscriptions: 0, owesResync: false, repliesOwed: 0, callOut: true, callWaiting: false),
                     Life.Remaining(queuedBytes: 0, subscriptions: 0, owesResync: false, repliesOwed: 0, callOut: false, callWaiting: true)] {
            XCTAssertFalse(life.isFinished(kept), "\(kept)")
        }
        _ = life.handle(.outboxPastPause)
        XCTAssertFalse(life.isFinished(nothingLeft), "calls that wait keep it")
    }

    func testAClientThatHangsUpHasItsCallsHandledAndIsClosedUnlessACallIsOut() {
        var life = Life()
        _ = life.handle(.written(drained: false))
        _ = life.handle(.outboxPastPause)
        _ = life.handle(.inputEnded)
        XCTAssertEqual(life.handle(.hungUp), [.dropOutbox, .handleCalls, .closeUnlessCallOut])
        XCTAssertEqual(life.output, .discarding)
        XCTAssertEqual(life.calls, .flowing, "nobody will read: the held calls go now")
        XCTAssertFalse(life.interest.write)
        XCTAssertEqual(life.handle(.callOutAsItGoes), [.watch])
        XCTAssertEqual(life.input, .unwatched)
        XCTAssertFalse(life.interest.read)
        // Nobody reads: what is left for it no longer keeps it, only a call still out or waiting.
        XCTAssertTrue(life.isFinished(Life.Remaining(queuedBytes: 5, subscriptions: 2, owesResync: true, repliesOwed: 1, callOut: false,
                                                     callWaiting: false)))
        XCTAssertFalse(life.isFinished(Life.Remaining(queuedBytes: 0, subscriptions: 0, owesResync: false, repliesOwed: 0, callOut: true,
                                                      callWaiting: false)))
    }

    func testABrokenPipeDropsTheOutputAndResumesHeldCalls() {
        var held = Life()
        _ = held.handle(.written(drained: false))
        _ = held.handle(.outboxPastPause)
        XCTAssertEqual(held.handle(.peerGone), [.dropOutbox, .watch, .resumeCallsNextTurn])
        XCTAssertEqual(held.calls, .resuming)
        XCTAssertTrue(held.interest.read, "the calls it sent before it went are still read")
        XCTAssertEqual(held.handle(.outboxPastPause), [], "nothing is queued for a client that is gone")
        XCTAssertEqual(held.calls, .resuming)

        var flowing = Life()
        XCTAssertEqual(flowing.handle(.peerGone), [.dropOutbox, .watch, .closeIfFinished])
    }

    func testAClosedConnectionDoesNothingMore() {
        var life = Life()
        XCTAssertEqual(life.handle(.closed), [])
        XCTAssertTrue(life.isClosed)
        XCTAssertFalse(life.interest.read || life.interest.write)
        for e: Life.Event in [.outboxPastPause, .written(drained: true), .resumed, .inputEnded, .hungUp, .peerGone, .roleEnded, .callOutAsItGoes] {
            XCTAssertEqual(life.handle(e), [], "\(e)")
        }
        XCTAssertFalse(life.isFinished(nothingLeft), "closed once")
    }

    /// Any order of events: calls are never held once nobody reads, a held connection is resumed
    /// by the drain that ends its hold, room to write is watched exactly while the last flush
    /// left something, and an ended input never opens again.
    func testRandomEventsKeepTheLifecycleConsistent() {
        let events: [Life.Event] = [.outboxPastPause, .written(drained: true), .written(drained: false), .resumed, .inputEnded, .hungUp,
                                    .peerGone, .roleEnded, .callOutAsItGoes]
        for seed in UInt64(1)...3000 {
            var random = SplitMix64(seed: seed)
            var life = Life()
            var leftByLastFlush = false
            for step in 0..<20 {
                let event = events[Int(random.next() % UInt64(events.count))]
                let before = life
                let actions = life.handle(event)
                let context = "seed \(seed), step \(step), \(event) from \(before)"
                if case .written(let drained) = event, before.output == .delivering { leftByLastFlush = !drained }
                if life.output == .discarding { leftByLastFlush = false }
                XCTAssertEqual(life.watchesWrites, leftByLastFlush, context)
                if life.output == .discarding { XCTAssertNotEqual(life.calls, .heldBack, context) }
                if before.input != .open { XCTAssertNotEqual(life.input, .open, context) }
                if before.output == .discarding { XCTAssertEqual(life.output, .discarding, context) }
                if before.calls == .heldBack, case .written(true) = event {
                    XCTAssertTrue(actions.contains(.resumeCallsNextTurn), context)
                }
                if actions.contains(.resumeCallsNextTurn) { XCTAssertEqual(life.calls, .resuming, context) }
            }
        }
    }
}
