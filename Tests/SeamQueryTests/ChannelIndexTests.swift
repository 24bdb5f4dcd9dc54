import SeamQuery
import SeamSchema
import XCTest

final class ChannelIndexTests: XCTestCase {
    private let session = Fixtures.session
    private let timerA = "0f8fad5b-d9cb-469f-a165-70867728950e"
    private let timerB = "7c9e6679-7425-40de-944b-e07fc1f90ae7"

    private func predicate(_ text: String, _ parameters: [String: AttributeValue] = [:]) throws -> CheckedPredicate {
        try CheckedPredicate(text, entity: session, parameters: parameters)
    }

    private func sessionRow(timer: String?, state: String = "running", name: String = "Tea", step: Int64 = 0)
        -> [String: AttributeValue]
    {
        [
            "uuid": .uuid(UUIDText.random()), "timerUUID": timer.map(AttributeValue.uuid) ?? .null,
            "name": .string(name),
            "state": .string(state), "startedAt": .date(1_796_032_800), "stepIndex": .integer(step),
        ]
    }

    func testWhatIsIndexedAndWhatIsScanned() throws {
        var index = ChannelIndex<String>(entity: session)
        let cases: [(String, Bool)] = [
            ("timerUUID == '\(timerA)'", true),
            ("state IN {'running', 'paused'}", true),
            ("timerUUID == nil", true),
            ("name ==[c] 'TEA'", true),
            ("stepIndex == 3.0", true),
            ("timerUUID == '\(timerA)' AND stepIndex > 2", true),
            ("timerUUID == '\(timerA)' OR state == 'paused'", true),
            ("NOT state != 'running'", true),
            ("FALSEPREDICATE", true),
            ("stepIndex > 3", false),
            ("TRUEPREDICATE", false),
            ("state != 'finished'", false),
            ("timerUUID == '\(timerA)' OR stepIndex > 2", false),
            ("NOT state IN {'running'}", false),
        ]
        for (text, indexed) in cases {
            try index.register(text, try predicate(text))
            XCTAssertEqual(index.isIndexed(text), indexed, text)
        }
        XCTAssertEqual(index.count, cases.count)
        XCTAssertEqual(index.scanCount, cases.filter { !$0.1 }.count)
    }

    func testCandidatesFollowOldAndNewValues() throws {
        var index = ChannelIndex<String>(entity: session)
        try index.register("A", try predicate("timerUUID == $t", ["t": .uuid(timerA)]))
        try index.register("B", try predicate("timerUUID == $t", ["t": .string(timerB.uppercased())]))
        try index.register("paused", try predicate("state == 'paused'"))
        try index.register("flash", try predicate("timerUUID == nil"))
        try index.register("never", try predicate("FALSEPREDICATE"))

        let old = sessionRow(timer: timerA)
        var new = old
        new["timerUUID"] = .uuid(timerB)
        XCTAssertEqual(index.candidates(old: old, new: new), ["A", "B"], "a row moving between results touches both")
        XCTAssertEqual(index.candidates(old: nil, new: old), ["A"], "an insert")
        XCTAssertEqual(index.candidates(old: old, new: nil), ["A"], "a delete")
        new["state"] = .string("paused")
        new["timerUUID"] = .null
        XCTAssertEqual(Set(index.candidates(old: old, new: new)), ["A", "paused", "flash"])
        XCTAssertEqual(index.candidates(old: sessionRow(timer: nil, state: "x"), new: nil), ["flash"])
    }

