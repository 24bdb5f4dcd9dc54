import Foundation
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamTicker
import XCTest

/// The ticker's schedule: the work per event must not grow with the sessions followed (the
/// regression of `96bc6f5`: every event re-read every row, 10,000 date parses per step end),
/// and what it answers must be what a pass over every row would answer.
final class TickerScheduleTests: XCTestCase {
    /// A followed session's row, as the ticker's subscription carries it.
    static func row(_ uuid: String, _ end: Double?) -> JSON {
        .object(["uuid": .string(uuid), "stepEndsAt": end.map { .string(RFC3339.format($0)) } ?? .null])
    }

    static func update(_ kind: String, sequence: Int64, _ extra: JSONObject = [:]) throws -> SubscriptionUpdate {
        var p: JSONObject = ["subscription": 1, "kind": .string(kind), "sequence": .integer(sequence)]
        for (k, v) in extra { p[k] = v }
        return try SubscriptionUpdate(p)
    }

    /// The work of `events` step ends with `count` sessions followed: each event finds the
    /// earliest session due, and a diff then either moves its end on (a step ends) or removes
    /// it (it finished), as the broker would send them.
    func workPerEvent(followed count: Int, events: Int) throws -> TickerSchedule.Work {
        var schedule = TickerSchedule()
        let base = 1_800_000_000.0
        var ends: [(uuid: String, end: Double)] = (0..<count).map { (String(format: "%08x-0000-4000-8000-000000000000", $0), base + Double($0)) }
        try schedule.apply(try Self.update("result", sequence: 1, ["rows": .array(ends.map { Self.row($0.uuid, $0.end) })]))
        let before = schedule.work
        var sequence: Int64 = 1
        for e in 0..<events {
            let now = ends[0].end
            let due = schedule.due(at: now, excluding: [])
            XCTAssertEqual(due, [ends[0].uuid])
            XCTAssertEqual(schedule.nextWake(excluding: Set(due)), ends[1].end)
            sequence += 1
            let first = ends.removeFirst()
            if e % 2 == 0 {
                // The step ended and the next one runs: the row moves to the end of the order.
                let next = (uuid: first.uuid, end: ends.last!.end + 1)
                ends.append(next)
                try schedule.apply(try Self.update("diff", sequence: sequence, [
                    "updated": [["uuid": .string(next.uuid), "index": .integer(Int64(ends.count - 1)), "changedKeys": ["stepEndsAt"],
                                 "row": Self.row(next.uuid, next.end)]],
                    "moved": [["uuid": .string(next.uuid), "from": 0, "to": .integer(Int64(ends.count - 1))]],
                ]))
            } else {
                // It finished: it leaves the result, and a new session joins at the end.
                let joined = (uuid: "j" + first.uuid.dropFirst(), end: ends.last!.end + 1)
                ends.append(joined)
                try schedule.apply(try Self.update("diff", sequence: sequence, [
                    "deleted": [["uuid": .string(first.uuid), "index": 0]],
                    "inserted": [["uuid": .string(joined.uuid), "index": .integer(Int64(ends.count - 1)), "row": Self.row(joined.uuid, joined.end)]],
                ]))
            }
            XCTAssertEqual(schedule.count, count)
        }
        var work = schedule.work
        work.datesParsed -= before.datesParsed
        work.rowsTouched -= before.rowsTouched
        return work
    }

    func testWorkPerEventDoesNotGrowWithTheSessionsFollowed() throws {
        let small = try workPerEvent(followed: 10, events: 8)
        let large = try workPerEvent(followed: 10_000, events: 8)
        // Eight events: four updated rows and four inserted ones parse one date each.
        XCTAssertEqual(small.datesParsed, 8)
        XCTAssertEqual(large, small, "the ticker's work per event grew with the sessions it follows")
    }

