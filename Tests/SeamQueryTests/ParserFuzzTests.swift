import SeamQuery
import SeamSchema
import SeamStore
import XCTest

/// Feeds the parser random and mutated input. Every input must either parse or fail with a
/// `QueryError` whose offset lies inside the input; whatever parses must print to canonical text
/// that parses back to the same text; whatever also checks must run in SQLite with the same
/// result as in memory.
///
/// `SEAM_FUZZ_ITERATIONS` sets the number of inputs; `SEAM_TEST_SEED` replays a printed seed.
/// (libFuzzer's `main` clashes with XCTest's, hence a seeded generator.)
final class ParserFuzzTests: XCTestCase {
    private struct Tally {
        var ran = 0
        var parsed = 0
        var checked = 0
        var rejected: [String: Int] = [:]
    }

    func testParserSurvivesRandomInput() throws {
        let iterations = TestEnvironment.iterations("SEAM_FUZZ_ITERATIONS", default: 5_000)
        let seed = TestEnvironment.seed()
        print("ParserFuzzTests: seed \(seed) (replay: SEAM_TEST_SEED=\(seed)), \(iterations) inputs")
        var random = RandomQueries(seed: seed)
        let fixture = try SQLiteFixture(Fixtures.thing)
        let rows = (0..<12).map { _ in random.row() }
        try fixture.insert(rows)
        var tally = Tally()
        for i in 0..<iterations {
            let input = makeInput(&random, iteration: i)
            try run(input, random: &random, fixture: fixture, rows: rows, tally: &tally, seed: seed)
        }
        let kinds = tally.rejected.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(
            separator: ", ")
        print(
            "ParserFuzzTests: \(tally.ran) inputs ran: \(tally.parsed) parsed, "
                + "\(tally.checked) checked and run in SQLite; rejected: \(kinds)"
        )
        XCTAssertEqual(tally.ran, iterations)
        XCTAssertGreaterThan(tally.parsed, 0)
        XCTAssertGreaterThan(tally.rejected.count, 10, "the inputs must reach many kinds of error")
    }

    // MARK: - Inputs

    private static let fragments = [
        "name", "count", "score", "flag", "at", "ref", "meta", "data", "#in", "uuid", "nope", "ANY", "MATCHES", "==",
        "=",
        "!=", "<>", "<", "<=", "=<", ">", ">=", "=>", "=~", "===", "&&", "||", "!", "AND", "OR", "NOT", "IN", "BETWEEN",
        "BEGINSWITH", "CONTAINS", "ENDSWITH", "LIKE", "[c]", "[d]", "[", "]", "(", ")", "{", "}", ",", "-",
        "nil", "TRUE", "FALSE", "TRUEPREDICATE", "FALSEPREDICATE", "1", "-1", "1.5", "1e308", "1e999",
        "9223372036854775808", "0x10",
        "\"a\"", "'b'", "\"é\\u{1F600}\"", "\"\\q\"", "\"unterminated", "$p", "$", "date(\"2026-11-30T10:00:00Z\")",
        "date(\"2026-02-30\")", "date(0)", "date", "\"0F8FAD5B-D9CB-469F-A165-70867728950E\"", " ", "\n", "é", "@", ".",
    ]

    private func makeInput(_ random: inout RandomQueries, iteration: Int) -> [UInt8] {
        switch iteration % 6 {
        case 0: return randomBytes(&random)
        case 1, 2: return mutate(Array(random.predicate().text.utf8), &random)
        case 3: return tokenSoup(&random)
        case 4: return Array(random.predicate().text.utf8)
        default: return pathological(&random)
        }
    }

    private func randomBytes(_ random: inout RandomQueries) -> [UInt8] {
        let interesting: [UInt8] =
            Array("ab =!<>()[]{}\"'\\$#,-.0123456789eE*?".utf8) + [
                0, 0x0A, 0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xA9, 0xED, 0xF4, 0xFF,
            ]
        return (0..<Int.random(in: 0...40, using: &random.rng)).map { _ in random.pick(interesting) }
    }

