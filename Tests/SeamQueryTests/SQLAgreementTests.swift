import SeamQuery
import SeamSchema
import SeamStore
import XCTest

/// Hand-picked edge cases, each with its expected answer, run in memory and in SQLite.
final class SQLAgreementTests: XCTestCase {
    private struct Case {
        let predicate: String
        let row: [String: AttributeValue]
        var parameters: [String: AttributeValue] = [:]
        let expected: Bool
    }

    private static let big = Int64(1) << 53
    private static let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"

    private let cases: [Case] = [
        // nil, as NSPredicate
        Case(predicate: "count == nil", row: [:], expected: true),
        Case(predicate: "count != 5", row: [:], expected: true),
        Case(predicate: "count < 5", row: [:], expected: false),
        Case(predicate: "NOT count < 5", row: [:], expected: true),
        Case(predicate: "NOT count IN {1, 2}", row: [:], expected: true),
        Case(predicate: "count IN {1, nil}", row: [:], expected: true),
        Case(predicate: "NOT name LIKE '*'", row: [:], expected: true),
        Case(predicate: "NOT name CONTAINS 'a'", row: [:], expected: true),
        Case(predicate: "count > $p", row: ["count": .integer(1)], parameters: ["p": .null], expected: false),
        Case(predicate: "NOT count > $p", row: ["count": .integer(1)], parameters: ["p": .null], expected: true),
        // numbers, exactly
        Case(predicate: "score == 9007199254740993", row: ["score": .double(Double(big))], expected: false),
        Case(predicate: "score < 9007199254740993", row: ["score": .double(Double(big))], expected: true),
        Case(predicate: "count > 9007199254740992.0", row: ["count": .integer(big + 1)], expected: true),
        Case(predicate: "count IN {9007199254740992.0}", row: ["count": .integer(big + 1)], expected: false),
        Case(predicate: "score IN {9007199254740993}", row: ["score": .double(Double(big))], expected: false),
        Case(
            predicate: "score == $p", row: ["score": .double(Double(big))], parameters: ["p": .integer(big + 1)],
            expected: false),
        Case(predicate: "count < 9223372036854775807.0", row: ["count": .integer(.max)], expected: true),
        Case(predicate: "score > 9223372036854775807", row: ["score": .double(.infinity)], expected: true),
        Case(predicate: "score == 0", row: ["score": .double(-0.0)], expected: true),
        Case(predicate: "score == nil", row: ["score": .double(.nan)], expected: true),
        Case(predicate: "score == 3", row: ["score": .integer(3)], expected: true),
        Case(predicate: "count == 3.0", row: ["count": .double(3)], expected: true),
        Case(predicate: "count < 3.5", row: ["count": .integer(3)], expected: true),
        Case(predicate: "at == 1796032800", row: ["at": .date(1_796_032_800)], expected: true),
        // text, by bytes
        Case(predicate: "name == \"e\u{301}\"", row: ["name": .string("\u{E9}")], expected: false),
        Case(predicate: "name < 'a'", row: ["name": .string("Z")], expected: true),
        Case(predicate: "name > 'z'", row: ["name": .string("é")], expected: true),
        Case(predicate: "name == 'a\\0b'", row: ["name": .string("a\u{0}b")], expected: true),
        Case(predicate: "name == 'a\\0c'", row: ["name": .string("a\u{0}b")], expected: false),
        Case(predicate: "name ==[c] 'a\\0C'", row: ["name": .string("A\u{0}c")], expected: true),
        Case(predicate: "name ==[c] 'a\\0d'", row: ["name": .string("A\u{0}c")], expected: false),
        Case(predicate: "name ==[c] 'É'", row: ["name": .string("é")], expected: false),
        Case(predicate: "name >[c] '_'", row: ["name": .string("A")], expected: true),
        Case(predicate: "name > '_'", row: ["name": .string("A")], expected: false),
        Case(predicate: "name BEGINSWITH 'ab'", row: ["name": .string("abc")], expected: true),
        Case(predicate: "name BEGINSWITH 'Ab'", row: ["name": .string("abc")], expected: false),
        Case(predicate: "name BEGINSWITH[c] 'Ab'", row: ["name": .string("abc")], expected: true),
        Case(predicate: "name BEGINSWITH 'abcd'", row: ["name": .string("abc")], expected: false),
        Case(predicate: "name BEGINSWITH ''", row: ["name": .string("")], expected: true),
        Case(predicate: "NOT name BEGINSWITH 'a'", row: ["name": .string("")], expected: true),  // substr(x'') is NULL
        Case(predicate: "NOT name ENDSWITH[c] 'a'", row: ["name": .string("")], expected: true),
        Case(predicate: "NOT name CONTAINS 'a'", row: ["name": .string("")], expected: true),
        Case(predicate: "name CONTAINS 'b\\0'", row: ["name": .string("ab\u{0}c")], expected: true),
        Case(predicate: "name ENDSWITH '\\0c'", row: ["name": .string("ab\u{0}c")], expected: true),
        Case(predicate: "name ENDSWITH 'xabc'", row: ["name": .string("abc")], expected: false),
        Case(predicate: "name CONTAINS \"e\u{301}\"", row: ["name": .string("\u{E9}")], expected: false),
        Case(predicate: "name LIKE 'a%'", row: ["name": .string("abc")], expected: false),
        Case(predicate: "name LIKE 'A*'", row: ["name": .string("abc")], expected: false),
        Case(predicate: "name LIKE[c] 'A*'", row: ["name": .string("abc")], expected: true),
        Case(predicate: "name LIKE '?'", row: ["name": .string("é")], expected: true),
        Case(predicate: "name LIKE '??'", row: ["name": .string("é")], expected: false),
        Case(predicate: "name LIKE '[*'", row: ["name": .string("[x")], expected: true),
        Case(predicate: "name LIKE '\\\\**'", row: ["name": .string("*x")], expected: true),
        Case(predicate: "name LIKE '\\\\**'", row: ["name": .string("x*")], expected: false),
        Case(predicate: "name LIKE 'a*'", row: ["name": .string("a\u{0}b")], expected: false),
        Case(predicate: "name LIKE '*'", row: ["name": .string("\u{0}")], expected: false),
        // other types
        Case(predicate: "ref == '0F8FAD5B-D9CB-469F-A165-70867728950E'", row: ["ref": .uuid(uuid)], expected: true),
        Case(predicate: "meta == '[1, 2]'", row: ["meta": .json("[1,2]")], expected: false),
        Case(predicate: "data > $d", row: ["data": .binary([1, 2])], parameters: ["d": .binary([1])], expected: true),
        Case(predicate: "data == $d", row: ["data": .binary([])], parameters: ["d": .binary([])], expected: true),
        Case(predicate: "flag == FALSE", row: ["flag": .bool(false)], expected: true),
        Case(predicate: "flag != TRUE", row: [:], expected: true),
    ]

