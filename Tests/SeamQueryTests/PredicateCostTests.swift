import SeamQuery
import SeamSchema
import XCTest

/// The cost model of a predicate (`PredicateCost`): cheap predicates stay cheap, what a careless
/// or hostile client writes is priced well past the default limit (2,000).
final class PredicateCostTests: XCTestCase {
    private let session = Entity("Session", attributes: [
        Attribute("name", .string), Attribute("state", .string), Attribute("startedAt", .integer),
    ])

    private func cost(_ text: String) throws -> Int {
        PredicateCost.perRow(try CheckedPredicate(text, entity: session))
    }

    func testTheQueriesClientsMakeCostLittle() throws {
        XCTAssertEqual(try cost(#"state == "running""#), 1)
        XCTAssertEqual(try cost(#"state IN {"running", "paused"} AND startedAt > 5"#), 2)
        XCTAssertLessThan(try cost(#"name BEGINSWITH "tea""#), 5)
        XCTAssertLessThan(try cost(#"name LIKE "*kettle*""#), 30)
    }

    func testWildcardsAndWidthAddUp() throws {
        XCTAssertGreaterThan(try cost(#"name LIKE "*a*b*c*d*""#), try cost(#"name LIKE "*abcd*""#))
        let wide = (0..<50).map { #"name == "n\#($0)""# }.joined(separator: " OR ")
        XCTAssertEqual(try cost(wide), 50)
        let list = "{" + (0..<320).map { #""v\#($0)""# }.joined(separator: ", ") + "}"
        XCTAssertEqual(try cost("name IN \(list)"), 21)
    }

    /// The attack the issue found: 500 patterns of 60 characters with `?`s, joined by OR.
    func testFiveHundredWildPatternsArePricedFarPastTheLimit() throws {
        let pattern = String(repeating: "ab?", count: 20)
        let text = (0..<500).map { #"name LIKE "*\#(pattern)*q\#($0)""# }.joined(separator: " OR ")
        XCTAssertGreaterThan(try cost(text), 10 * 2_000)
    }
}