    func testCaseFoldedAndNumericPins() throws {
        var index = ChannelIndex<Int>(entity: session)
        try index.register(1, try predicate("name ==[c] 'TeA'"))
        try index.register(2, try predicate("stepIndex IN {3.0, 4.5}"))
        try index.register(3, try predicate("name == 'TeA'"))
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: nil, name: "tEa")), [1])
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: nil, name: "TeA")), [1, 3])
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: nil, name: "Té", step: 3)), [2])
        XCTAssertEqual(
            index.candidates(old: nil, new: sessionRow(timer: nil, name: "te\u{301}")), [],
            "bytes, not canonical equivalence")
    }

    func testAffectedTellsEntryAndExit() throws {
        var index = ChannelIndex<String>(entity: session)
        try index.register("running A", try predicate("timerUUID == '\(timerA)' AND state == 'running'"))
        try index.register("deep steps", try predicate("stepIndex >= 2"))
        let old = sessionRow(timer: timerA, step: 1)
        var new = old
        new["state"] = .string("paused")
        new["stepIndex"] = .integer(2)
        let matches = index.affected(old: old, new: new)
        XCTAssertEqual(
            matches,
            [
                .init(id: "running A", wasIncluded: true, isIncluded: false),
                .init(id: "deep steps", wasIncluded: false, isIncluded: true),
            ])
        XCTAssertEqual(
            index.affected(old: sessionRow(timer: timerB), new: nil), [], "candidates that match neither are dropped")
    }

    func testRegisterReplacesAndUnregisterRemoves() throws {
        var index = ChannelIndex<String>(entity: session)
        try index.register("c", try predicate("timerUUID == '\(timerA)'"))
        try index.register("c", try predicate("stepIndex > 1"))
        XCTAssertEqual(index.count, 1)
        XCTAssertFalse(index.isIndexed("c"))
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: timerB)), ["c"])
        XCTAssertNotNil(index.unregister("c"))
        XCTAssertNil(index.unregister("c"))
        XCTAssertEqual(index.count, 0)
        XCTAssertEqual(index.scanCount, 0)
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: timerA)), [])
        try index.register("d", try predicate("state IN {'a', 'b', 'a'}"))
        XCTAssertEqual(index.unregister("d")?.parsed.description, "state IN {\"a\", \"b\", \"a\"}")
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: nil, state: "a")), [])
        XCTAssertNil(index.predicate(for: "d"))
    }

    /// UUID-shaped text is keyed by its bits only when canonical; bytes still decide.
    func testUUIDShapedTextKeepsByteEquality() throws {
        var index = ChannelIndex<String>(entity: session)
        try index.register("exact", try predicate("name == '\(timerA)'"))
        try index.register("folded", try predicate("name ==[c] '\(timerA.uppercased())'"))
        try index.register("timer", try predicate("timerUUID == '\(timerA.uppercased())'"))
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: nil, name: timerA)), ["exact", "folded"])
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: nil, name: timerA.uppercased())), ["folded"])
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: timerA)), ["timer"])
        XCTAssertEqual(index.candidates(old: nil, new: sessionRow(timer: nil, name: "x" + timerA.dropFirst())), [])
    }

    /// Several predicates under one key: the posting grows from one slot to many and back.
    func testPredicatesSharingAPin() throws {
        var index = ChannelIndex<Int>(entity: session)
        for id in 0..<4 { try index.register(id, try predicate("state == 'running' AND stepIndex >= \(id)")) }
        let row = sessionRow(timer: nil, state: "running", step: 2)
        XCTAssertEqual(index.candidates(old: nil, new: row), [0, 1, 2, 3])
        XCTAssertEqual(index.affected(old: nil, new: row).map(\.id), [0, 1, 2])
        index.unregister(1)
        index.unregister(3)
        XCTAssertEqual(Set(index.candidates(old: nil, new: row)), [0, 2])
        index.unregister(0)
        XCTAssertEqual(index.candidates(old: nil, new: row), [2])
        try index.register(9, try predicate("state == 'running'"))
        XCTAssertEqual(Set(index.candidates(old: nil, new: row)), [2, 9])
        index.unregister(2)
        index.unregister(9)
        XCTAssertEqual(index.candidates(old: nil, new: row), [])
        XCTAssertEqual(index.count, 0)
    }

    /// Deciding touches the predicates pinned to the row's values, not the others.
    func testCandidatesDoNotGrowWithRegisteredPredicates() throws {
        var index = ChannelIndex<Int>(entity: session)
        var timers: [String] = []
        let parsed = try ParsedPredicate("timerUUID == $t AND state != 'finished'")
        for i in 0..<20_000 {
            let timer = UUIDText.random()
            timers.append(timer)
            try index.register(i, try parsed.check(against: session, parameters: ["t": .uuid(timer)]))
        }
        try index.register(-1, try predicate("stepIndex > 100"))
        let row = sessionRow(timer: timers[12_345])
        XCTAssertEqual(index.candidates(old: nil, new: row), [12_345, -1], "its own channel and the scanned one")
        XCTAssertEqual(index.affected(old: nil, new: row).map(\.id), [12_345])
    }

    /// Random predicates and changes: the candidates always include every predicate that matches
    /// the old or the new row, and `affected` is exactly the brute-force answer.
    func testCandidatesNeverMissAnAffectedPredicate() throws {
        let rounds = TestEnvironment.iterations("SEAM_PROPERTY_ITERATIONS", default: 150)
        let seed = TestEnvironment.seed()
        print("ChannelIndexTests: seed \(seed) (replay: SEAM_TEST_SEED=\(seed)), \(rounds) rounds")
        var random = RandomQueries(seed: seed)
        var index = ChannelIndex<Int>(entity: Fixtures.thing)
        var registered: [Int: CheckedPredicate] = [:]
        var indexedCount = 0
        for round in 0..<rounds {
            for k in 0..<8 {
                let (text, parameters) = random.predicate()
                let p = try CheckedPredicate(text, entity: Fixtures.thing, parameters: parameters)
                let id = (round * 8 + k) % 120  // reuse ids: exercises replacement
                try index.register(id, p)
                registered[id] = p
            }
            if round % 5 == 0, let victim = registered.keys.min() {
                index.unregister(victim)
                registered[victim] = nil
            }
            for _ in 0..<6 {
                let old: [String: AttributeValue]? = random.chance(0.15) ? nil : random.row()
                let new: [String: AttributeValue]? = old != nil && random.chance(0.15) ? nil : random.row()
                let candidates = Set(index.candidates(old: old, new: new))
                var expected: [ChannelIndex<Int>.Match] = []
                for (id, p) in registered.sorted(by: { $0.key < $1.key }) {
                    let was = old.map(p.matches) ?? false
                    let now = new.map(p.matches) ?? false
                    if was || now {
                        XCTAssertTrue(
                            candidates.contains(id),
                            "seed \(seed): missed \(p) for old \(String(describing: old)) "
                                + "new \(String(describing: new))"
                        )
                        expected.append(.init(id: id, wasIncluded: was, isIncluded: now))
                    }
                }
                XCTAssertEqual(Set(index.affected(old: old, new: new)), Set(expected))
            }
        }
        indexedCount = registered.keys.filter(index.isIndexed).count
        print(
            "ChannelIndexTests: \(registered.count) predicates registered, \(indexedCount) indexed, "
                + "\(index.scanCount) scanned"
        )
        XCTAssertEqual(index.count, registered.count)
    }
}
