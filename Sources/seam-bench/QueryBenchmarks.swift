import Foundation
import SeamQuery
import SeamSchema
import SeamStore
import SeamTimers

/// Benchmarks of the predicate language and the channel index (issue: Predicates).
///
/// Three tables: the cost of turning a typical channel predicate into SQL; in-memory evaluation
/// per row beside SQLite evaluating the same predicate over the same rows; and the channel
/// index's cost per changed row as the number of registered predicates grows a thousandfold.
enum QueryBenchmarks {
    static var runs: Int { Bench.size(7, quick: 3) }

    static func run() throws {
        guard let session = TimerModel.history.current.entity("Session") else {
            throw QueryError(.unknownEntity, at: 0, "the timer model has no Session entity")
        }
        try parseCheckCompile(session)
        try evaluation(session)
        try channelIndex(session)
    }

    /// The predicate a timer's window subscribes with.
    static let typical =
        #"timerUUID == $timer AND state IN {"running", "paused"} AND startedAt > date("2026-01-01T00:00:00Z")"#

    // MARK: - Parse, check, compile

    static func parseCheckCompile(_ session: Entity) throws {
        let iterations = Bench.size(5_000, quick: 1_000)
        let parameters: [String: AttributeValue] = ["timer": .uuid(UUIDText.random())]
        let parsed = try ParsedPredicate(typical)
        let checked = try parsed.check(against: session, parameters: parameters)
        var table = BenchTable(
            "query: parse + check + compile of a typical predicate (\(typical.utf8.count) bytes)",
            columns: ["step", "per predicate"])
        let steps: [(String, () throws -> Void)] = [
            ("parse", { _ = try ParsedPredicate(typical) }),
            (
                "check (bind to Session, resolve $timer)",
                { _ = try parsed.check(against: session, parameters: parameters) }
            ),
            ("compile to SQL", { _ = checked.sql }),
            ("all three", { _ = try CheckedPredicate(typical, entity: session, parameters: parameters).sql }),
        ]
        for (name, body) in steps {
            let times = try Harness.time(runs: runs) { for _ in 0..<iterations { try body() } }
            table.add([name, Harness.duration(Harness.median(times) / Double(iterations))])
        }
        table.print()
    }

    // MARK: - Evaluation

