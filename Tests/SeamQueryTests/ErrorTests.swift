import SeamQuery
import SeamSchema
import XCTest

/// Every `QueryError.Kind`, each with the byte offset it must point at.
final class ErrorTests: XCTestCase {
    private let thing = Fixtures.thing

    private func parse(_ text: String) throws -> ParsedPredicate { try ParsedPredicate(text) }

    private func check(_ text: String, _ parameters: [String: AttributeValue] = [:]) throws -> CheckedPredicate {
        try CheckedPredicate(text, entity: thing, parameters: parameters)
    }

    // MARK: - Text

    func testTooLong() {
        let text = "name == \"" + String(repeating: "a", count: QueryLimits.maxSourceBytes) + "\""
        assertQueryError(.tooLong, at: QueryLimits.maxSourceBytes) { try parse(text) }
    }

    func testInvalidUTF8() {
        var bytes = Array("name == \"".utf8)
        bytes += [0xC3, 0x28, UInt8(ascii: "\"")]  // a lead byte followed by no continuation
        assertQueryError(.invalidUTF8, at: 9) { try ParsedPredicate(utf8: bytes) }
        let cases: [(bytes: [UInt8], offset: Int)] = [
            ([0x61, 0x20, 0xED, 0xA0, 0x80], 2),  // a surrogate
            ([0xC0, 0x80], 0),  // an overlong NUL
            ([0x61, 0xF4, 0x90, 0x80, 0x80], 1),  // beyond U+10FFFF
            ([0x61, 0x3D, 0x3D, 0xE2, 0x82], 3),  // truncated
        ]
        for c in cases {
            assertQueryError(.invalidUTF8, at: c.offset) { try ParsedPredicate(utf8: c.bytes) }
        }
    }

    func testUnexpectedCharacter() {
        assertQueryError(.unexpectedCharacter, at: 12) { try parse("name == \"x\" @") }
        assertQueryError(.unexpectedCharacter, at: 2) { try parse("naïve == 1") }
        assertQueryError(.unexpectedCharacter, at: 9) { try parse("count == $ ") }
        assertQueryError(.unexpectedCharacter, at: 0) { try parse("# == 1") }
        assertQueryError(.unexpectedCharacter, at: 5) { try parse("timer.name == 1") }
        assertQueryError(.unexpectedCharacter, at: 4) { try parse("name\u{7}== 1") }
    }

    func testUnterminatedString() {
        assertQueryError(.unterminatedString, at: 8) { try parse("name == \"abc") }
        assertQueryError(.unterminatedString, at: 8) { try parse("name == 'abc\\'") }
        assertQueryError(.unterminatedString, at: 8) { try parse("name == \"abc\\") }
    }

