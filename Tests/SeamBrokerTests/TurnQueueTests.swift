@testable import SeamBroker
import XCTest

/// `TurnQueue`: roles first, everyone else by the loop time they have had, each queued once.
final class TurnQueueTests: XCTestCase {
    func testRolesGoFirstThenTheOthersInTheOrderTheyCame() {
        var q = TurnQueue()
        q.add(5, urgent: false)
        q.add(6, urgent: false)
        q.add(1, urgent: true)
        XCTAssertEqual([q.next(), q.next(), q.next(), q.next()], [1, 5, 6, nil])
    }

    func testAConnectionIsQueuedOnceHoweverOftenItIsAdded() {
        var q = TurnQueue()
        for _ in 0..<3 { q.add(7, urgent: false) }
        XCTAssertEqual(q.count, 1)
        XCTAssertEqual(q.next(), 7)
        XCTAssertTrue(q.isEmpty)
    }

    func testOneWithMoreCallsGoesBehindTheOthers() {
        var q = TurnQueue()
        q.add(1, urgent: false)
        q.add(2, urgent: false)
        let first = q.next()!
        q.add(first, urgent: false)  // more calls left after its turn
        XCTAssertEqual([q.next(), q.next()], [2, 1])
    }

    func testARemovedConnectionHasNoTurn() {
        var q = TurnQueue()
        q.add(1, urgent: false)
        q.add(2, urgent: true)
        q.remove(1)
        q.remove(2)
        q.remove(3)
        XCTAssertNil(q.next())
        XCTAssertEqual(q.count, 0)
    }

    /// A client whose call took 45 ms waits until one whose calls take 2 ms has had as much.
    func testALongTurnWaitsUntilTheOthersHaveHadAsMuch() {
        var q = TurnQueue()
        q.add(1, urgent: false)  // big saves
        q.add(2, urgent: false)  // short calls, many of them
        XCTAssertEqual(q.next(), 1)
        q.charge(1, seconds: 0.045)
        q.add(1, urgent: false)
        var shortTurns = 0
        while let next = q.next(), next == 2 {
            shortTurns += 1
            q.charge(2, seconds: 0.002)
            q.add(2, urgent: false)
        }
        XCTAssertEqual(shortTurns, 23, "2 ms turns until it has had more than 45 ms")
    }

    /// Time a connection spent with nothing to do is no credit: it comes back level with the
    /// least-served of those waiting, not with what it would have had.
    func testTimeIdleIsNoCredit() {
        var q = TurnQueue()
        q.add(1, urgent: false)
        XCTAssertEqual(q.next(), 1)
        q.charge(1, seconds: 1)
        q.add(1, urgent: false)
        XCTAssertEqual(q.next(), 1)
        q.charge(1, seconds: 1)
        q.add(1, urgent: false)
        q.add(2, urgent: false)  // idle until now: starts at 1 s, not 0
        XCTAssertEqual(q.next(), 2)
        q.charge(2, seconds: 1.5)
        q.add(2, urgent: false)
        XCTAssertEqual(q.next(), 1, "2 has had 2.5 s by then, 1 has had 2 s")
    }

    /// Roles are not counted: they go first whatever their turns took.
    func testRolesGoFirstWhateverTheyTook() {
        var q = TurnQueue()
        q.add(1, urgent: true)
        q.add(2, urgent: false)
        XCTAssertEqual(q.next(), 1)
        q.charge(1, seconds: 10)
        q.add(1, urgent: true)
        XCTAssertEqual([q.next(), q.next()], [1, 2])
    }
}