    /// Random results and diffs against a plain dictionary of step ends: `due` and `nextWake`
    /// answer what a pass over every session would, whatever is excluded.
    func testAnswersMatchAPassOverEverySession() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["SEAM_SEED"] ?? "") ?? 0x71C4
        var random = SplitMix64(seed: seed)
        let rounds = max(30, Int(ProcessInfo.processInfo.environment["SEAM_PROPERTY_ITERATIONS"] ?? "") ?? 300)
        var schedule = TickerSchedule()
        var model: [String: Double?] = [:]
        var sequence: Int64 = 1
        func randomEnd() -> Double? { Int.random(in: 0..<10, using: &random) == 0 ? nil : Double(Int.random(in: 0..<50, using: &random)) }
        try schedule.apply(try Self.update("result", sequence: sequence, ["rows": []]))
        for round in 0..<rounds {
            sequence += 1
            if Int.random(in: 0..<40, using: &random) == 0 {
                model = Dictionary(uniqueKeysWithValues: (0..<Int.random(in: 0..<30, using: &random)).map { ("r\(round)-\($0)", randomEnd()) })
                try schedule.apply(try Self.update("resync", sequence: sequence, ["rows": .array(model.map { Self.row($0.key, $0.value) })]))
            } else {
                var deleted: [JSON] = [], inserted: [JSON] = [], updated: [JSON] = []
                for uuid in model.keys.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random)) {
                    if Bool.random(using: &random) {
                        model[uuid] = nil
                        deleted.append(["uuid": .string(uuid), "index": 0])
                    } else {
                        let end = randomEnd()
                        model[uuid] = .some(end)
                        updated.append(["uuid": .string(uuid), "index": 0, "changedKeys": ["stepEndsAt"], "row": Self.row(uuid, end)])
                    }
                }
                for i in 0..<Int.random(in: 0...3, using: &random) {
                    let uuid = "n\(round)-\(i)", end = randomEnd()
                    model[uuid] = .some(end)
                    inserted.append(["uuid": .string(uuid), "index": 0, "row": Self.row(uuid, end)])
                }
                try schedule.apply(try Self.update("diff", sequence: sequence,
                                                   ["deleted": .array(deleted), "inserted": .array(inserted), "updated": .array(updated)]))
            }
            let excluded = Set(model.keys.filter { _ in Int.random(in: 0..<4, using: &random) == 0 })
            let now = Double(Int.random(in: 0..<50, using: &random))
            let expectedDue = model.compactMap { k, v in v.flatMap { $0 <= now && !excluded.contains(k) ? (k, $0) : nil } }
                .sorted { ($0.1, $0.0) < ($1.1, $1.0) }.map(\.0)
            XCTAssertEqual(schedule.due(at: now, excluding: excluded), expectedDue, "seed \(seed), round \(round)")
            let expectedWake = model.compactMap { k, v in excluded.contains(k) ? nil : v }.min()
            XCTAssertEqual(schedule.nextWake(excluding: excluded), expectedWake, "seed \(seed), round \(round)")
            XCTAssertEqual(schedule.count, model.count)
            for (k, v) in model { XCTAssertEqual(schedule.end(of: k), .some(v)) }
        }
    }

    func testDiffsThatDoNotFitAreRefused() throws {
        var schedule = TickerSchedule()
        XCTAssertThrowsError(try schedule.apply(try Self.update("diff", sequence: 1)), "a diff before any result")
        try schedule.apply(try Self.update("result", sequence: 5, ["rows": [Self.row("a", 1)]]))
        XCTAssertThrowsError(try schedule.apply(try Self.update("diff", sequence: 4, ["deleted": [["uuid": "a", "index": 0]]])))
        XCTAssertThrowsError(try schedule.apply(try Self.update("diff", sequence: 6, ["deleted": [["uuid": "b", "index": 0]]])))
        XCTAssertThrowsError(try schedule.apply(try Self.update("diff", sequence: 6, ["inserted": [["uuid": "a", "index": 0, "row": Self.row("a", 2)]]])))
        XCTAssertThrowsError(try schedule.apply(try Self.update("diff", sequence: 6,
                                                                ["updated": [["uuid": "c", "index": 0, "changedKeys": [], "row": Self.row("c", 2)]]])))
        XCTAssertThrowsError(try schedule.apply(try Self.update("result", sequence: 7, ["rows": [Self.row("a", 1), Self.row("a", 2)]])))
    }
}