    private func tokenSoup(_ random: inout RandomQueries) -> [UInt8] {
        let count = Int.random(in: 1...12, using: &random.rng)
        return Array(
            (0..<count).map { _ in random.pick(Self.fragments) }.joined(separator: random.chance(0.8) ? " " : "").utf8)
    }

    /// Deletes, inserts, replaces or duplicates a few spans of `bytes`.
    private func mutate(_ input: [UInt8], _ random: inout RandomQueries) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...3, using: &random.rng) {
            let at = Int.random(in: 0...bytes.count, using: &random.rng)
            let length = min(bytes.count - at, Int.random(in: 0...4, using: &random.rng))
            switch Int.random(in: 0..<4, using: &random.rng) {
            case 0: bytes.removeSubrange(at..<at + length)
            case 1: bytes.insert(contentsOf: Array(random.pick(Self.fragments).utf8), at: at)
            case 2: bytes.replaceSubrange(at..<at + length, with: [UInt8.random(in: 0...255, using: &random.rng)])
            default: bytes.insert(contentsOf: bytes[at..<at + length], at: at)
            }
        }
        return bytes
    }

    /// Inputs at and beyond the bounds: deep nesting, long lists, long text.
    private func pathological(_ random: inout RandomQueries) -> [UInt8] {
        let n = random.pick([QueryLimits.maxDepth, QueryLimits.maxDepth + 1, 1_000, 50_000])
        switch Int.random(in: 0..<5, using: &random.rng) {
        case 0: return Array((String(repeating: "(", count: n) + "count == 1" + String(repeating: ")", count: n)).utf8)
        case 1: return Array((String(repeating: "NOT ", count: n) + "count == 1").utf8)
        case 2: return Array(("count IN {" + Array(repeating: "1", count: n).joined(separator: ",") + "}").utf8)
        case 3: return Array(Array(repeating: "count == 1", count: n / 10 + 1).joined(separator: " OR ").utf8)
        default: return Array(("name == \"" + String(repeating: "é", count: n) + "\"").utf8)
        }
    }

    // MARK: - Running one input

    private func run(
        _ input: [UInt8], random: inout RandomQueries, fixture: SQLiteFixture, rows: [[String: AttributeValue]],
        tally: inout Tally, seed: UInt64
    ) throws {
        tally.ran += 1
        let shown = String(decoding: input.prefix(200), as: UTF8.self)
        let parsed: ParsedPredicate
        do {
            parsed = try ParsedPredicate(utf8: input)
        } catch {
            XCTAssertTrue(
                (0...input.count).contains(error.offset),
                "seed \(seed): offset \(error.offset) outside \(input.count) bytes for \(shown): \(error)")
            XCTAssertFalse(error.message.isEmpty)
            tally.rejected[error.kind.rawValue, default: 0] += 1
            return
        }
        tally.parsed += 1
        let canonical = parsed.description
        do {
            let again = try ParsedPredicate(canonical)
            XCTAssertEqual(again.description, canonical, "seed \(seed): canonical text of \(shown)")
        } catch {
            XCTFail("seed \(seed): canonical text \(canonical) of \(shown) does not parse: \(error)")
        }
        let values: [AttributeValue] = [
            .integer(1), .double(0.5), .string("a"), .null, .bool(true), .binary([1]),
            .uuid("0f8fad5b-d9cb-469f-a165-70867728950e"),
        ]
        let parameters = Dictionary(uniqueKeysWithValues: parsed.parameterNames.map { ($0, random.pick(values)) })
        let checked: CheckedPredicate
        do {
            checked = try parsed.check(against: Fixtures.thing, parameters: parameters)
        } catch {
            XCTAssertTrue(
                (0...input.count).contains(error.offset),
                "seed \(seed): offset \(error.offset) outside input for \(shown)")
            tally.rejected[error.kind.rawValue, default: 0] += 1
            return
        }
        tally.checked += 1
        let memory = rows.filter(checked.matches).compactMap { $0["uuid"]?.stringValue }.sorted()
        XCTAssertEqual(try fixture.uuids(where: checked), memory, "seed \(seed): \(shown) — \(checked.sql)")
    }
}
