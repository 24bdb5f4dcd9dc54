import SeamQuery
import SeamSchema
import XCTest

final class ParserTests: XCTestCase {
    private func canonical(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let parsed = try ParsedPredicate(text)
        let again = try ParsedPredicate(parsed.description)
        XCTAssertEqual(
            again.description, parsed.description, "canonical text must parse back to itself", file: file, line: line)
        return parsed.description
    }

    func testComparisonOperatorsAndTheirSpellings() throws {
        XCTAssertEqual(try canonical("count == 1"), "count == 1")
        XCTAssertEqual(try canonical("count = 1"), "count == 1")
        XCTAssertEqual(try canonical("count != 1"), "count != 1")
        XCTAssertEqual(try canonical("count <> 1"), "count != 1")
        XCTAssertEqual(try canonical("count<1"), "count < 1")
        XCTAssertEqual(try canonical("count =< 1"), "count <= 1")
        XCTAssertEqual(try canonical("count => 1"), "count >= 1")
        XCTAssertEqual(try canonical("count > -1"), "count > -1")
    }

    func testKeywordsIgnoreCaseAndLogicHasPrecedence() throws {
        XCTAssertEqual(try canonical("a == 1 or b == 2 and c == 3"), "a == 1 OR b == 2 AND c == 3")
        XCTAssertEqual(try canonical("a == 1 OR (b == 2 AND c == 3)"), "a == 1 OR b == 2 AND c == 3")
        XCTAssertEqual(try canonical("(a == 1 || b == 2) && c == 3"), "(a == 1 OR b == 2) AND c == 3")
        XCTAssertEqual(try canonical("not a == 1 AND b == 2"), "NOT a == 1 AND b == 2")
        XCTAssertEqual(try canonical("!(a == 1 AND b == 2)"), "NOT (a == 1 AND b == 2)")
        XCTAssertEqual(try canonical("NOT NOT a == 1"), "NOT NOT a == 1")
        XCTAssertEqual(try canonical("truepredicate OR FalsePredicate"), "TRUEPREDICATE OR FALSEPREDICATE")
    }

    func testTreeShape() throws {
        let parsed = try ParsedPredicate("a == 1 OR b == 2 AND c == 3")
        guard case .or(let terms) = parsed.root, terms.count == 2, case .and(let inner) = terms[1] else {
            return XCTFail("OR must bind loosest: \(parsed.root)")
        }
        XCTAssertEqual(inner.count, 2)
    }

    func testListsRangesAndStringOperators() throws {
        XCTAssertEqual(try canonical("state IN {'running', \"paused\"}"), "state IN {\"running\", \"paused\"}")
        XCTAssertEqual(try canonical("state in {}"), "state IN {}")
        XCTAssertEqual(try canonical("count BETWEEN {1, 10}"), "count BETWEEN {1, 10}")
        XCTAssertEqual(try canonical("name beginswith[c] 'Ab'"), "name BEGINSWITH[c] \"Ab\"")
        XCTAssertEqual(
            try canonical("name CONTAINS 'b' AND name ENDSWITH[C] 'c'"),
            "name CONTAINS \"b\" AND name ENDSWITH[c] \"c\"")
        XCTAssertEqual(try canonical("name LIKE[c] 'a*b?'"), "name LIKE[c] \"a*b?\"")
        XCTAssertEqual(try canonical("name ==[c] 'x'"), "name ==[c] \"x\"")
    }

    func testInfixNotBeforeMembershipAndTextOperators() throws {
        XCTAssertEqual(try canonical("state NOT IN {'a'}"), "NOT state IN {\"a\"}")
        XCTAssertEqual(try canonical("name not like 'a*'"), "NOT name LIKE \"a*\"")
        XCTAssertEqual(try canonical("count NOT BETWEEN {1, 2}"), "NOT count BETWEEN {1, 2}")
    }

