import Synchronization
import XCTest
@testable import SeamSync

/// The import's read-ahead thread (`Prefetcher`): batches in order, one ahead at most, the end
/// and the producer's error passed on, and a stop that returns only once the producer has.
final class PrefetcherTests: XCTestCase {
    struct Failure: Error, Equatable { var n: Int }

    /// What a producer has done, read from the test's thread.
    final class Produced: @unchecked Sendable {
        let count = Atomic<Int>(0)
        let running = Atomic<Bool>(false)
        let taken = Atomic<Int>(0)
        let mostAhead = Atomic<Int>(0)
        /// Signalled as the producer enters each batch.
        let entered = DispatchSemaphore(value: 0)
        /// What the producer waits for inside a batch, where a test holds it.
        let gate = DispatchSemaphore(value: 0)
    }

    func testBatchesInOrderThenTheEnd() throws {
        let produced = Produced()
        let prefetcher = try Prefetcher<Int> {
            let n = produced.count.add(1, ordering: .relaxed).newValue
            return n <= 5 ? n : nil
        }
        defer { prefetcher.stop() }
        var taken: [Int] = []
        while let n = try prefetcher.next() { taken.append(n) }
        XCTAssertEqual(taken, [1, 2, 3, 4, 5])
        XCTAssertNil(try prefetcher.next(), "after the end, the end again")
        XCTAssertEqual(produced.count.load(ordering: .relaxed), 6, "nothing produced past the end")
    }

    func testAtMostOneAheadOfTheTaker() throws {
        let produced = Produced()
        let prefetcher = try Prefetcher<Int> {
            // Starting batch n with `taken` taken: n - taken - 1 are produced and waiting.
            let n = produced.count.add(1, ordering: .relaxed).newValue
            produced.mostAhead.max(n - produced.taken.load(ordering: .acquiring) - 1, ordering: .relaxed)
            produced.entered.signal()
            return n <= 200 ? n : nil
        }
        defer { prefetcher.stop() }
        produced.entered.wait()  // batch 1 begun
        // A taker slower than its producer: it is done with batch n only once the producer has
        // begun the next one, which then finds one batch (n) produced and not yet done with.
        while let n = try prefetcher.next() {
            produced.entered.wait()
            produced.taken.store(n, ordering: .releasing)
        }
        XCTAssertEqual(produced.mostAhead.load(ordering: .relaxed), 1, "one batch waiting while the next is produced, never two")
    }

    func testTheProducersErrorReachesTheTaker() throws {
        let produced = Produced()
        let prefetcher = try Prefetcher<Int> {
            let n = produced.count.add(1, ordering: .relaxed).newValue
            if n == 3 { throw Failure(n: n) }
            return n
        }
        defer { prefetcher.stop() }
        XCTAssertEqual(try prefetcher.next(), 1)
        XCTAssertEqual(try prefetcher.next(), 2)
        XCTAssertThrowsError(try prefetcher.next()) { XCTAssertEqual($0 as? Failure, Failure(n: 3)) }
        XCTAssertNil(try prefetcher.next())
        XCTAssertEqual(produced.count.load(ordering: .relaxed), 3, "nothing produced after the error")
    }

    /// A stop while the producer is inside a batch (a FETCH the server takes its time over)
    /// returns after that batch, never during it: the connection is the caller's again.
    func testStopWaitsForTheBatchInProgress() throws {
        let produced = Produced()
        let prefetcher = try Prefetcher<Int> {
            produced.running.store(true, ordering: .releasing)
            produced.entered.signal()
            produced.gate.wait()  // the server taking its time
            produced.running.store(false, ordering: .releasing)
            return produced.count.add(1, ordering: .relaxed).newValue
        }
        produced.gate.signal()
        XCTAssertEqual(try prefetcher.next(), 1)
        produced.entered.wait()
        produced.entered.wait()  // inside batch 2, held at the gate
        // The batch is let go while the stop waits (or before it begins: either way, the stop
        // returns only once the producer has left the batch).
        DispatchQueue.global().async { produced.gate.signal() }
        prefetcher.stop()
        XCTAssertFalse(produced.running.load(ordering: .acquiring))
        XCTAssertEqual(produced.count.load(ordering: .relaxed), 2)
        prefetcher.stop()  // a second stop does nothing
    }

    func testStopBeforeAnythingWasTaken() throws {
        let prefetcher = try Prefetcher<Int> { 1 }
        prefetcher.stop()
    }
}