    static func evaluation(_ session: Entity) throws {
        let rowCount = 20_000
        var generator = SeededRandom(seed: 1)
        let timers = (0..<rowCount).map { _ in UUIDText.random(using: &generator) }  // one session per timer
        let rows = (0..<rowCount).map { i in sessionRow(session, i, timers: timers, using: &generator) }
        let database = try Database(path: ":memory:")
        try database.execute(SchemaSQL.createTable(session))  // no indexes: SQLite must test every row, as memory does
        try insert(rows, into: database, session)

        let predicates: [(String, [String: AttributeValue])] = [
            (typical, ["timer": .uuid(timers[7])]),
            (#"name BEGINSWITH[c] "tea" OR name LIKE "*brew*""#, [:]),
            ("stepIndex BETWEEN {2, 5} AND round > 0 AND pausedAt == nil", [:]),
            (#"NOT state IN {"finished"} AND (icon == "cup" OR colour != "blue")"#, [:]),
        ]
        var table = BenchTable(
            "query: evaluation per row, \(rowCount) rows (SQLite: count(*) over an unindexed copy of the table)",
            columns: ["predicate", "matches", "in memory", "SQLite", "memory / SQLite"])
        for (text, parameters) in predicates {
            let predicate = try CheckedPredicate(text, entity: session, parameters: parameters)
            let (memory, matched) = try timeInMemory(predicate, rows)
            let (sqlite, counted) = try timeInSQLite(predicate, session, database)
            guard matched == counted else {
                throw QueryError(.invalidValue, at: 0, "memory matched \(matched) rows, SQLite \(counted): \(text)")
            }
            table.add([
                text.count > 60 ? String(text.prefix(57)) + "…" : text, String(matched),
                Harness.duration(memory / Double(rowCount)), Harness.duration(sqlite / Double(rowCount)),
                Harness.ratio(memory, sqlite),
            ])
        }
        table.print()
    }

    private static func timeInMemory(_ predicate: CheckedPredicate, _ rows: [[String: AttributeValue]]) throws -> (
        Double, Int
    ) {
        var matched = 0
        let times = Harness.time(runs: runs) {
            matched = 0
            for row in rows where predicate.matches(row) { matched += 1 }
        }
        return (Harness.median(times), matched)
    }

    private static func timeInSQLite(_ predicate: CheckedPredicate, _ session: Entity, _ database: Database) throws -> (
        Double, Int
    ) {
        let condition = predicate.sql
        let statement = try database.prepare(
            "SELECT count(*) FROM \(SchemaSQL.quote(session.name)) WHERE \(condition.sql)")
        var counted = 0
        let times = try Harness.time(runs: runs) {
            try statement.bind(condition.arguments)
            _ = try statement.step()
            counted = Int(statement.column(0, as: .integer).integerValue ?? -1)
        }
        return (Harness.median(times), counted)
    }

    // MARK: - Channel index

    /// One index of `count` channels and the changes to decide against it.
    private struct IndexCase {
        let count: Int
        var index: ChannelIndex<Int>
        let changes: [([String: AttributeValue], [String: AttributeValue])]
        let registerSeconds: Double
    }

    static func channelIndex(_ session: Entity) throws {
        let sizes = [100, 10_000, 100_000]
        let cases = try sizes.map { try buildIndex(session, channels: $0) }
        // Round-robin over the sizes, so that noise from other work on the machine hits them alike.
        var candidates = Array(repeating: [Double](), count: cases.count)
        var affected = Array(repeating: [Double](), count: cases.count)
        var sink = 0
        for _ in 0..<Bench.size(15, quick: 7) {
            for (i, c) in cases.enumerated() {
                candidates[i] += Harness.time(runs: 1) {
                    for (old, new) in c.changes { sink &+= c.index.candidates(old: old, new: new).count }
                }.map { $0 / Double(c.changes.count) }
                affected[i] += Harness.time(runs: 1) {
                    for (old, new) in c.changes { sink &+= c.index.affected(old: old, new: new).count }
                }.map { $0 / Double(c.changes.count) }
            }
        }
        if sink == 42 { print("") }  // keeps the work observable
        var table = BenchTable(
            "query: channel index, cost per changed row (each row pins ~1 channel; 10 channels pin nothing)",
            columns: [
                "registered", "register (per predicate)", "candidates", "affected (+ evaluate)", "candidates vs 100",
                "affected vs 100",
            ])
        for (i, c) in cases.enumerated() {
            table.add([
                String(c.count), Harness.duration(c.registerSeconds), Harness.duration(Harness.median(candidates[i])),
                Harness.duration(Harness.median(affected[i])),
                Harness.ratio(Harness.median(candidates[i]), Harness.median(candidates[0])),
                Harness.ratio(Harness.median(affected[i]), Harness.median(affected[0])),
            ])
        }
        table.print()
        print("Target: flat within 2× from 100 to 100,000 registered predicates.")
        Figures.record("query.index_affected_100000_vs_100", Harness.median(affected[cases.count - 1]) / Harness.median(affected[0]))
    }

    /// `channels` predicates over Session (nine in ten pin one timer, one in ten two timers or a
    /// flash timer's name), ten that pin nothing, and 2,000 changes of sessions of those timers.
    private static func buildIndex(_ session: Entity, channels: Int) throws -> IndexCase {
        var generator = SeededRandom(seed: UInt64(channels))
        let timers = (0..<channels).map { _ in UUIDText.random(using: &generator) }
        let byTimer = try ParsedPredicate("timerUUID == $timer AND state != \"finished\"")
        let byTimers = try ParsedPredicate("timerUUID IN {$a, $b} OR (timerUUID == nil AND name == $name)")
        var index = ChannelIndex<Int>(entity: session)
        let start = Harness.now()
        for (i, timer) in timers.enumerated() {
            let predicate =
                i % 10 == 9
                ? try byTimers.check(
                    against: session,
                    parameters: [
                        "a": .uuid(timer), "b": .uuid(timers[(i + 1) % channels]),
                        "name": .string("flash \(i)"),
                    ])
                : try byTimer.check(against: session, parameters: ["timer": .uuid(timer)])
            try index.register(i, predicate)
        }
        let register = Double(Harness.now() - start) / 1e9 / Double(channels)
        for k in 0..<10 {  // the scan list: the same ten unpinned channels at every size
            try index.register(channels + k, try CheckedPredicate("stepIndex > \(k) AND round >= 0", entity: session))
        }
        let changes = (0..<2_000).map { i -> ([String: AttributeValue], [String: AttributeValue]) in
            var old = sessionRow(
                session, i, timers: [timers[Int.random(in: 0..<channels, using: &generator)]], using: &generator)
            old["state"] = .string("running")
            var new = old
            new["state"] = .string(i % 3 == 0 ? "finished" : "paused")
            new["stepIndex"] = .integer(Int64(i % 7))
            return (old, new)
        }
        return IndexCase(count: channels, index: index, changes: changes, registerSeconds: register)
    }

    // MARK: - Rows

    /// A plausible Session row: every attribute set, a timer from `timers`.
    static func sessionRow<G: RandomNumberGenerator>(
        _ session: Entity, _ i: Int, timers: [String],
        using generator: inout G
    ) -> [String: AttributeValue] {
        var row: [String: AttributeValue] = [:]
        for attribute in session.attributes {
            row[attribute.name] = attribute.defaultValue ?? (attribute.isOptional ? .null : .string(""))
        }
        let states = ["running", "paused", "finished"]
        let names = ["Tea", "tea time", "Cold brew", "Pomodoro", "Bread dough", "Stretch", "Laundry", "Pasta"]
        row["uuid"] = .uuid(UUIDText.random(using: &generator))
        row["timerUUID"] = i % 20 == 0 ? .null : .uuid(timers[i % timers.count])
        row["name"] = .string(names[i % names.count])
        row["state"] = .string(states[i % states.count])
        row["icon"] = .string(["cup", "clock", "bread"][i % 3])
        row["colour"] = .string(["blue", "green"][i % 2])
        row["startedAt"] = .date(1_790_000_000 + Double(i * 37))
        row["stepIndex"] = .integer(Int64(i % 9))
        row["round"] = .integer(Int64(i % 3))
        row["stepEndsAt"] = .date(1_790_000_000 + Double(i * 37 + 300))
        row["pausedAt"] = i % 4 == 0 ? .date(1_790_000_100 + Double(i)) : .null
        return row
    }

    typealias SeededRandom = SplitMix64

    private static func insert(_ rows: [[String: AttributeValue]], into database: Database, _ session: Entity) throws {
        let names = session.attributes.map(\.name)
        let columns = names.map(SchemaSQL.quote).joined(separator: ", ")
        let statement = try database.prepare(
            "INSERT INTO \(SchemaSQL.quote(session.name)) (\(columns)) VALUES ("
                + Array(repeating: "?", count: names.count).joined(separator: ", ") + ")")
        try database.transaction {
            for row in rows {
                try statement.bind(names.map { row[$0] ?? .null })
                while try statement.step() {}
            }
        }
    }
}
