import SeamJSON
import SeamProtocol
import XCTest

/// A diff whose indexes do not fit the rows a client holds is a `Mismatch`, never a crash: the
/// indexes come from another process.
final class LiveResultTests: XCTestCase {
    func testIndexesOutsideTheRowsAreAMismatch() throws {
        var live = LiveResult()
        try live.apply(SubscriptionUpdate(["subscription": 1, "kind": "result", "sequence": 1,
                                           "rows": [["uuid": "a"], ["uuid": "b"]]]))
        let row: JSON = ["uuid": "c"]
        let diffs: [(String, JSON)] = [
            ("deleted", [["uuid": "a", "index": -1]]),
            ("deleted", [["uuid": "a", "index": 2]]),
            ("inserted", [["uuid": "c", "index": -1, "row": row]]),
            ("inserted", [["uuid": "c", "index": 3, "row": row]]),
            ("updated", [["uuid": "a", "index": -1, "changedKeys": [], "row": ["uuid": "a"]]]),
            ("moved", [["uuid": "a", "from": -1, "to": 0]]),
            ("moved", [["uuid": "a", "from": 0, "to": -2]]),
        ]
        for (key, changes) in diffs {
            var copy = live
            let diff = try SubscriptionUpdate(["subscription": 1, "kind": "diff", "sequence": 2, .init(key): changes])
            XCTAssertThrowsError(try copy.apply(diff), "\(key): \(changes)")
        }
        // A fitting diff still applies.
        try live.apply(SubscriptionUpdate(["subscription": 1, "kind": "diff", "sequence": 2,
                                           "moved": [["uuid": "a", "from": 0, "to": 1]], "inserted": [["uuid": "c", "index": 0, "row": row]]]))
        XCTAssertEqual(live.rows.map { $0["uuid"]?.stringValue }, ["c", "a", "b"])
    }

    /// A diff edits a result it follows: before any result, or older than the result held, it
    /// has nothing to edit and is a `Mismatch` (it was applied to the empty rows, or twice).
    func testADiffBeforeAnyResultOrOlderThanItIsAMismatch() throws {
        let insert: JSON = [["uuid": "c", "index": 0, "row": ["uuid": "c"]]]
        var live = LiveResult()
        XCTAssertThrowsError(try live.apply(SubscriptionUpdate(["subscription": 1, "kind": "diff", "sequence": 3, "inserted": insert])))
        XCTAssertNil(live.sequence)
        XCTAssertEqual(live.rows, [])
        try live.apply(SubscriptionUpdate(["subscription": 1, "kind": "result", "sequence": 5, "rows": [["uuid": "a"]]]))
        for sequence: Int64 in [4, 5] {
            XCTAssertThrowsError(try live.apply(SubscriptionUpdate(["subscription": 1, "kind": "diff", "sequence": .integer(sequence),
                                                                    "inserted": insert])), "sequence \(sequence)")
        }
        XCTAssertEqual(live.rows.map { $0["uuid"]?.stringValue }, ["a"])
        // A resume with nothing since: an empty diff at the sequence held.
        try live.apply(SubscriptionUpdate(["subscription": 1, "kind": "diff", "sequence": 5]))
        try live.apply(SubscriptionUpdate(["subscription": 1, "kind": "diff", "sequence": 6, "inserted": insert]))
        XCTAssertEqual(live.rows.map { $0["uuid"]?.stringValue }, ["c", "a"])
        XCTAssertEqual(live.sequence, 6)
    }
}