    func testInvalidEscape() {
        assertQueryError(.invalidEscape, at: 10) { try parse(#"name == "a\q""#) }
        assertQueryError(.invalidEscape, at: 10) { try parse(#"name == "a\u{D800}""#) }
        assertQueryError(.invalidEscape, at: 9) { try parse(#"name == "\u{1234567}""#) }
        assertQueryError(.invalidEscape, at: 9) { try parse(#"name == "\u00e9""#) }
        let star = assertQueryError(.invalidEscape, at: 12) { try parse(#"name LIKE "a\*""#) }
        XCTAssertTrue(star?.message.contains("LIKE") == true, star?.message ?? "")
    }

    func testInvalidNumber() {
        assertQueryError(.invalidNumber, at: 9) { try parse("count == 1.") }
        assertQueryError(.invalidNumber, at: 9) { try parse("count == 12abc") }
        assertQueryError(.invalidNumber, at: 9) { try parse("count == 1e") }
        assertQueryError(.invalidNumber, at: 9) { try parse("count == 1.2.3") }
    }

    func testNumberOutOfRange() {
        assertQueryError(.numberOutOfRange, at: 9) { try parse("count == 9223372036854775808") }
        assertQueryError(.numberOutOfRange, at: 9) { try parse("count == -9223372036854775809") }
        assertQueryError(.numberOutOfRange, at: 9) { try parse("score == 1e999") }
    }

    // MARK: - Syntax

    func testEmptyPredicate() {
        assertQueryError(.emptyPredicate, at: 0) { try parse("") }
        assertQueryError(.emptyPredicate, at: 0) { try parse(" \n\t ") }
    }

    func testUnexpectedToken() {
        assertQueryError(.unexpectedToken, at: 12) { try parse("name == \"a\" name == \"b\"") }
        assertQueryError(.unexpectedToken, at: 0) { try parse("\"a\" == name") }
        assertQueryError(.unexpectedToken, at: 0) { try parse("AND name == 1") }
        assertQueryError(.unexpectedToken, at: 0) { try parse("nil == name") }
        assertQueryError(.unexpectedToken, at: 8) { try parse("name == other") }
        assertQueryError(.unexpectedToken, at: 9) { try parse("count IN (1, 2)") }
        assertQueryError(.unexpectedToken, at: 17) { try parse("count BETWEEN {1 2}") }
        assertQueryError(.unexpectedToken, at: 19) { try parse("count BETWEEN {1, 2, 3}") }
        assertQueryError(.unexpectedToken, at: 8) { try parse("(a == 1 b == 2)") }
        assertQueryError(.unexpectedToken, at: 0) { try parse("== 1") }
    }

    func testUnexpectedEnd() {
        assertQueryError(.unexpectedEnd, at: 7) { try parse("name ==") }
        assertQueryError(.unexpectedEnd, at: 4) { try parse("name") }
        assertQueryError(.unexpectedEnd, at: 13) { try parse("name == 1 AND") }
        assertQueryError(.unexpectedEnd, at: 4) { try parse("NOT ") }
    }

    func testUnbalancedParentheses() {
        assertQueryError(.unbalancedParentheses, at: 0) { try parse("(name == \"a\"") }
        assertQueryError(.unbalancedParentheses, at: 0) { try parse("((a == 1)") }
        assertQueryError(.unbalancedParentheses, at: 12) { try parse("(a == 1) OR (b == 2") }
        assertQueryError(.unbalancedParentheses, at: 11) { try parse("name == \"a\")") }
        assertQueryError(.unbalancedParentheses, at: 0) { try parse(")") }
        assertQueryError(.unbalancedParentheses, at: 9) { try parse("count IN {1, 2") }
    }

    func testUnknownOperator() {
        assertQueryError(.unknownOperator, at: 5) { try parse("name =~ \"a\"") }
        assertQueryError(.unknownOperator, at: 5) { try parse("name === \"a\"") }
        assertQueryError(.unknownOperator, at: 6) { try parse("count << 1") }
        assertQueryError(.unknownOperator, at: 5) { try parse("name MATCHES \"a\"") }
        assertQueryError(.unknownOperator, at: 5) { try parse("name IS nil") }
        assertQueryError(.unknownOperator, at: 6) { try parse("count + 1 == 2") }
        assertQueryError(.unknownOperator, at: 0) { try parse("ANY name == 1") }
        assertQueryError(.unknownOperator, at: 6) { try parse("count & 1") }
        assertQueryError(.unknownOperator, at: 10) { try parse("name != 1 | name == 2") }
        assertQueryError(.unknownOperator, at: 5) { try parse("name NOT == 1") }
        assertQueryError(.unknownOperator, at: 5) { try parse("name - 1") }
    }

    func testInvalidOption() {
        assertQueryError(.invalidOption, at: 8) { try parse("name ==[d] \"a\"") }
        assertQueryError(.invalidOption, at: 17) { try parse("name BEGINSWITH [cd] \"a\"") }
        assertQueryError(.invalidOption, at: 8) { try parse("name ==[x] \"a\"") }
        assertQueryError(.invalidOption, at: 8) { try parse("name ==[1] \"a\"") }
    }

    func testInvalidDate() {
        assertQueryError(.invalidDate, at: 10) { try parse("at > date(\"2026-13-01\")") }
        assertQueryError(.invalidDate, at: 10) { try parse("at > date(\"2026-02-29\")") }
        assertQueryError(.invalidDate, at: 10) { try parse("at > date(\"2026-11-30T10:00:00\")") }
        assertQueryError(.invalidDate, at: 10) { try parse("at > date(\"2026-11-30T24:00:00Z\")") }
        assertQueryError(.invalidDate, at: 10) { try parse("at > date(nope)") }
        assertQueryError(.invalidDate, at: 10) { try parse("at > date 5") }
    }

    // MARK: - Bounds

    func testTooDeep() {
        let depth = QueryLimits.maxDepth + 1
        let parens = String(repeating: "(", count: depth) + "a == 1" + String(repeating: ")", count: depth)
        assertQueryError(.tooDeep, at: QueryLimits.maxDepth) { try parse(parens) }
        let nots = String(repeating: "!", count: depth) + "a == 1"
        assertQueryError(.tooDeep, at: QueryLimits.maxDepth) { try parse(nots) }
        let mixed = String(repeating: "NOT (", count: depth) + "a == 1" + String(repeating: ")", count: depth)
        assertQueryError(.tooDeep, at: 5 * (QueryLimits.maxDepth / 2)) { try parse(mixed) }
        let max = QueryLimits.maxDepth
        let infix = String(repeating: "(", count: max) + "a NOT IN {1}" + String(repeating: ")", count: max)
        assertQueryError(.tooDeep, at: max + 2) { try parse(infix) }  // an infix NOT prints as a prefix one
        // Far deeper input is refused just as cheaply: no stack overflow.
        assertQueryError(.tooDeep, at: QueryLimits.maxDepth) { try parse(String(repeating: "(", count: 60_000)) }
    }

    func testListTooLong() {
        let values = (0...QueryLimits.maxListCount).map(String.init)
        let text = "count IN {" + values.joined(separator: ",") + "}"
        let offset = "count IN {".utf8.count + values.dropLast().map { $0.utf8.count + 1 }.reduce(0, +)
        assertQueryError(.listTooLong, at: offset) { try parse(text) }
    }

    func testTooManyComparisons() {
        let text = Array(repeating: "a == 1", count: QueryLimits.maxComparisons + 1).joined(separator: " OR ")
        assertQueryError(.tooManyComparisons, at: QueryLimits.maxComparisons * 10) { try parse(text) }
    }

    func testTooManyValues() {
        let list = "a IN {" + Array(repeating: "1", count: QueryLimits.maxListCount).joined(separator: ",") + "}"
        let lists = QueryLimits.maxValues / QueryLimits.maxListCount
        let text = Array(repeating: list, count: lists).joined(separator: " OR ") + " OR a == 2"
        let offset = text.utf8.count - 1
        assertQueryError(.tooManyValues, at: offset) { try parse(text) }
    }

    func testPatternTooLong() {
        let pattern = String(repeating: "a", count: QueryLimits.maxPatternBytes + 1)
        assertQueryError(.patternTooLong, at: 10) { try check("name LIKE \"\(pattern)\"") }
        assertQueryError(.patternTooLong, at: 10) { try check("name LIKE $p", ["p": .string(pattern)]) }
        XCTAssertNoThrow(try check("name LIKE \"\(pattern.dropLast())\""))
    }

    // MARK: - Meaning

    func testUnknownEntity() throws {
        var draft = ModelDraft(model: "Things")
        try draft.addConfiguration("Local")
        try draft.addEntity(thing, in: "Local")
        let version = try ModelVersion(draft)
        assertQueryError(.unknownEntity, at: 0) { try CheckedPredicate("name == 1", entity: "Nope", in: version) }
        XCTAssertNoThrow(try CheckedPredicate("name == 'x'", entity: "Thing", in: version))
    }

    func testUnknownAttribute() {
        let error = assertQueryError(.unknownAttribute, at: 15) { try check("name == 'a' OR nme == 'b'") }
        XCTAssertTrue(error?.message.contains("nme") == true)
        assertQueryError(.unknownAttribute, at: 7) { try Sorting("name, -nme", entity: thing) }
        assertQueryError(.unknownAttribute, at: 0) { try CompiledSQL.select(["nope"], from: thing) }
    }

    func testTypeMismatch() {
        assertQueryError(.typeMismatch, at: 9) { try check("count == 'a'") }
        assertQueryError(.typeMismatch, at: 8) { try check("name == 1") }
        assertQueryError(.typeMismatch, at: 8) { try check("flag == 1") }
        assertQueryError(.typeMismatch, at: 9) { try check("score == date(5)") }
        assertQueryError(.typeMismatch, at: 8) { try check("count < nil") }
        assertQueryError(.typeMismatch, at: 18) { try check("count BETWEEN {1, nil}") }
        assertQueryError(.typeMismatch, at: 14) { try check("name CONTAINS nil") }
        assertQueryError(.typeMismatch, at: 8) { try check("data == 'ab'") }
        assertQueryError(.typeMismatch, at: 13) { try check("count IN {1, 'two'}") }
    }

    func testOperatorNotApplicable() {
        assertQueryError(.operatorNotApplicable, at: 6) { try check("count CONTAINS 1") }
        assertQueryError(.operatorNotApplicable, at: 4) { try check("ref BEGINSWITH 'ab'") }
        assertQueryError(.operatorNotApplicable, at: 5) { try check("flag < TRUE") }
        assertQueryError(.operatorNotApplicable, at: 5) { try check("meta BETWEEN {'a', 'b'}") }
        assertQueryError(.operatorNotApplicable, at: 6) { try check("count ==[c] 1") }
        assertQueryError(.operatorNotApplicable, at: 0) { try Sorting("count[c]", entity: thing) }
    }

    func testInvalidValue() {
        assertQueryError(.invalidValue, at: 7) { try check("ref == 'not-a-uuid'") }
        assertQueryError(.invalidValue, at: 9) { try check("score == $s", ["s": .double(.nan)]) }
        assertQueryError(.invalidValue, at: 10) { try check(#"name LIKE "ab\\""#) }
        assertQueryError(.invalidValue, at: 10) { try check("name LIKE $p", ["p": .string("a\u{0}b")]) }
        assertQueryError(.invalidValue, at: 7) { try check("ref == $r", ["r": .uuid("123")]) }
    }

    func testMissingParameter() {
        assertQueryError(.missingParameter, at: 9) { try check("count == $n") }
        assertQueryError(.missingParameter, at: 17) { try check("count IN {$a, 2, $b}", ["a": .integer(1)]) }
    }

    func testParameterTypeMismatch() {
        assertQueryError(.parameterTypeMismatch, at: 9) { try check("count == $n", ["n": .string("1")]) }
        assertQueryError(.parameterTypeMismatch, at: 8) { try check("name == $n", ["n": .uuid(UUIDText.random())]) }
        assertQueryError(.parameterTypeMismatch, at: 8) { try check("flag == $f", ["f": .integer(1)]) }
        assertQueryError(.parameterTypeMismatch, at: 9) { try check("score == $d", ["d": .date(1)]) }
        assertQueryError(.parameterTypeMismatch, at: 8) { try check("data == $d", ["d": .string("x")]) }
    }

    func testDuplicateSortKey() {
        assertQueryError(.duplicateSortKey, at: 7) { try Sorting("name, -name", entity: thing) }
        assertQueryError(.duplicateSortKey, at: 0) { try Sorting([.init("count"), .init("count")], entity: thing) }
    }

    func testEntityMismatch() throws {
        let other = try CheckedPredicate("name == 'x'", entity: Fixtures.otherEntity)
        var index = ChannelIndex<Int>(entity: thing)
        assertQueryError(.entityMismatch, at: 0) { try index.register(1, other) }
        assertQueryError(.entityMismatch, at: 0) { try CompiledSQL.select(from: thing, where: other) }
        let sorting = try Sorting("name", entity: Fixtures.otherEntity)
        assertQueryError(.entityMismatch, at: 0) { try CompiledSQL.select(from: thing, orderBy: sorting) }
    }

    /// The error kinds above, listed so that a new kind without a test stands out.
    func testEveryKindIsCovered() {
        let tested: [QueryError.Kind] = [
            .tooLong, .invalidUTF8, .unexpectedCharacter, .unterminatedString, .invalidEscape, .invalidNumber,
            .numberOutOfRange, .emptyPredicate, .unexpectedToken, .unexpectedEnd, .unbalancedParentheses,
            .unknownOperator, .invalidOption, .invalidDate, .tooDeep, .listTooLong, .tooManyComparisons,
            .tooManyValues, .patternTooLong, .unknownEntity, .unknownAttribute, .typeMismatch,
            .operatorNotApplicable, .invalidValue, .missingParameter, .parameterTypeMismatch, .duplicateSortKey,
            .entityMismatch,
        ]
        XCTAssertEqual(Set(tested).count, 28)
    }

    func testDescriptionNamesKindOffsetAndAdvice() {
        let error = QueryError(.unknownAttribute, at: 3, "Thing has no attribute 'x'")
        XCTAssertEqual(error.description, "unknownAttribute at byte 3: Thing has no attribute 'x'")
    }
}