    func testEdgeCasesAgree() throws {
        let fixture = try SQLiteFixture(Fixtures.thing)
        for c in cases {
            let row = Fixtures.row(c.row)
            try fixture.clear()
            try fixture.insert([row])
            let predicate = try CheckedPredicate(c.predicate, entity: Fixtures.thing, parameters: c.parameters)
            let inSQL = try !fixture.uuids(where: predicate).isEmpty
            XCTAssertEqual(predicate.matches(row), c.expected, "in memory: \(c.predicate) on \(c.row)")
            XCTAssertEqual(inSQL, c.expected, "in SQLite: \(c.predicate) on \(c.row) — \(predicate.sql)")
        }
    }
    /// A pattern with `?` and inner `*`s runs in SQLite through seam_like, the broker's own
    /// matcher: same answers as in memory, on long texts too (SQLite's GLOB took about a quarter
    /// of a second per 50 KB row for such a pattern, backtracking).
    func testLongLikePatternsAgreeInSQLite() throws {
        let fixture = try SQLiteFixture(Fixtures.thing)
        let long = String(repeating: "a", count: 50_000)
        let rows = [Fixtures.row(["name": .string(long)]), Fixtures.row(["name": .string(long + "b")]),
                    Fixtures.row(["name": .string("A" + long.dropFirst())]), Fixtures.row(["name": .string("a\u{0}b")])]
        try fixture.insert(rows)
        let run = String(repeating: "a?", count: 1000)
        for text in ["name LIKE '*\(run)b'", "name LIKE '*\(run)*'", "name LIKE[c] '*?\(run.uppercased())'", "name LIKE 'a*b'",
                     "name LIKE '*\(run)?b*'", "NOT name LIKE '*?'"] {
            let predicate = try CheckedPredicate(text, entity: Fixtures.thing)
            let inMemory = rows.filter { predicate.matches($0) }.compactMap { $0["uuid"]?.stringValue }.sorted()
            XCTAssertEqual(try fixture.uuids(where: predicate).sorted(), inMemory, String(text.prefix(40)))
        }
    }

}
