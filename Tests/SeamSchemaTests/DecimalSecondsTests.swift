@testable import SeamSchema
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

    /// A date at the microsecond already is its own canonical form, and any date's canonical
    /// form is the nearest double of its shortest decimal rounded to six places (half up).
    func testCanonicalDatesAreTheMicrosecondsOfTheShortestDecimal() {
        var rng = SplitMix64(seed: 20261205)
        for _ in 0..<20_000 {
            let micro = Int64(rng.next() % 4_000_000_000_000_000)
            let exact = Double(micro) / 1_000_000
            XCTAssertEqual(DecimalSeconds.canonicalDate(exact), exact, "\(exact)")
            let any = Double(rng.next() % 4_000_000_000) + Double(rng.next() % 1_000_000_000) / 1e9 + 1e-10 * Double(rng.next() % 7)
            let text = "\(any)"
            guard !text.contains("e"), let dot = text.firstIndex(of: ".") else { continue }
            var digits = Array(text[text.index(after: dot)...].utf8)
            var whole = Int64(text[..<dot])!
            if digits.count > 6 {
                var up = digits[6] >= UInt8(ascii: "5")
                digits = Array(digits.prefix(6))
                var i = 5
                while up && i >= 0 {
                    if digits[i] == UInt8(ascii: "9") { digits[i] = UInt8(ascii: "0"); i -= 1 } else { digits[i] += 1; up = false }
                }
                if up { whole += 1 }
            }
            let expected = Double("\(whole).\(String(decoding: digits, as: UTF8.self))")!
            XCTAssertEqual(DecimalSeconds.canonicalDate(any), expected, text)
            XCTAssertEqual(DecimalSeconds.canonicalDate(expected), expected, "idempotent: \(text)")
        }
    }

    /// The quotient of two exact doubles (the fast reading) gives the very double the reading of
    /// the decimal text gives, for dates of any era, fractions of any length, and wholes on
    /// either side of where the integer stops being exact (where the text is read instead).
    func testTheQuotientAgreesWithTheTextEverywhere() {
        var rng = SplitMix64(seed: 20261207)
        let wholes: [ClosedRange<Int64>] = [-1_000...1_000, 1_600_000_000...1_900_000_000, -62_135_596_800...253_402_300_799,
                                            9_007_199_254...9_007_199_255, -(1 << 53) - 2 ... -(1 << 53) + 2, (1 << 53) - 2 ... (1 << 53) + 2]
        for _ in 0..<60_000 {
            let range = wholes[Int(rng.next() % UInt64(wholes.count))]
            let whole = range.lowerBound + Int64(rng.next() % UInt64(range.upperBound - range.lowerBound + 1))
            let n = Int(rng.next() % 26)
            // Runs of nines and zeros as often as any digit: the carries and the trailing zeros.
            let fraction = (0..<n).map { _ -> UInt8 in
                switch rng.next() % 4 {
                case 0: UInt8(ascii: "9")
                case 1: UInt8(ascii: "0")
                default: UInt8(ascii: "0") + UInt8(rng.next() % 10)
                }
            }
            let text = "\(whole) + 0.\(String(decoding: fraction, as: UTF8.self))"
            XCTAssertEqual(DecimalSeconds.value(whole: whole, fraction: fraction).bitPattern,
                           DecimalSeconds.valueByText(whole: whole, fraction: fraction).bitPattern, text)
            XCTAssertEqual(DecimalSeconds.microseconds(whole: whole, fraction: fraction).bitPattern,
                           DecimalSeconds.microsecondsByText(whole: whole, fraction: fraction).bitPattern, "microseconds of " + text)
        }
        XCTAssertEqual(DecimalSeconds.microseconds(whole: 4, fraction: Array("9999995".utf8)), 5)
        XCTAssertEqual(DecimalSeconds.microseconds(whole: -5, fraction: Array("9999995".utf8)), -4)
        XCTAssertTrue(DecimalSeconds.value(whole: 1, fraction: Array("2x".utf8)).isNaN, "what is not a digit is still no value")
    }
}
