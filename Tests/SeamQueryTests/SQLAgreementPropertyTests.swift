import SeamQuery
import SeamSchema
import SeamStore
import XCTest

/// Random rows and random predicates: SQLite and the in-memory evaluator must select the same
/// rows, and SQLite's ORDER BY and the in-memory comparator must put them in the same order.
///
/// `SEAM_PROPERTY_ITERATIONS` sets the number of rounds (each: 40 fresh rows, 12 predicates,
/// 3 sorts); `SEAM_TEST_SEED` replays a printed seed.
final class SQLAgreementPropertyTests: XCTestCase {
    private let thing = Fixtures.thing

    func testRandomPredicatesAndSortsAgreeWithSQLite() throws {
        let rounds = TestEnvironment.iterations("SEAM_PROPERTY_ITERATIONS", default: 150)
        let seed = TestEnvironment.seed()
        print("SQLAgreementPropertyTests: seed \(seed) (replay: SEAM_TEST_SEED=\(seed)), \(rounds) rounds")
        var random = RandomQueries(seed: seed)
        let fixture = try SQLiteFixture(thing)
        var predicates = 0
        var sorts = 0
        var matched = 0
        var failures = 0
        for round in 0..<rounds where failures < 5 {
            let rows = (0..<40).map { _ in random.row() }
            try fixture.clear()
            try fixture.insert(rows)
            for _ in 0..<12 {
                let (text, parameters) = random.predicate()
                let predicate = try CheckedPredicate(text, entity: thing, parameters: parameters)
                let memory = rows.filter(predicate.matches).map(Self.uuid).sorted()
                let sql = try fixture.uuids(where: predicate)
                matched += memory.count
                predicates += 1
                if memory != sql {
                    failures += 1
                    report(
                        round: round, seed: seed, text: text, parameters: parameters, predicate: predicate,
                        memory: memory, sql: sql, rows: rows)
                }
            }
            for _ in 0..<3 {
                let sortText = random.sortText()
                let sorting = try Sorting(sortText, entity: thing)
                let (text, parameters) = random.predicate()
                let predicate = try CheckedPredicate(text, entity: thing, parameters: parameters)
                let memoryRows = sorting.sorted(rows.filter(predicate.matches))
                let sql = try fixture.uuids(where: predicate, orderBy: sorting)
                sorts += 1
                if memoryRows.map(Self.uuid) != sql {
                    failures += 1
                    XCTFail(
                        "round \(round), seed \(seed): order differs for sort '\(sortText)' (\(sorting.sql)) "
                            + "where \(text)\n memory \(memoryRows.map(Self.uuid))\n sqlite \(sql)"
                    )
                }
                checkInsertionIndexes(sorting, memoryRows)
            }
        }
        print(
            "SQLAgreementPropertyTests: \(predicates) predicates and \(sorts) sorts compared, "
                + "\(matched) row matches, \(failures) failures"
        )
        XCTAssertGreaterThan(matched, 0, "the generator must produce predicates that match rows")
    }

    /// Each row, taken out of the sorted list, goes back where it was.
    private func checkInsertionIndexes(_ sorting: Sorting, _ sorted: [[String: AttributeValue]]) {
        for (i, row) in sorted.enumerated() {
            var without = sorted
            without.remove(at: i)
            XCTAssertEqual(sorting.insertionIndex(of: row, in: without), i, "insertion index under \(sorting)")
        }
    }

    private static func uuid(_ row: [String: AttributeValue]) -> String { row["uuid"]?.stringValue ?? "?" }

    private func report(
        round: Int, seed: UInt64, text: String, parameters: [String: AttributeValue],
        predicate: CheckedPredicate, memory: [String], sql: [String], rows: [[String: AttributeValue]]
    ) {
        let differing = Set(memory).symmetricDifference(sql)
        let examples = rows.filter { differing.contains(Self.uuid($0)) }.prefix(3).map { row in
            row.filter { predicate.attributes.contains($0.key) }.map { "\($0.key)=\($0.value)" }.sorted().joined(
                separator: " ")
        }
        XCTFail(
            """
            round \(round), seed \(seed): SQLite and memory disagree
              predicate: \(text)
              parameters: \(parameters)
              SQL: \(predicate.sql)
              memory selects \(memory.count), SQLite \(sql.count); rows that differ: \(examples)
            """)
    }
}
