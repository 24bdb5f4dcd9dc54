import Foundation
import SeamQuery
import SeamSchema
import SeamStore
import XCTest

/// Entities the query tests run against.
enum Fixtures {
    /// One optional attribute of every type, plus one named like a keyword.
    static let thing = Entity(
        "Thing",
        attributes: [
            Attribute("uuid", .uuid),
            Attribute("name", .string, optional: true),
            Attribute("count", .integer, optional: true),
            Attribute("score", .double, optional: true),
            Attribute("flag", .bool, optional: true),
            Attribute("at", .date, optional: true),
            Attribute("ref", .uuid, optional: true),
            Attribute("meta", .json, optional: true),
            Attribute("data", .binary, optional: true),
            Attribute("in", .string, optional: true),
        ]
    )

    /// Shaped like the timer app's Session.
    static let session = Entity(
        "Session",
        attributes: [
            Attribute("uuid", .uuid),
            Attribute("timerUUID", .uuid, optional: true),
            Attribute("name", .string),
            Attribute("state", .string),
            Attribute("startedAt", .date),
            Attribute("stepIndex", .integer),
        ]
    )

    static let otherEntity = Entity("Other", attributes: [Attribute("uuid", .uuid), Attribute("name", .string)])

    /// A row of `Thing` with `uuid` and the given values.
    static func row(_ values: [String: AttributeValue], uuid: String? = nil) -> [String: AttributeValue] {
        var row = values
        row["uuid"] = .uuid(uuid ?? UUIDText.random())
        return row
    }
}

/// The seeded generator of every randomised query test.
typealias SeededGenerator = SplitMix64

/// Loop counts and seeds from the environment, so that CI runs modestly and a soak runs long.
enum TestEnvironment {
    static func iterations(_ variable: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[variable].flatMap(Int.init) ?? value
    }

    /// `SEAM_TEST_SEED` to replay a failure, else a fresh seed (printed by the caller).
    static func seed() -> UInt64 {
        ProcessInfo.processInfo.environment["SEAM_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
    }
}

/// An in-memory SQLite database holding one entity's table, laid out as the store lays it out.
final class SQLiteFixture {
    let database: Database
    let entity: Entity

    init(_ entity: Entity) throws {
        self.entity = entity
        database = try Database(path: ":memory:")
        try database.execute(SchemaSQL.createTable(entity))
    }

    func insert(_ rows: [[String: AttributeValue]]) throws {
        let names = entity.attributes.map(\.name)
        let sql =
            "INSERT INTO \(SchemaSQL.quote(entity.name)) (\(names.map(SchemaSQL.quote).joined(separator: ", ")))"
            + " VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))"
        let statement = try database.prepare(sql)
        for row in rows {
            try statement.bind(names.map { row[$0] ?? .null })
            while try statement.step() {}
        }
    }

    func clear() throws {
        try database.execute("DELETE FROM \(SchemaSQL.quote(entity.name))")
    }

    /// The uuids SQLite selects with `predicate`, in `sorting`'s order (else by uuid).
    func uuids(where predicate: CheckedPredicate, orderBy sorting: Sorting? = nil) throws -> [String] {
        let query = try CompiledSQL.select(["uuid"], from: entity, where: predicate, orderBy: sorting)
        let rows = try database.rows(query.sql, query.arguments)
        let uuids = rows.map { $0[0].stringValue ?? "?" }
        return sorting == nil ? uuids.sorted() : uuids
    }
}

extension XCTestCase {
    /// Asserts that `body` throws a `QueryError` of `kind` at byte `offset`, and returns it.
    @discardableResult
    func assertQueryError<T>(
        _ kind: QueryError.Kind, at offset: Int, file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> T
    ) -> QueryError? {
        do {
            let value = try body()
            XCTFail("expected \(kind) at \(offset), got \(value)", file: file, line: line)
        } catch let error as QueryError {
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
            XCTAssertEqual(error.offset, offset, "\(error)", file: file, line: line)
            XCTAssertFalse(error.message.isEmpty, file: file, line: line)
            return error
        } catch {
            XCTFail("expected a QueryError, got \(error)", file: file, line: line)
        }
        return nil
    }
}

/// Quotes `s` as a predicate string literal, independently of SeamQuery's own printer.
func quoted(_ s: String, single: Bool = false) -> String {
    let quote: Character = single ? "'" : "\""
    var out = String(quote)
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\\": out += "\\\\"
        case "\"" where !single, "'" where single: out += "\\" + String(scalar)
        case "\0": out += "\\0"
        case _ where scalar.value < 0x20: out += "\\u{\(String(scalar.value, radix: 16))}"
        default: out.unicodeScalars.append(scalar)
        }
    }
    out.append(quote)
    return out
}