    func testLiteralsOfEveryKind() throws {
        XCTAssertEqual(try canonical("a == nil AND b == NULL"), "a == nil AND b == nil")
        XCTAssertEqual(try canonical("a == true AND b == NO AND c == yes"), "a == TRUE AND b == FALSE AND c == TRUE")
        XCTAssertEqual(try canonical("a == -9223372036854775808"), "a == -9223372036854775808")
        XCTAssertEqual(try canonical("a == 2.5e-3"), "a == 0.0025")
        XCTAssertEqual(try canonical("a == 5.0"), "a == 5.0")
        XCTAssertEqual(try canonical("a == -0.0"), "a == -0.0")
        XCTAssertEqual(try canonical("a == 1E+20"), "a == 1e+20")
        XCTAssertEqual(try canonical("a == $since"), "a == $since")
        XCTAssertEqual(try canonical(#"a == "tab\there \"q\" \\ \u{e9}\0""#), #"a == "tab\there \"q\" \\ é\0""#)
        XCTAssertEqual(try canonical("a == 'it\\'s'"), #"a == "it's""#)
        XCTAssertEqual(try canonical("a == \"Grüße 😀\""), "a == \"Grüße 😀\"")
    }

    func testDateLiterals() throws {
        func seconds(_ text: String) throws -> Double {
            guard case .comparison(let c) = try ParsedPredicate("at == \(text)").root, case .value(let v) = c.operand,
                case .date(let d) = v.kind
            else { throw XCTSkip("not a date") }
            return d
        }
        XCTAssertEqual(try seconds(#"date("1970-01-01T00:00:00Z")"#), 0)
        XCTAssertEqual(try seconds(#"date("2026-11-30T10:00:00Z")"#), 1_796_032_800)
        XCTAssertEqual(try seconds(#"DATE("2026-11-30T11:00:00+01:00")"#), 1_796_032_800)
        XCTAssertEqual(try seconds(#"date("2026-11-30t09:30:00-00:30")"#), 1_796_032_800)
        XCTAssertEqual(try seconds(#"date("2026-11-30 10:00:00.25z")"#), 1_796_032_800.25)
        XCTAssertEqual(try seconds(#"date("2026-11-30")"#), 1_795_996_800)
        XCTAssertEqual(try seconds(#"date("2000-02-29T00:00:00Z")"#), 951_782_400)
        XCTAssertEqual(try seconds(#"date("1969-12-31T23:59:59Z")"#), -1)
        XCTAssertEqual(try seconds("date(1796032800)"), 1_796_032_800)
        XCTAssertEqual(try seconds("date(-1.5)"), -1.5)
        // The nearest double to the text's value, as the wire's dates read it (adding a fraction
        // rounded on its own gave the next double up here).
        XCTAssertEqual(try seconds(#"date("1970-01-01T00:00:01.703108Z")"#), 1.703108)
        XCTAssertEqual(try seconds(#"date("1969-12-31T23:59:58.296892Z")"#), -1.703108)
        XCTAssertEqual(try canonical(#"at > date("1970-01-01T00:00:01Z")"#), "at > date(1.0)")
    }

    func testEscapedNamesAndKeywordAttributes() throws {
        XCTAssertEqual(try canonical("#in == 'x' AND #desc == 1"), "#in == \"x\" AND #desc == 1")
        XCTAssertEqual(try canonical("date == 1"), "date == 1")
        XCTAssertEqual(try canonical("_x9 == 1"), "_x9 == 1")
        // NSPredicate words the parser refuses keep their # too, or the canonical text would not parse.
        XCTAssertEqual(try canonical("#ANY >= 'z' OR #subquery == 1"), "#ANY >= \"z\" OR #subquery == 1")
    }

    func testRangesPointIntoTheSource() throws {
        let parsed = try ParsedPredicate("  name ==[c] \"é\" AND count IN {1, $n}")
        guard case .and(let terms) = parsed.root, case .comparison(let a) = terms[0], case .comparison(let b) = terms[1]
        else {
            return XCTFail("\(parsed.root)")
        }
        XCTAssertEqual(a.attributeRange, SourceRange(2, 6))
        XCTAssertEqual(a.opRange, SourceRange(7, 9))
        XCTAssertEqual(a.operand.range, SourceRange(13, 17))  // "é" is two bytes
        XCTAssertEqual(b.attributeRange.start, 22)
        XCTAssertEqual(b.operand.range, SourceRange(31, 38))
        XCTAssertEqual(parsed.parameterNames, ["n"])
    }

    func testParsesFromBytes() throws {
        let parsed = try ParsedPredicate(utf8: Array("name == \"ß\"".utf8))
        XCTAssertEqual(parsed.description, "name == \"ß\"")
    }

    func testParameterNamesOnceInOrder() throws {
        let parsed = try ParsedPredicate("a == $x OR b IN {$y, $x} OR c BETWEEN {$z, $y}")
        XCTAssertEqual(parsed.parameterNames, ["x", "y", "z"])
    }

    func testLimitsAreReachable() throws {
        let deepest =
            String(repeating: "(", count: QueryLimits.maxDepth) + "a == 1"
            + String(repeating: ")", count: QueryLimits.maxDepth)
        XCTAssertNoThrow(try ParsedPredicate(deepest))
        let nots = String(repeating: "NOT ", count: QueryLimits.maxDepth) + "a == 1"
        XCTAssertNoThrow(try ParsedPredicate(nots))
        let list = "a IN {" + (0..<QueryLimits.maxListCount).map(String.init).joined(separator: ",") + "}"
        XCTAssertNoThrow(try ParsedPredicate(list))
        let many = Array(repeating: "a == 1", count: QueryLimits.maxComparisons).joined(separator: " OR ")
        XCTAssertNoThrow(try ParsedPredicate(many))
    }
}
