import SeamSchema
import XCTest

/// Whole seconds and a decimal fraction as the nearest double: checked against Swift's own
/// correctly rounded reading of the same value written as one integer and an exponent.
final class DecimalSecondsTests: XCTestCase {
    func testTheNearestDoubleOfTheExactValue() {
        var rng = SplitMix64(seed: 20261201)
        for _ in 0..<20_000 {
            let whole = Int64(rng.next() % 2_000_001) - 1_000_000
            let n = Int(rng.next() % 9) + 1
            let fraction = (0..<n).map { _ in UInt8(ascii: "0") + UInt8(rng.next() % 10) }
            let f = Int64(String(decoding: fraction, as: UTF8.self))!
            var scale: Int64 = 1
            for _ in 0..<n { scale *= 10 }
            let expected = Double("\(whole * scale + f)e-\(n)")!
            XCTAssertEqual(DecimalSeconds.value(whole: whole, fraction: fraction), expected,
                           "\(whole) + 0.\(String(decoding: fraction, as: UTF8.self))")
        }
        XCTAssertEqual(DecimalSeconds.value(whole: -2, fraction: Array("500".utf8)), -1.5)
        XCTAssertEqual(DecimalSeconds.value(whole: 7, fraction: [UInt8]()), 7)
        XCTAssertEqual(DecimalSeconds.value(whole: -7, fraction: Array("000".utf8)), -7)
    }
}
