@testable import SeamBroker
import XCTest

/// `TurnQueue`: roles first, everyone else round-robin, each queued once.
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
}
