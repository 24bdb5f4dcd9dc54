import SeamQuery
import SeamSchema
import XCTest

final class ResultWindowTests: XCTestCase {
    private func row(_ uuid: String, _ name: String, _ count: Int64) -> [String: AttributeValue] {
        ["uuid": .uuid(uuid), "name": .string(name), "count": .integer(count)]
    }

    private func uuids(_ rows: [[String: AttributeValue]]) -> [String] {
        rows.map { if case .uuid(let u)? = $0["uuid"] { return u } else { return "?" } }
    }

    func testDiffOfAReorderUsesFewestMoves() {
        let a = row("a", "a", 1), b = row("b", "b", 2), c = row("c", "c", 3), d = row("d", "d", 4)
        let diff = QueryDiff.between([a, b, c, d], [b, c, d, a], fields: ["uuid", "name"])
        XCTAssertEqual(diff.moved, [QueryDiff.Move(uuid: "a", from: 0, to: 3)])
        XCTAssertTrue(diff.inserted.isEmpty && diff.deleted.isEmpty && diff.updated.isEmpty)
        var rows = [a, b, c, d]
        diff.apply(to: &rows)
        XCTAssertEqual(uuids(rows), ["b", "c", "d", "a"])
    }

    /// Whole results compared (a refetch, a resume): the row whose sort key changed is the one
    /// moved, as commit by commit — not the other row, though moving either gives the new order.
    func testWholeResultsCompareMoveTheRowWhoseSortKeyChanged() {
        let bread = row("b", "Bread", 1), tea = row("t", "Tea", 2)
        var wine = bread
        wine["name"] = .string("Wine")
        let diff = QueryDiff.between([bread, tea], [tea, wine], fields: ["uuid", "name"], sortKeys: ["name"])
        XCTAssertEqual(diff.moved, [QueryDiff.Move(uuid: "b", from: 0, to: 1)])
        var rows = [bread, tea]
        diff.apply(to: &rows)
        XCTAssertEqual(uuids(rows), ["t", "b"])
        // A rename that keeps the row where it was is still a move (its keys changed).
        var brie = bread
        brie["name"] = .string("Brie")
        XCTAssertEqual(QueryDiff.between([bread, tea], [brie, tea], fields: ["uuid", "name"], sortKeys: ["name"]).moved,
                       [QueryDiff.Move(uuid: "b", from: 0, to: 0)])
    }

    func testDiffReportsChangedFieldsOnly() {
        let before = row("a", "x", 1)
        var after = before
        after["count"] = .integer(2)
        XCTAssertTrue(QueryDiff.between([before], [after], fields: ["uuid", "name"]).isEmpty, "count is not a field")
        let diff = QueryDiff.between([before], [after], fields: ["uuid", "count"])
        XCTAssertEqual(diff.updated, [QueryDiff.Update(uuid: "a", index: 0, changedKeys: ["count"], row: ["uuid": .uuid("a"), "count": .integer(2)])])
    }

    /// A row pushed out of a limit is deleted and the next one inserted; a row leaving a full
    /// window asks for a refetch.
    func testLimitedWindowKeepsItsWindow() throws {
        let entity = Fixtures.thing
        let sorting = try Sorting("count", entity: entity)
        let all = CheckedPredicate.all(entity)
        let r1 = row("1", "a", 1), r2 = row("2", "b", 2), r3 = row("3", "c", 3)
        var window = ResultWindow(predicate: all, sorting: sorting, limit: 2, fields: ["name"], rows: [r1, r2])
        XCTAssertFalse(window.isComplete)
        let r0 = row("0", "z", 0)
        guard case .diff(let d) = window.apply([(nil, r0)]) else { return XCTFail("expected a diff") }
        XCTAssertEqual(d.inserted.map(\.uuid), ["0"])
        XCTAssertEqual(d.deleted, [QueryDiff.Deletion(uuid: "2", index: 1)])
        XCTAssertEqual(window.apply([(r1, nil)]), .refetch)
        XCTAssertEqual(uuids(window.rows), ["0", "1"], "a refetch leaves the window as it was")
        let d2 = window.replace(with: [r0, r2])
        XCTAssertEqual(d2.deleted.map(\.uuid), ["1"])
        XCTAssertEqual(d2.inserted.map(\.uuid), ["2"])
        // A row sorting past the end of a cut window stays outside.
        guard case .diff(let d3) = window.apply([(nil, r3)]) else { return XCTFail("expected a diff") }
        XCTAssertTrue(d3.isEmpty)
    }

