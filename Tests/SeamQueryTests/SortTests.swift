import SeamQuery
import SeamSchema
import XCTest

final class SortTests: XCTestCase {
    private let thing = Fixtures.thing

    func testTextForms() throws {
        XCTAssertEqual(try Sorting("name", entity: thing).description, "name, uuid")
        XCTAssertEqual(try Sorting("-name", entity: thing).description, "-name, uuid")
        XCTAssertEqual(try Sorting("name desc, count ASC", entity: thing).description, "-name, count, uuid")
        XCTAssertEqual(try Sorting("name[c] DESCENDING, -#in", entity: thing).description, "-name[c], -#in, uuid")
        XCTAssertEqual(try Sorting("", entity: thing).description, "uuid")
        XCTAssertEqual(
            try Sorting("-uuid, name", entity: thing).description, "-uuid, name", "no implicit key after uuid")
        XCTAssertEqual(
            try Sorting([.init("at", descending: true)], entity: thing).keys.map(\.attribute), ["at", "uuid"])
    }

    func testSQL() throws {
        XCTAssertEqual(
            try Sorting("-count, name[c]", entity: thing).sql, #""count" DESC, lower("name") ASC, "uuid" ASC"#)
    }

    func testSyntaxErrors() {
        assertQueryError(.unexpectedToken, at: 6) { try Sorting("-name desc", entity: thing) }
        assertQueryError(.unexpectedToken, at: 5) { try Sorting("name,", entity: thing) }
        assertQueryError(.unexpectedToken, at: 10) { try Sorting("name desc asc", entity: thing) }
        assertQueryError(.unexpectedToken, at: 0) { try Sorting("1", entity: thing) }
        assertQueryError(.unexpectedToken, at: 0) { try Sorting("desc", entity: thing) }
        assertQueryError(.unexpectedToken, at: 5) { try Sorting("name count", entity: thing) }
        assertQueryError(.invalidOption, at: 5) { try Sorting("name[d]", entity: thing) }
    }

    private func row(_ uuid: String, _ values: [String: AttributeValue]) -> [String: AttributeValue] {
        Fixtures.row(values, uuid: uuid)
    }

    private func uuids(_ sorting: Sorting, _ rows: [[String: AttributeValue]]) -> [String] {
        sorting.sorted(rows).map { $0["uuid"]?.stringValue ?? "?" }
    }

    func testNilSortsFirstAscendingAndLastDescending() throws {
        let rows = [
            row("00000000-0000-0000-0000-000000000001", ["count": .integer(2)]),
            row("00000000-0000-0000-0000-000000000002", [:]),
            row("00000000-0000-0000-0000-000000000003", ["count": .integer(-1)]),
        ]
        XCTAssertEqual(uuids(try Sorting("count", entity: thing), rows).map { $0.suffix(1) }, ["2", "3", "1"])
        XCTAssertEqual(uuids(try Sorting("-count", entity: thing), rows).map { $0.suffix(1) }, ["1", "3", "2"])
    }

    func testTiesBreakByUUID() throws {
        let rows = [
            row("00000000-0000-0000-0000-00000000000b", ["name": .string("x")]),
            row("00000000-0000-0000-0000-00000000000a", ["name": .string("x")]),
        ]
        XCTAssertEqual(uuids(try Sorting("-name", entity: thing), rows).map { $0.suffix(1) }, ["a", "b"])
        XCTAssertEqual(uuids(try Sorting("-uuid", entity: thing), rows).map { $0.suffix(1) }, ["b", "a"])
    }

    func testValuesOrderAsSQLiteOrdersThem() throws {
        let texts = ["b", "a", "B", "é", "ab", "", "e\u{301}"]
        let rows = texts.enumerated().map { i, t in
            row(String(format: "00000000-0000-0000-0000-%012d", i), ["name": .string(t)])
        }
        let byBytes = try Sorting("name", entity: thing).sorted(rows).compactMap { $0["name"]?.stringValue }
        XCTAssertEqual(byBytes, ["", "B", "a", "ab", "b", "e\u{301}", "é"])
        let folded = try Sorting("name[c]", entity: thing).sorted(rows).compactMap { $0["name"]?.stringValue }
        XCTAssertEqual(folded, ["", "a", "ab", "b", "B", "e\u{301}", "é"])

        let numbers: [AttributeValue] = [
            .double(.infinity), .integer(3), .double(2.5), .double(-.infinity), .integer(.max),
            .double(9_223_372_036_854_775_808.0),
        ]
        let numberRows = numbers.enumerated().map { i, v in
            row(String(format: "00000000-0000-0000-0000-%012d", i), ["score": v])
        }
        let order = try Sorting("score", entity: thing).sorted(numberRows).compactMap {
            $0["uuid"]?.stringValue?.suffix(1)
        }
        XCTAssertEqual(order, ["3", "2", "1", "4", "5", "0"], "an integer in a double column is read as a double")
    }

    func testInsertionIndex() throws {
        let sorting = try Sorting("-count", entity: thing)
        let sorted = sorting.sorted((0..<5).map { row(UUIDText.random(), ["count": .integer(Int64($0 * 10))]) })
        XCTAssertEqual(sorting.insertionIndex(of: row(UUIDText.random(), ["count": .integer(25)]), in: sorted), 2)
        XCTAssertEqual(sorting.insertionIndex(of: row(UUIDText.random(), ["count": .integer(99)]), in: sorted), 0)
        XCTAssertEqual(
            sorting.insertionIndex(of: row(UUIDText.random(), [:]), in: sorted), 5, "nil sorts last descending")
        XCTAssertEqual(sorting.insertionIndex(of: row(UUIDText.random(), [:]), in: []), 0)
    }

    func testOrderAgreesWithSQLite() throws {
        let fixture = try SQLiteFixture(thing)
        var random = RandomQueries(seed: 42)
        let rows = (0..<60).map { _ in random.row() }
        try fixture.insert(rows)
        for text in ["name", "-name[c]", "score, -count", "-at", "flag, meta DESC", "data", "-ref, #in[c]", ""] {
            let sorting = try Sorting(text, entity: thing)
            let memory = sorting.sorted(rows).map { $0["uuid"]?.stringValue ?? "?" }
            XCTAssertEqual(try fixture.uuids(where: .all(thing), orderBy: sorting), memory, text)
        }
    }
}
