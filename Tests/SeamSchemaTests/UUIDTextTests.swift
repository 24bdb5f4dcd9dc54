import SeamSchema
import XCTest

/// A UUID's canonical text (lowercase 8-4-4-4-12) and its 128 bits: every UUID's text reads back
/// as its bytes, and a text one byte off canonical — a capital, a misplaced hyphen, a byte
/// outside hex, one too few or too many — reads as no UUID.
final class UUIDTextTests: XCTestCase {
    func testTheBitsAreTheBytesAndOnlyCanonicalTextHasThem() {
        var g = SplitMix64(seed: 20261207)
        for _ in 0..<20_000 {
            let bytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            let text = UUIDText.text(bytes)
            let bits = UUIDText.bits(text)
            XCTAssertTrue(UUIDText.isCanonical(text), text)
            XCTAssertEqual(bits?.high, bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }, text)
            XCTAssertEqual(bits?.low, bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }, text)

            var spoilt = Array(text.utf8)
            let at = Int(g.next() % 36)
            switch g.next() % 4 {
            case 0:  // a byte no canonical UUID holds there
                let hyphen = [8, 13, 18, 23].contains(at)
                let choices = Array("ABCDEFGg-x /{0".utf8).filter { hyphen ? $0 != UInt8(ascii: "-") : !"0123456789abcdef".utf8.contains($0) }
                spoilt[at] = choices[Int(g.next() % UInt64(choices.count))]
            case 1: spoilt.remove(at: at)
            case 2: spoilt.insert(UInt8(ascii: "0"), at: at)
            default: spoilt += Array(" ".utf8)
            }
            let bad = String(decoding: spoilt, as: UTF8.self)
            XCTAssertNil(UUIDText.bits(bad), bad)
            XCTAssertFalse(UUIDText.isCanonical(bad), bad)
        }
        XCTAssertNil(UUIDText.bits(""))
        XCTAssertNil(UUIDText.bits("0000000000000000000000000000000000é"), "36 bytes, not 36 hex digits and hyphens")
        XCTAssertEqual(UUIDText.bits("00000000-0000-0000-0000-000000000001"), UUIDBits(high: 0, low: 1))
        XCTAssertEqual(UUIDText.bits("ffffffff-ffff-ffff-ffff-ffffffffffff"), UUIDBits(high: .max, low: .max))
    }
}