    /// For random commits against random windows, applying each diff to the previous result
    /// always gives exactly the query's result computed afresh; and a result reconstructed from
    /// the changes since an older commit is that older result.
    func testDiffsAlwaysRebuildTheFreshResult() throws {
        let rounds = TestEnvironment.iterations("SEAM_PROPERTY_ITERATIONS", default: 150)
        let seed = TestEnvironment.seed()
        print("ResultWindowTests: seed \(seed) (replay: SEAM_TEST_SEED=\(seed)), \(rounds) rounds")
        var random = RandomQueries(seed: seed)
        let entity = Fixtures.thing
        var refetches = 0, diffs = 0
        for round in 0..<rounds {
            var table: [String: [String: AttributeValue]] = [:]
            for _ in 0..<Int.random(in: 0...12, using: &random.rng) {
                let r = random.row()
                table[QueryDiffUUID.of(r)] = r
            }
            let predicate: CheckedPredicate
            if random.chance(0.3) {
                predicate = CheckedPredicate.all(entity)
            } else {
                let (text, parameters) = random.predicate()
                predicate = try CheckedPredicate(text, entity: entity, parameters: parameters)
            }
            let sorting = try Sorting(random.sortText(), entity: entity)
            let limit: Int? = random.chance(0.5) ? Int.random(in: 0...4, using: &random.rng) : nil
            let fields: [String]? = random.chance(0.5) ? nil : Array(entity.attributes.map(\.name).shuffled(using: &random.rng).prefix(3))
            func fresh(limit: Int?) -> [[String: AttributeValue]] {
                let matching = sorting.sorted(table.values.filter(predicate.matches))
                return limit.map { Array(matching.prefix($0)) } ?? matching
            }
            var window = ResultWindow(predicate: predicate, sorting: sorting, limit: limit, fields: fields, rows: fresh(limit: limit))
            var client = window.result
            let startTable = table
            var touched: [String: [String: AttributeValue]?] = [:]
            for _ in 0..<6 {
                var changes: [(old: [String: AttributeValue]?, new: [String: AttributeValue]?)] = []
                var seen = Set<String>()
                for _ in 0..<Int.random(in: 1...3, using: &random.rng) {
                    let existing = table.keys.sorted().filter { !seen.contains($0) }
                    if existing.isEmpty || random.chance(0.35) {
                        let r = random.row()
                        changes.append((nil, r))
                    } else {
                        let u = random.pick(existing)
                        if random.chance(0.3) {
                            changes.append((table[u], nil))
                        } else {
                            var r = random.row()
                            r["uuid"] = .uuid(u)
                            changes.append((table[u], r))
                        }
                    }
                    let u = QueryDiffUUID.of(changes.last!.new ?? changes.last!.old!)
                    seen.insert(u)
                    if touched[u] == nil { touched[u] = .some(startTable[u]) }
                    table[u] = changes.last!.new
                }
                switch window.apply(changes) {
                case .diff(let d):
                    diffs += 1
                    // Old indexes must name the rows they say (clients apply by index).
                    for del in d.deleted { XCTAssertEqual(QueryDiffUUID.of(client[del.index]), del.uuid, "seed \(seed) round \(round): deletion index") }
                    for m in d.moved { XCTAssertEqual(QueryDiffUUID.of(client[m.from]), m.uuid, "seed \(seed) round \(round): move index") }
                    d.apply(to: &client)
                    for i in d.inserted { XCTAssertEqual(QueryDiffUUID.of(client[i.index]), i.uuid, "seed \(seed) round \(round): insertion index") }
                case .refetch:
                    refetches += 1
                    window.replace(with: fresh(limit: limit)).apply(to: &client)
                }
                let expected = ResultWindow(predicate: predicate, sorting: sorting, limit: limit, fields: fields, rows: fresh(limit: limit)).result
                XCTAssertEqual(text(client), text(expected), "seed \(seed) round \(round): \(predicate) sort \(sorting) limit \(String(describing: limit))")
                XCTAssertEqual(text(window.result), text(expected), "seed \(seed) round \(round)")
                if text(client) != text(expected) { return }
            }
            // What a subscriber that saw the start holds, rebuilt from the changes since.
            let current = fresh(limit: limit.map { $0 + touched.count })
            let before = window.reconstructed(before: touched.mapValues { $0 }, current: current)
            let startWindow = ResultWindow(predicate: predicate, sorting: sorting, limit: limit, fields: fields,
                                           rows: { () -> [[String: AttributeValue]] in
                                               let m = sorting.sorted(startTable.values.filter(predicate.matches))
                                               return limit.map { Array(m.prefix($0)) } ?? m
                                           }())
            XCTAssertEqual(before.map { $0["uuid"] }, startWindow.rows.map { $0["uuid"] }, "seed \(seed) round \(round): reconstruction")
        }
        print("ResultWindowTests: \(diffs) diffs, \(refetches) refetches")
    }
}

/// Rows as comparable text (a NaN equals itself there, as it does not with `==`).
func text(_ rows: [[String: AttributeValue]]) -> [String] {
    rows.map { $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
}

enum QueryDiffUUID {
    static func of(_ row: [String: AttributeValue]) -> String {
        if case .uuid(let u)? = row["uuid"] { return u }
        return ""
    }
}
