import Foundation
@testable import SeamContext
import SeamSchema
import XCTest

/// The history's fast writer (`HistoryText`) against the tree it replaced, byte for
/// byte, over seeded random changes: every value type, text that needs escapes, keys outside the
/// entity's usual set, json with keys out of order, rows of one entity with different keys.
final class RowCodingTests: XCTestCase {
    func testTheFastHistoryTextIsTheTreesByteForByte() {
        let seed = UInt64(ProcessInfo.processInfo.environment["SEAM_TEST_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64(Int64.max))
        print("RowCodingTests: seed \(seed) (replay: SEAM_TEST_SEED=\(seed))")
        var random = SplitMix64(seed: seed)
        func pick<T>(_ xs: [T]) -> T { xs[Int(random.next() % UInt64(xs.count))] }
        let texts = ["", "tea", "é\u{301}", "line\nbreak", "quote \" and \\ back", "\u{1}\u{1f}", "日本", "🍵", "/slash", "tab\t"]
        let jsons = ["[]", #"{"b":1,"a":[true,null,{"z":"x","y":2.50}]}"#, #"[{"label":"work","seconds":1500}]"#, "\"s\"", "1e3", "{}",
                     #"{ "a" : [1, 2] }"#, #"{"é":"\u00e9"}"#, #"{"a":1,"a":2}"#, "[1,", #"{"b":{"d":1,"c":2},"a":0}"#]
        func value() -> AttributeValue {
            switch random.next() % 9 {
            case 0: return .null
            case 1: return .string(pick(texts))
            case 2: return .uuid(UUIDText.random())
            case 3: return .integer(Int64(bitPattern: random.next()) >> Int64(random.next() % 63))
            case 4: return .double(pick([0, -0.5, 1.0, 3.25, 1e15, 1e16, -7, Double(Int64(random.next() % 1000)) / 7]))
            case 5: return .date(pick([1_700_000_000, 1_700_000_000.25, 0, -1.5]))
            case 6: return .bool(random.next() % 2 == 0)
            case 7: return .binary((0..<Int(random.next() % 6)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            default: return .json(pick(jsons))
            }
        }
        let names = ["uuid", "name", "Name", "a", "é", "startedAt", "steps", "zz", "_x", "0"]
        func row() -> [String: AttributeValue] {
            var r: [String: AttributeValue] = [:]
            for name in names where random.next() % 3 != 0 { r[name] = value() }
            return r
        }
        var writer = HistoryText()
        for round in 0..<500 {
            let changes = (0..<Int(random.next() % 5)).map { _ -> RowChange in
                let kind = pick([RowChange.Kind.insert, .update, .delete])
                return RowChange(store: pick(["Cloud", "Local"]), entity: pick(["Timer", "Session", "Tëst"]), uuid: UUIDText.random(),
                                 kind: kind, changedKeys: names.filter { _ in random.next() % 2 == 0 },
                                 old: kind == .insert ? nil : row(), new: kind == .delete ? nil : row())
            }
            XCTAssertEqual(writer.text(of: changes), JSONValue.array(changes.map(RowCoding.encode)).minified,
                           "round \(round)")
        }
    }
}
