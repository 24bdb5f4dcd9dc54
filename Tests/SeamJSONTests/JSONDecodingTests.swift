import SeamJSON
import XCTest

/// The parser: what it accepts, what it refuses, and where it says the problem is.
final class JSONDecodingTests: XCTestCase {
    // MARK: - Helpers

    private func decode(
        _ text: String, limits: JSONLimits = .default, file: StaticString = #filePath, line: UInt = #line
    ) -> JSON? {
        do { return try JSON.decode(text, limits: limits) } catch {
            XCTFail("\(text.debugDescription): \(error)", file: file, line: line)
            return nil
        }
    }

    private func assertRefused(
        _ bytes: [UInt8], _ kind: JSONError.Kind, at offset: Int, limits: JSONLimits = .default,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let value = try JSON.decode(bytes, limits: limits)
            XCTFail(
                "\(String(decoding: bytes, as: UTF8.self).debugDescription) decoded as \(value)", file: file, line: line
            )
        } catch {
            XCTAssertEqual(
                error.kind, kind, "\(String(decoding: bytes, as: UTF8.self).debugDescription): \(error)", file: file,
                line: line)
            XCTAssertEqual(
                error.offset, offset, "\(String(decoding: bytes, as: UTF8.self).debugDescription): \(error)",
                file: file, line: line)
            XCTAssertTrue(error.description.contains("at byte \(error.offset)"), file: file, line: line)
        }
    }

    private func assertRefused(
        _ text: String, _ kind: JSONError.Kind, at offset: Int, limits: JSONLimits = .default,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        assertRefused(Array(text.utf8), kind, at: offset, limits: limits, file: file, line: line)
    }

    // MARK: - Accepted

    func testScalarsAndContainers() {
        XCTAssertEqual(decode("null"), .null)
        XCTAssertEqual(decode("true"), .bool(true))
        XCTAssertEqual(decode("false"), .bool(false))
        XCTAssertEqual(decode("17"), .integer(17))
        XCTAssertEqual(decode("\"hi\""), .string("hi"))
        XCTAssertEqual(decode("[]"), .array([]))
        XCTAssertEqual(decode("{}"), .object([:]))
        XCTAssertEqual(decode(#"[1,"a",[true,null],{"k":{}}]"#), [1, "a", [true, nil], ["k": .object([:])]])
    }

    /// Containers of every size up to well past the parser's initial stack capacity, nested.
    func testNestedContainersOfManySizes() throws {
        let value = JSON.array(
            (0..<40).map { n in
                n % 2 == 0
                    ? .array((0..<n).map { .integer(Int64($0)) })
                    : .object(
                        JSONObject(uniqueKeysWithValues: (0..<n).map { ("k\($0)", JSON.array([.integer(Int64($0))])) }))
            })
        XCTAssertEqual(try JSON.decode(value.encoded()), value)
    }

    func testWhitespaceAroundEverything() {
        let text = " \t\n\r[ 1 ,\n{ \"a\" :\t2 } , [ ] , { } ]\r\n "
        XCTAssertEqual(decode(text), [1, ["a": 2], [], .object([:])])
    }

    func testAVarlinkCall() throws {
        let text =
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","predicate":"timerUUID == $t","parameters":{"t":"1b4e28ba-2fa1-11d2-883f-0016d3cca427"}},"more":false,"id":17}"#
        let call = try JSON.decode(text)
        XCTAssertEqual(call["method"]?.stringValue, "org.seam.Store.Fetch")
        XCTAssertEqual(call["parameters"]?["parameters"]?["t"]?.stringValue, "1b4e28ba-2fa1-11d2-883f-0016d3cca427")
        XCTAssertEqual(call["more"]?.boolValue, false)
        XCTAssertEqual(call["id"]?.int64Value, 17)
        XCTAssertEqual(call.objectValue?.keys.map { $0 }, ["method", "parameters", "more", "id"])
        XCTAssertEqual(String(decoding: call.encoded(), as: UTF8.self), text)
    }

    func testSlicesAndRawBuffersCountOffsetsFromTheirStart() {
        let bytes = Array("xx[1,}".utf8)
        XCTAssertThrowsError(try JSON.decode(bytes[2...])) { error in
            XCTAssertEqual((error as? JSONError)?.offset, 3)
        }
        XCTAssertEqual(try JSON.decode(Array("xx[1]".utf8)[2...]), [1])
        let raw = Array("[2]".utf8)
        XCTAssertEqual(try raw.withUnsafeBytes { try JSON.decode($0) }, [2])
    }

    // MARK: - Structure errors

    func testUnexpectedEnd() {
        assertRefused("", .unexpectedEnd, at: 0)
        assertRefused("   ", .unexpectedEnd, at: 3)
        assertRefused("[", .unexpectedEnd, at: 1)
        assertRefused("[1", .unexpectedEnd, at: 2)
        assertRefused("[1,", .unexpectedEnd, at: 3)
        assertRefused("{", .unexpectedEnd, at: 1)
        assertRefused(#"{"a""#, .unexpectedEnd, at: 4)
        assertRefused(#"{"a":"#, .unexpectedEnd, at: 5)
        assertRefused(#"{"a":1"#, .unexpectedEnd, at: 6)
        assertRefused(#"{"a":1,"#, .unexpectedEnd, at: 7)
        assertRefused(#""abc"#, .unexpectedEnd, at: 4)
        assertRefused(#""ab\"#, .unexpectedEnd, at: 4)
        assertRefused(#""\u00"#, .unexpectedEnd, at: 5)
        assertRefused("tru", .unexpectedEnd, at: 3)
        assertRefused("nul", .unexpectedEnd, at: 3)
    }

    func testUnexpectedCharacter() {
        assertRefused("[1 2]", .unexpectedCharacter, at: 3)
        assertRefused("[1,]", .unexpectedCharacter, at: 3)
        assertRefused("[,1]", .unexpectedCharacter, at: 1)
        assertRefused("{,}", .unexpectedCharacter, at: 1)
        assertRefused(#"{"a" 1}"#, .unexpectedCharacter, at: 5)
        assertRefused(#"{"a":1,}"#, .unexpectedCharacter, at: 7)
        assertRefused("{1:2}", .unexpectedCharacter, at: 1)
        assertRefused(#"{"a":1 "b":2}"#, .unexpectedCharacter, at: 7)
        assertRefused(#"{"a":1]"#, .unexpectedCharacter, at: 6)
        assertRefused("[1}", .unexpectedCharacter, at: 2)
        assertRefused("nulx", .unexpectedCharacter, at: 0)
        assertRefused("True", .unexpectedCharacter, at: 0)
        assertRefused("NaN", .unexpectedCharacter, at: 0)
        assertRefused("Infinity", .unexpectedCharacter, at: 0)
        assertRefused("+1", .unexpectedCharacter, at: 0)
        assertRefused(".5", .unexpectedCharacter, at: 0)
        assertRefused("'a'", .unexpectedCharacter, at: 0)
        assertRefused("[\u{0B}1]", .unexpectedCharacter, at: 1)  // vertical tab is not JSON white space
        assertRefused([0xEF, 0xBB, 0xBF, 0x31], .unexpectedCharacter, at: 0)  // a byte-order mark
        assertRefused([0xC3, 0xA9], .unexpectedCharacter, at: 0)  // UTF-8 outside a string
    }

    func testTrailingCharacters() {
        assertRefused("1 2", .trailingCharacters, at: 2)
        assertRefused("{}x", .trailingCharacters, at: 2)
        assertRefused("[]]", .trailingCharacters, at: 2)
        assertRefused("null,", .trailingCharacters, at: 4)
        assertRefused([0x31, 0x00], .trailingCharacters, at: 1)
        assertRefused("1.5.5", .trailingCharacters, at: 3)
        assertRefused("1e5e5", .trailingCharacters, at: 3)
        assertRefused("0x10", .trailingCharacters, at: 1)
        assertRefused("truex", .trailingCharacters, at: 4)
    }

    func testDuplicateKeys() {
        assertRefused(#"{"a":1,"a":2}"#, .duplicateKey, at: 7)
        assertRefused(#"{"a":{"b":1,"b":2},"b":3}"#, .duplicateKey, at: 12)
        assertRefused(#"{"a":1,"\u0061":2}"#, .duplicateKey, at: 7)  // same bytes once unescaped
        XCTAssertNotNil(decode(#"{"a":{"b":1},"b":2,"c":{"a":3,"b":4}}"#))
        // Canonically equivalent but different bytes: two keys.
        XCTAssertEqual(decode("{\"\u{E9}\":1,\"e\u{301}\":2}")?.objectValue?.count, 2)
        // Same length, same first and last eight bytes: equal fingerprints, different keys.
        XCTAssertEqual(decode(#"{"abcdefghXstuvwxyz":1,"abcdefghYstuvwxyz":2,"":3,"\u0000":4}"#)?.objectValue?.count, 4)
    }

    func testDuplicateKeysInLargeObjects() {
        let keys = (0..<40).map { "key\($0)" }
        let body = keys.map { "\"\($0)\":0" }.joined(separator: ",")
        XCTAssertEqual(decode("{\(body)}")?.objectValue?.count, 40)
        let late = "{\(body),\"key3\":1}"
        assertRefused(late, .duplicateKey, at: late.utf8.count - 9)
        let early = "{\"key39\":1,\(body)}"
        assertRefused(early, .duplicateKey, at: early.utf8.count - 10)
    }

    // MARK: - Strings

    func testEscapes() {
        XCTAssertEqual(decode(#""\"\\\/\b\f\n\r\t""#), .string("\"\\/\u{08}\u{0C}\n\r\t"))
        XCTAssertEqual(decode(#""\u0000\u001f\u0041\u00e9\u00E9\u20AC""#), .string("\u{0}\u{1F}A\u{E9}\u{E9}\u{20AC}"))
        XCTAssertEqual(decode(#""a\u0062c""#), .string("abc"))
        let runs = String(repeating: "a", count: 20) + "\\n" + String(repeating: "b", count: 20) + "\\u00e9\u{E9}/"
        XCTAssertEqual(
            decode("\"" + runs + "\""),
            .string(String(repeating: "a", count: 20) + "\n" + String(repeating: "b", count: 20) + "\u{E9}\u{E9}/"))
        XCTAssertEqual(decode("\"caf\u{E9} \\n \u{1F600}\""), .string("caf\u{E9} \n \u{1F600}"))
        assertRefused(#""\x""#, .invalidEscape, at: 1)
        assertRefused(#""ab\'""#, .invalidEscape, at: 3)
        assertRefused(#""\u12""#, .invalidEscape, at: 1)
        assertRefused(#""\uZZZZ""#, .invalidEscape, at: 1)
        assertRefused(#""\U0041""#, .invalidEscape, at: 1)
    }

    func testSurrogateEscapes() {
        XCTAssertEqual(decode(#""\uD83D\uDE00""#), .string("\u{1F600}"))
        XCTAssertEqual(decode(#""\ud800\udc00\udbff\udfff""#), .string("\u{10000}\u{10FFFF}"))
        assertRefused(#""\uD800""#, .unpairedSurrogate, at: 1)
        assertRefused(#""\uD800x""#, .unpairedSurrogate, at: 1)
        assertRefused(#""\uD800\u0041""#, .unpairedSurrogate, at: 1)
        assertRefused(#""\uD800\uD800""#, .unpairedSurrogate, at: 1)
        assertRefused(#""\uD800\n""#, .unpairedSurrogate, at: 1)
        assertRefused(#""a\uDC00""#, .unpairedSurrogate, at: 2)
        assertRefused(#""\uDFFF\uD800""#, .unpairedSurrogate, at: 1)
        assertRefused(#""\uD800\uZZZZ""#, .invalidEscape, at: 7)
    }

    func testControlCharactersMustBeEscaped() {
        for byte: UInt8 in [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F] {
            assertRefused([0x22, 0x61, byte, 0x22], .controlCharacter, at: 2)
            assertRefused([0x22, 0x5C, 0x6E, byte, 0x22], .controlCharacter, at: 3)  // after an escape
        }
        XCTAssertEqual(try JSON.decode([0x22, 0x7F, 0x22]), .string("\u{7F}"))  // DEL is not a control character here
    }

    func testInvalidUTF8() {
        let cases: [([UInt8], String)] = [
            ([0x80], "a stray continuation byte"),
            ([0xBF], "a stray continuation byte"),
            ([0xC0, 0xAF], "overlong 2-byte '/'"),
            ([0xC1, 0xBF], "overlong 2-byte"),
            ([0xE0, 0x80, 0xAF], "overlong 3-byte"),
            ([0xE0, 0x9F, 0xBF], "overlong 3-byte U+07FF"),
            ([0xF0, 0x80, 0x80, 0xAF], "overlong 4-byte"),
            ([0xF0, 0x8F, 0xBF, 0xBF], "overlong 4-byte U+FFFF"),
            ([0xED, 0xA0, 0x80], "UTF-8 of the surrogate U+D800"),
            ([0xED, 0xBF, 0xBF], "UTF-8 of the surrogate U+DFFF"),
            ([0xF4, 0x90, 0x80, 0x80], "U+110000"),
            ([0xF5, 0x80, 0x80, 0x80], "lead byte F5"),
            ([0xF8, 0x88, 0x80, 0x80, 0x80], "a 5-byte form"),
            ([0xFE], "FE"),
            ([0xFF], "FF"),
            ([0xC3], "truncated 2-byte"),
            ([0xE2, 0x82], "truncated 3-byte"),
            ([0xF0, 0x9F, 0x98], "truncated 4-byte"),
            ([0xE2, 0x28, 0xA1], "bad second byte"),
            ([0xE2, 0x82, 0x28], "bad third byte"),
        ]
        for (sequence, name) in cases {
            let prefix = Array("\"abcdefghij".utf8)  // past the eight-byte scan
            assertRefused(prefix + sequence + [0x22], .invalidUTF8, at: prefix.count)
            assertRefused([0x7B, 0x22] + sequence + Array("\":1}".utf8), .invalidUTF8, at: 2)  // in a key
            assertRefused([0x22, 0x5C, 0x74] + sequence + [0x22], .invalidUTF8, at: 3)  // after an escape
            _ = name
        }
        assertRefused([0x22, 0xE2, 0x82], .invalidUTF8, at: 1)  // the input ends inside the sequence
    }

    func testUTF8Boundaries() throws {
        let scalars: [UInt32] = [0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF]
        for scalar in scalars {
            let string = String(Character(try XCTUnwrap(Unicode.Scalar(scalar))))
            let bytes = [0x22] + Array(string.utf8) + [0x22]
            XCTAssertEqual(try JSON.decode(bytes), .string(string), "U+\(String(scalar, radix: 16))")
        }
    }

    // MARK: - Numbers

    func testIntegers() {
        XCTAssertEqual(decode("0"), .integer(0))
        XCTAssertEqual(decode("-0"), .integer(0))
        XCTAssertEqual(decode("-17"), .integer(-17))
        XCTAssertEqual(decode("9223372036854775807"), .integer(.max))
        XCTAssertEqual(decode("-9223372036854775808"), .integer(.min))
        XCTAssertEqual(decode("9223372036854775808"), .double(9_223_372_036_854_775_808))
        XCTAssertEqual(decode("-9223372036854775809"), .double(-9_223_372_036_854_775_809))
        XCTAssertEqual(decode("18446744073709551616"), .double(18_446_744_073_709_551_616))
        XCTAssertEqual(decode("123456789012345678901234567890"), .double(1.2345678901234568e29))
        XCTAssertEqual(decode("1000000000000000000000"), .double(1e21))
    }

    func testDoubles() {
        XCTAssertEqual(decode("1.0"), .double(1))
        XCTAssertEqual(decode("1E2"), .double(100))
        XCTAssertEqual(decode("1e+2"), .double(100))
        XCTAssertEqual(decode("-1.5e-3"), .double(-0.0015))
        XCTAssertEqual(decode("0.1"), .double(0.1))
        XCTAssertEqual(decode("1e308"), .double(1e308))
        XCTAssertEqual(decode("1.7976931348623157e308"), .double(.greatestFiniteMagnitude))
        XCTAssertEqual(decode("2.2250738585072014e-308"), .double(.leastNormalMagnitude))
        XCTAssertEqual(decode("4.9e-324"), .double(.leastNonzeroMagnitude))
        XCTAssertEqual(decode("1e-400"), .double(0))  // rounds to zero: representable, not an error
        XCTAssertEqual(decode("0e99999999999"), .double(0))
        XCTAssertEqual(decode("0.000000000000000000000000000001"), .double(1e-30))
        XCTAssertEqual(decode("3.14159265358979323846264338327950288"), .double(3.141592653589793))
        XCTAssertEqual(decode("9007199254740993"), .integer(9_007_199_254_740_993))
        XCTAssertEqual(decode("9007199254740993.0"), .double(9_007_199_254_740_992))  // ties to even
        let negativeZero = decode("-0.0")?.doubleValue
        XCTAssertEqual(negativeZero, 0)
        XCTAssertEqual(negativeZero?.sign, .minus)
    }

    func testNumbersOutOfRange() {
        assertRefused("1e309", .numberOutOfRange, at: 0)
        assertRefused("-1e309", .numberOutOfRange, at: 0)
        assertRefused("[1,1.8e308]", .numberOutOfRange, at: 3)
        assertRefused("1e99999999999999999999", .numberOutOfRange, at: 0)
        assertRefused(String(repeating: "9", count: 400), .numberOutOfRange, at: 0)
        // The error quotes the start of the number, not all of it: a 4 MB number in a frame made
        // a 4 MB error reply.
        XCTAssertThrowsError(try JSON.decode(Array(String(repeating: "9", count: 100_000).utf8))) { e in
            XCTAssertLessThan("\(e)".utf8.count, 300, "\(e)".prefix(300).description)
            XCTAssertTrue("\(e)".contains("(100000 bytes)"), "\(e)".prefix(300).description)
        }
    }

    func testInvalidNumbers() {
        for text in ["-", "01", "-01", "00", "1.", "1.e5", "1e", "1e+", "1E-", "- 1", "-a", "1ee", "-.5", "2.x"] {
            assertRefused(text, .invalidNumber, at: 0)
        }
        assertRefused("[1.]", .invalidNumber, at: 1)
        assertRefused(#"{"a":-}"#, .invalidNumber, at: 5)
    }

    /// Every decimal the fast path takes must match the C library's correctly rounded reading.
    func testDecimalReadingAgreesWithTheStandardLibrary() throws {
        var random = SplitMix64(seed: 7)
        for _ in 0..<20_000 {
            let digits = String(random.next() % (1 << (random.next() % 60)))
            let fraction = random.next() % 3 == 0 ? "" : "." + String(random.next() % 100_000_000)
            let exponent = random.next() % 2 == 0 ? "" : "e" + String(Int(random.next() % 60) - 30)
            let text = digits + fraction + exponent
            guard !(fraction.isEmpty && exponent.isEmpty) else { continue }
            let expected = try XCTUnwrap(Double(text))
            XCTAssertEqual(try JSON.decode(text), .double(expected), text)
        }
    }

    // MARK: - Limits

    func testDepthLimit() {
        let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        XCTAssertNotNil(decode(deepest))
        assertRefused("[" + deepest + "]", .tooDeep, at: 64)
        let objects = String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)
        assertRefused(objects, .tooDeep, at: 64 * 5)
        assertRefused(String(repeating: "[", count: 100_000), .tooDeep, at: 64)  // no stack overflow
        assertRefused("[]", .tooDeep, at: 0, limits: JSONLimits(maxDepth: 0))
        XCTAssertEqual(decode("7", limits: JSONLimits(maxDepth: 0)), 7)
    }

    func testStringLimit() {
        let limits = JSONLimits(maxStringBytes: 3)
        XCTAssertEqual(decode(#""abc""#, limits: limits), "abc")
        assertRefused(#""abcd""#, .stringTooLong, at: 0, limits: limits)
        assertRefused(#"["\u00e9\u00e9"]"#, .stringTooLong, at: 1, limits: limits)  // counted after decoding
        XCTAssertEqual(decode(#""\u00e9a""#, limits: limits), "\u{E9}a")
        assertRefused(#"{"abcd":1}"#, .stringTooLong, at: 1, limits: limits)
    }

    func testMemberLimit() {
        let limits = JSONLimits(maxMembers: 2)
        XCTAssertEqual(decode("[1,2]", limits: limits), [1, 2])
        assertRefused("[1,2,3]", .tooManyMembers, at: 5, limits: limits)
        XCTAssertNotNil(decode(#"{"a":1,"b":2}"#, limits: limits))
        assertRefused(#"{"a":1,"b":2,"c":3}"#, .tooManyMembers, at: 13, limits: limits)
    }

    func testByteLimit() {
        let limits = JSONLimits(maxBytes: 4)
        XCTAssertEqual(decode("1234", limits: limits), 1234)
        assertRefused("12345", .tooLarge, at: 4, limits: limits)
    }

    func testErrorDescriptionSaysWhatAndWhere() {
        XCTAssertThrowsError(try JSON.decode(#"{"a":1,"a":2}"#)) { error in
            let text = String(describing: error)
            XCTAssertTrue(text.contains("at byte 7"), text)
            XCTAssertTrue(text.contains("\"a\" appears twice"), text)
            XCTAssertTrue(text.contains("duplicateKey"), text)
        }
    }
}
