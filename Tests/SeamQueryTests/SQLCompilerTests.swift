import SeamQuery
import SeamSchema
import SeamStore
import XCTest

/// The SQL forms, the promise that caller text never reaches SQL, the limits holding in SQLite,
/// and a table of edge cases where memory and SQLite must give the expected answer.
final class SQLCompilerTests: XCTestCase {
    private let thing = Fixtures.thing

    private func sql(_ text: String, _ parameters: [String: AttributeValue] = [:]) throws -> CompiledSQL {
        try CheckedPredicate(text, entity: thing, parameters: parameters).sql
    }

    func testForms() throws {
        XCTAssertEqual(try sql("count == 5"), CompiledSQL(sql: #"("count" IS ?)"#, arguments: [.integer(5)]))
        XCTAssertEqual(try sql("count != nil").sql, #"NOT ("count" IS NULL)"#)
        XCTAssertEqual(
            try sql("name ==[c] 'AbC'"), CompiledSQL(sql: #"(lower("name") IS ?)"#, arguments: [.string("abc")]))
        XCTAssertEqual(try sql("score < 1.5").sql, #"("score" IS NOT NULL AND "score" < ?)"#)
        XCTAssertEqual(try sql("count IN {1, nil}").sql, #"("count" IS NULL OR "count" IN (?))"#)
        XCTAssertEqual(
            try sql("name BEGINSWITH 'é'"),
            CompiledSQL(
                sql: #"("name" IS NOT NULL AND coalesce(substr(CAST("name" AS BLOB), 1, ?) = ?, 0))"#,
                arguments: [.integer(2), .binary([0xC3, 0xA9])]))
        XCTAssertEqual(try sql("name ENDSWITH 'ab'").arguments, [.integer(-2), .binary([0x61, 0x62])])
        // A prefix is a GLOB (linear in SQLite, and an index can answer it); any other pattern
        // goes to seam_like, the broker's matcher, given the pattern as LIKE text again.
        XCTAssertEqual(try sql(#"name LIKE[c] "A\\?[*""#).arguments, [.string("a[?][[]*")])
        XCTAssertTrue(try sql(#"name LIKE "A\\?[*""#).sql.contains(" GLOB ?"))
        XCTAssertEqual(try sql("name LIKE[c] 'A*[?'"),
                       CompiledSQL(sql: #"coalesce(seam_like(?, "name", 1), 0)"#, arguments: [.string("a*[?")]))
        XCTAssertEqual(try sql(#"name LIKE "*\\*x""#).arguments, [.string(#"*\*x"#)], "an escaped star stays escaped")
        XCTAssertEqual(
            try sql("(count == 1 OR count == 2) AND NOT (flag == TRUE OR at > 0)").sql,
            #"(("count" IS ?) OR ("count" IS ?)) AND NOT (("flag" IS ?) OR ("at" IS NOT NULL AND "at" > ?))"#)
        XCTAssertEqual(
            try sql("ref == '0F8FAD5B-D9CB-469F-A165-70867728950E'").arguments,
            [.string("0f8fad5b-d9cb-469f-a165-70867728950e")])
        XCTAssertEqual(try sql("flag == YES").arguments, [.integer(1)])
        XCTAssertEqual(try sql("at == date(\"1970-01-01T00:00:10Z\")").arguments, [.double(10)])
    }

    func testSelectAndCount() throws {
        let p = try CheckedPredicate("count > $n", entity: thing, parameters: ["n": .integer(3)])
        let s = try Sorting("-count, name[c]", entity: thing)
        let q = try CompiledSQL.select(["uuid", "name"], from: thing, where: p, orderBy: s, limit: 10)
        XCTAssertEqual(
            q.sql,
            #"SELECT "uuid", "name" FROM "Thing" WHERE ("count" IS NOT NULL AND "count" > ?) "#
                + #"ORDER BY "count" DESC, lower("name") ASC, "uuid" ASC LIMIT ?"#
        )
        XCTAssertEqual(q.arguments, [.integer(3), .integer(10)])
        XCTAssertEqual(try CompiledSQL.count(from: thing).sql, #"SELECT count(*) FROM "Thing""#)
    }

    /// Whatever a caller writes, the SQL text holds only fixed words, `?`, and quoted identifiers
    /// of the schema.
    func testNoCallerTextReachesSQL() throws {
        let hostile = #"'); DROP TABLE "Thing"; --"#
        let texts = [
            "name == \(quoted(hostile))", "name LIKE \(quoted(hostile))", "name CONTAINS[c] \(quoted(hostile))",
            "name IN {\(quoted(hostile)), $p}", "meta == \(quoted(hostile))", "count == 9223372036854775807",
            "at > date(\"2026-11-30T10:00:00Z\")", "#in BETWEEN {'x', \(quoted(hostile))}",
        ]
        for text in texts {
            let compiled = try sql(text, ["p": .string(hostile)])
            XCTAssertFalse(compiled.sql.contains("DROP"), compiled.sql)
            XCTAssertTrue(Self.isFixedVocabulary(compiled.sql, identifiers: thing.attributes.map(\.name)), compiled.sql)
        }
    }

    /// Whether `sql` is made only of the compiler's fixed vocabulary and quoted schema names.
    static func isFixedVocabulary(_ sql: String, identifiers: [String]) -> Bool {
        var rest = sql
        for name in identifiers { rest = rest.replacingOccurrences(of: "\"\(name)\"", with: " ") }
        for word in [
            "IS NOT NULL", "IS NULL", "IS NOT", "IS", "AND", "OR", "NOT", "IN", "GLOB", "CAST", "AS BLOB",
            "lower", "substr", "instr", "coalesce", "x'00'",
        ] {
            rest = rest.replacingOccurrences(of: word, with: " ")
        }
        return rest.allSatisfy { " ()?,=<>-01".contains($0) }
    }

    // MARK: - Limits, in SQLite itself

    /// The deepest predicate the language accepts, with the heaviest comparisons, must still
    /// compile in SQLite 3.40, whose parser stack is fixed at 100 entries.
    func testDeepestPredicateRunsInSQLite() throws {
        let fixture = try SQLiteFixture(thing)
        let leaves = ["name BEGINSWITH[c] 'a'", "NOT name LIKE[c] 'b*'", "count NOT IN {1, nil}", "name ENDSWITH 'x'"]
        var text = "score BETWEEN {1, 2}"
        for level in 0..<QueryLimits.maxDepth {
            text = "\(leaves[level % leaves.count]) \(level % 2 == 0 ? "OR" : "AND") (\(text))"
        }
        let p = try CheckedPredicate(text, entity: thing)
        XCTAssertNoThrow(try fixture.uuids(where: p, orderBy: try Sorting("-name[c], count", entity: thing)))

        let nots =
            String(repeating: "NOT (name CONTAINS 'a' OR ", count: QueryLimits.maxDepth / 2) + "count == 1"
            + String(repeating: ")", count: QueryLimits.maxDepth / 2)
        XCTAssertNoThrow(try fixture.uuids(where: try CheckedPredicate(nots, entity: thing)))
    }

    /// The most comparisons and values, nested as deep as allowed, stay within SQLite's
    /// expression depth (1,000) and variable limits.
    func testLargestPredicateRunsInSQLite() throws {
        let fixture = try SQLiteFixture(thing)
        try fixture.insert([Fixtures.row(["count": .integer(499)])])
        let chain = (0..<(QueryLimits.maxComparisons - QueryLimits.maxDepth)).map { "count == \($0)" }.joined(
            separator: " OR ")
        let wrapped =
            String(repeating: "(name == 'x' OR ", count: QueryLimits.maxDepth) + chain
            + String(repeating: ")", count: QueryLimits.maxDepth)
        let p = try CheckedPredicate(wrapped, entity: thing)
        XCTAssertEqual(try fixture.uuids(where: p).count, 0)

        let list = "{" + (0..<QueryLimits.maxListCount).map(String.init).joined(separator: ", ") + "}"
        let lists = Array(repeating: "count IN \(list)", count: QueryLimits.maxValues / QueryLimits.maxListCount)
        let wide = try CheckedPredicate(lists.joined(separator: " AND "), entity: thing)
        XCTAssertEqual(wide.sql.arguments.count, QueryLimits.maxValues)
        XCTAssertEqual(try fixture.uuids(where: wide).count, 1)
    }

    func testLongestPatternRunsInSQLite() throws {
        let fixture = try SQLiteFixture(thing)
        let value = String(repeating: "*?[", count: QueryLimits.maxPatternBytes / 3)
        try fixture.insert([Fixtures.row(["name": .string(value)])])
        let pattern = String(repeating: "\\*\\?[", count: QueryLimits.maxPatternBytes / 5)  // escapes grow most in GLOB
        let p = try CheckedPredicate("name LIKE \(quoted(pattern + "*"))", entity: thing)
        XCTAssertEqual(try fixture.uuids(where: p).count, 1)
    }
}
