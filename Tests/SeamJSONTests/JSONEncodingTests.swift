import SeamJSON
import XCTest

/// The writer: compact output, minimal escapes, shortest doubles, and round trips.
final class JSONEncodingTests: XCTestCase {
    private func text(_ value: JSON) -> String { String(decoding: value.encoded(), as: UTF8.self) }

    func testCompactOutputInStoredOrder() {
        let value: JSON = ["z": [1, 2.5, true, nil, "x"], "a": ["m": .object([:]), "b": []], "id": -17]
        XCTAssertEqual(text(value), #"{"z":[1,2.5,true,null,"x"],"a":{"m":{},"b":[]},"id":-17}"#)
        XCTAssertEqual(value.description, text(value))
    }

    func testEncodeIntoAppends() {
        var bytes = Array("prefix ".utf8)
        JSON.array([1, "two"]).encode(into: &bytes)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), #"prefix [1,"two"]"#)
    }

    func testMinimalEscapes() {
        let value = JSON.string("\"\\\u{08}\u{0C}\n\r\t\u{0}\u{01}\u{1F} \u{7F}/\u{E9}\u{2028}\u{1F600}")
        XCTAssertEqual(text(value), "\"\\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f \u{7F}/\u{E9}\u{2028}\u{1F600}\"")
        XCTAssertEqual(text(["k\"ey\n": 1]), #"{"k\"ey\n":1}"#)
        let long = String(repeating: "abcdefgh", count: 10) + "\n" + String(repeating: "é", count: 10)
        XCTAssertEqual(try JSON.decode(JSON.string(long).encoded()), .string(long))
    }

    func testIntegers() {
        XCTAssertEqual(text(.integer(0)), "0")
        XCTAssertEqual(text(.integer(7)), "7")
        XCTAssertEqual(text(.integer(-7)), "-7")
        XCTAssertEqual(text(.integer(10)), "10")
        XCTAssertEqual(text(.integer(.max)), "9223372036854775807")
        XCTAssertEqual(text(.integer(.min)), "-9223372036854775808")
    }

    func testDoubles() {
        XCTAssertEqual(text(.double(1)), "1.0")
        XCTAssertEqual(text(.double(-0.0)), "-0.0")
        XCTAssertEqual(text(.double(0.1)), "0.1")
        XCTAssertEqual(text(.double(2.5)), "2.5")
        XCTAssertEqual(text(.double(123_456_789)), "123456789.0")
        XCTAssertEqual(text(.double(1e16)), "1e+16")
        XCTAssertEqual(text(.double(1e-7)), "1e-07")
        XCTAssertEqual(text(.double(.greatestFiniteMagnitude)), "1.7976931348623157e+308")
        XCTAssertEqual(text(.double(.leastNonzeroMagnitude)), "5e-324")
        XCTAssertEqual(text(.double(.nan)), "null")
        XCTAssertEqual(text(.double(.infinity)), "null")
        XCTAssertEqual(text(.double(-.infinity)), "null")
        XCTAssertEqual(text([.double(.nan)]), "[null]")
    }

    /// Every finite double reads back bit for bit, whichever path the parser takes for it.
    func testDoublesRoundTripExactly() throws {
        var random = SplitMix64(seed: 3)
        var samples: [Double] = [0, -0.0, 1, 0.1, 1e23, 5e-324, 9_007_199_254_740_993, 1.7976931348623157e308]
        for _ in 0..<20_000 {
            samples.append(Double(bitPattern: random.next()))
            samples.append(Double(Int64(bitPattern: random.next()) >> (random.next() % 64)) / 1000)
        }
        for sample in samples where sample.isFinite {
            let bytes = JSON.double(sample).encoded()
            let back = try JSON.decode(bytes)
            XCTAssertEqual(back.doubleValue?.bitPattern, sample.bitPattern, String(decoding: bytes, as: UTF8.self))
            guard case .double = back else { return XCTFail("\(sample) came back as \(back)") }
        }
    }

    /// Output well past the writer's initial capacity, in one string and in many small values.
    func testLargeOutput() throws {
        let text = String(repeating: "0123456789abcdef\u{E9}\n", count: 1000)
        XCTAssertEqual(try JSON.decode(JSON.string(text).encoded()), .string(text))
        let numbers = JSON.array((0..<5000).map { .integer(Int64($0) * 1_000_003 - 2_500_000_000) })
        XCTAssertEqual(try JSON.decode(numbers.encoded()), numbers)
        var appended = Array("x".utf8)
        numbers.encode(into: &appended)
        XCTAssertEqual(appended.count, numbers.encoded().count + 1)
    }

    func testRoundTrips() throws {
        let values: [JSON] = [
            nil, true, false, 0, -1, .integer(.min), .integer(.max), 0.5, -1e-300, "", "\u{0}", "é\u{1F600}",
            [], [[[]]], .object([:]), ["a": ["b": ["c": [1, 2, 3]]]],
            ["\u{E9}": 1, "e\u{301}": 2],
        ]
        for value in values {
            XCTAssertEqual(try JSON.decode(value.encoded()), value, value.description)
        }
    }
}
