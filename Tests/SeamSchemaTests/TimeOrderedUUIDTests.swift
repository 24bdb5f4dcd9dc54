import SeamSchema
import XCTest

/// UUIDv7 (RFC 9562) as rows inserted without a key get them: the layout, and an order that holds
/// whatever the clock does.
final class TimeOrderedUUIDTests: XCTestCase {
    func testTheLayoutIsVersionSevenWithTheMillisecondFirst() {
        var g = SplitMix64(seed: 7)
        var uuids = TimeOrderedUUIDs()
        let now: UInt64 = 1_796_040_000_123  // 2026-12-07
        let text = uuids.next(now: now, using: &g)
        XCTAssertTrue(UUIDText.isCanonical(text), text)
        let u = Array(text.utf8)
        XCTAssertEqual(u[14], UInt8(ascii: "7"), "version 7: \(text)")
        XCTAssertTrue([UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(u[19]), "variant 10: \(text)")
        XCTAssertEqual(TimeOrderedUUIDs.millisecond(of: text), now)
        XCTAssertEqual(String(text.prefix(13)), "01a22c53-827b", "the first 48 bits: the millisecond, big-endian")
        XCTAssertNil(TimeOrderedUUIDs.millisecond(of: UUIDText.random(using: &g)), "a version-4 UUID holds no time")
    }

    /// Every UUID is greater than the one before — as text and so as a key — within one
    /// millisecond (past the counter's room too), across milliseconds, and when the clock steps
    /// back; none repeats.
    func testEachIsGreaterThanTheOneBeforeWhateverTheClockDoes() {
        var g = SplitMix64(seed: 20261205)
        var uuids = TimeOrderedUUIDs()
        var clock: UInt64 = 1_700_000_000_000
        var last = ""
        var seen = Set<String>()
        for i in 0..<200_000 {
            switch g.next() % 100 {
            case 0..<60: break  // the same millisecond
            case 60..<95: clock += g.next() % 3
            case 95..<99: clock -= min(clock, g.next() % 5_000)  // a clock set back
            default: clock += g.next() % 100_000
            }
            let next = uuids.next(now: clock, using: &g)
            XCTAssertGreaterThan(next, last, "at \(i): \(next) after \(last)")
            XCTAssertTrue(seen.insert(next).inserted)
            last = next
            if XCTestCase.hasFailed(self) { return }
        }
    }

    /// Ten thousand in one millisecond: the counter borrows the next milliseconds, in order.
    func testAFloodWithinOneMillisecondBorrowsTheNext() {
        var g = SplitMix64(seed: 1)
        var uuids = TimeOrderedUUIDs()
        let all = (0..<10_000).map { _ in uuids.next(now: 5_000, using: &g) }
        XCTAssertEqual(all, all.sorted())
        let ms = all.compactMap(TimeOrderedUUIDs.millisecond(of:))
        XCTAssertEqual(ms.first, 5_000)
        XCTAssertLessThanOrEqual(ms.last ?? 0, 5_004, "4,096 a millisecond at the least")
    }
}

extension XCTestCase {
    static func hasFailed(_ test: XCTestCase) -> Bool { (test.testRun?.failureCount ?? 0) > 0 }
}
