import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamTestSupport
import XCTest

/// 1,000-row saves through a real seamd, as a hostile or careless client sends them (issue 32's
/// bad input): one bad row anywhere fails the save whole, naming the row, and changes nothing;
/// uuids a client gives itself, out of order, are kept as given; one given twice is a conflict;
/// `json` values in any spelling (spaces, keys out of order, escapes) are kept as the same JSON.
/// Seeded: each round picks its case and its row.
final class BulkSaveTests: BrokerTestCase {
    private static let rows = 1_000

    private func timers(_ prefix: String) -> [JSON] {
        (0..<Self.rows).map { i in
            ["entity": "Timer", "values": ["name": .string("\(prefix) \(i)"), "sortOrder": .integer(Int64(i)),
                                           "steps": [["label": "work", "seconds": 1500]]]]
        }
    }

    private func failure(_ c: SeamConnection, _ inserts: [JSON]) -> VarlinkError? {
        do {
            _ = try c.call("org.seam.Store.Save", ["inserts": .array(inserts)])
            return nil
        } catch {
            guard case .remote(let e) = error.kind else {
                XCTFail("expected the broker's error, got \(error)")
                return nil
            }
            return e
        }
    }

    func testBulkSavesOfBadRowsOwnUUIDsAndAnySpellingOfJSON() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["SEAM_TEST_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64(Int64.max))
        print("BulkSaveTests: seed \(seed) (replay: SEAM_TEST_SEED=\(seed))")
        var random = SplitMix64(seed: seed)
        let c = try client()
        var held = 0
        var cases: [String: Int] = [:]
        // A bad value of each kind: what the wire refuses (a type, a name) and what the store
        // does (NUL, a uuid's spelling, a size). (A `json` attribute takes any JSON value, a
        // string too: no spelling of one is bad once the frame has parsed.)
        let bad: [(attribute: String, value: JSON)] = [
            ("name", .integer(42)), ("sortOrder", .string("first")), ("nmae", .string("typo")),
            ("sortOrder", .double(1.5)), ("name", .string("a\u{0}b")), ("uuid", .string("NOT-A-UUID")),
            ("name", .string(String(repeating: "x", count: (1 << 20) + 1))),
        ]
        // Every bad value once, then each other case once, then cases at random.
        for round in 0..<(bad.count + 8) {
            var inserts = timers("round \(round)")
            let i = Int(random.next() % UInt64(Self.rows))
            let kind = round < bad.count ? 0 : round < bad.count + 3 ? round - bad.count + 1 : Int(random.next() % 4)
            let context = "round \(round), row \(i)"
            switch kind {
            case 0:
                let (attribute, value) = bad[round < bad.count ? round : Int(random.next() % UInt64(bad.count))]
                guard case .object(var values)? = inserts[i]["values"] else { return XCTFail(context) }
                values[attribute] = value
                inserts[i] = ["entity": "Timer", "values": .object(values)]
                let e = try XCTUnwrap(failure(c, inserts), "\(context): \(attribute) = \(value) was taken")
                let said = "\(e.parameters)"
                XCTAssertTrue(said.contains("inserts[\(i)]") || said.contains("round \(round) \(i)"),
                              "\(context): the error names the row: \(e.name) \(said.prefix(300))")
                XCTAssertEqual(try c.count("Timer"), held, "\(context): nothing of it stayed")
                cases["one bad row", default: 0] += 1
            case 1:
                // Every row with a uuid of its own, version 4 or 7, in no order.
                var uuids: [String] = []
                for k in inserts.indices {
                    var v7 = TimeOrderedUUIDs()
                    let uuid = random.next() % 2 == 0 ? UUIDText.random(using: &random)
                        : v7.next(now: random.next() % (1 << 47), using: &random)
                    uuids.append(uuid)
                    guard case .object(var values)? = inserts[k]["values"] else { return XCTFail(context) }
                    values["uuid"] = .string(uuid)
                    inserts[k] = ["entity": "Timer", "values": .object(values)]
                }
                XCTAssertNil(failure(c, inserts), context)
                held += Self.rows
                for k in (0..<5).map({ _ in Int(random.next() % UInt64(Self.rows)) }) {
                    XCTAssertEqual(try c.row("Timer", uuid: uuids[k])?["name"]?.stringValue, "round \(round) \(k)", context)
                }
                cases["own uuids", default: 0] += 1
            case 2:
                let j = (i + 1 + Int(random.next() % UInt64(Self.rows - 1))) % Self.rows
                let twin = UUIDText.random(using: &random)
                for k in [i, j] {
                    guard case .object(var values)? = inserts[k]["values"] else { return XCTFail(context) }
                    values["uuid"] = .string(twin)
                    inserts[k] = ["entity": "Timer", "values": .object(values)]
                }
                let e = try XCTUnwrap(failure(c, inserts), "\(context): a uuid given twice was taken")
                XCTAssertEqual(e.name, "org.seam.Store.Conflict", context)
                XCTAssertTrue("\(e.parameters)".contains(twin), "\(context): it names the uuid: \(e.parameters)")
                XCTAssertEqual(try c.count("Timer"), held, context)
                cases["a uuid twice", default: 0] += 1
            default:
                // The steps in other spellings: spaces, keys out of order, escapes.
                let spellings: [JSON] = [
                    [["seconds": 60, "label": "b"]], [["label": "c\u{e9}", "seconds": 1.5e2]],
                    .array([.object(["label": .string("quote \" and \\"), "seconds": .integer(5)])]), [], .object([:]),
                ]
                let k = Int(random.next() % UInt64(spellings.count))
                guard case .object(var values)? = inserts[i]["values"] else { return XCTFail(context) }
                values["steps"] = spellings[k]
                values["uuid"] = .string(UUIDText.random(using: &random))
                inserts[i] = ["entity": "Timer", "values": .object(values)]
                XCTAssertNil(failure(c, inserts), context)
                held += Self.rows
                let row = try XCTUnwrap(try c.row("Timer", uuid: values["uuid"]?.stringValue ?? ""), context)
                XCTAssertEqual(row["steps"], spellings[k], "\(context): the same JSON back")
                cases["json spellings", default: 0] += 1
            }
        }
        XCTAssertEqual(try c.count("Timer"), held)
        print("BulkSaveTests: \(cases.sorted { $0.key < $1.key })")
    }
}
