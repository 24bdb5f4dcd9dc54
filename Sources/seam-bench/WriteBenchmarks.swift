import CSQLite
import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamTimers

/// The write path (issue: the write path at SQLite's speed): bulk saves through seamd beside
/// SQLite inserting the same rows in this process, and `seam ls` over a large store.
enum WriteBenchmarks {
    static let batch = 1_000

    /// `SEAM_BENCH_WRITES_ONLY=bulk` runs the bulk saves alone (no listings, no group commit),
    /// `round-trip` the save's round trip alone: for trying a change to the write path several
    /// times over.
    static var only: String? { ProcessInfo.processInfo.environment["SEAM_BENCH_WRITES_ONLY"] }
    static var bulkOnly: Bool { only == "bulk" }

    static func run() throws {
        if only == "round-trip" {
            let work = try Harness.scratchDirectory("writes")
            defer { try? FileManager.default.removeItem(atPath: work) }
            return try roundTrip(work: work)
        }
        let rows = Bench.size(100_000, quick: 10_000)
        let work = try Harness.scratchDirectory("writes")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let socket = work + "/seamd.sock"
        let seamd = try BrokerBenchmarks.start(Executables.sibling("seamd"), ["--data-dir", work + "/data", "--socket", socket, "--no-roles"])
        defer { BrokerBenchmarks.stop(seamd) }
        try BrokerBenchmarks.waitForSocket(socket)
        let client = try SeamConnection.connect(path: socket)
        try client.hello()
        let direct = try DirectSQLite(path: work + "/direct", schema: TimerApp.schema)

        var table = BenchTable("Bulk saves through seamd, \(batch.formatted()) rows a call, beside SQLite in-process inserting the same rows "
                               + "(time-ordered keys, synchronous=NORMAL; taking turns, same run). One call at a time: each waits for "
                               + "the last one's reply; two in flight: the next call is sent before the last one's reply is read, as a "
                               + "bulk loader sends them; counted: the calls ask for the number of changes (reply: count), not their list",
                               columns: ["rows", "calls", "seamd", "SQLite alone", "seamd / SQLite", "target", "met"])
        let kinds = [(entity: "Timer", label: "Timer (Cloud, with history)", target: 0.33, figure: "writes.bulk_timer_vs_sqlite"),
                     (entity: "Session", label: "Session (Local)", target: 0.5, figure: "writes.bulk_session_vs_sqlite")]
        func measure(_ kind: (entity: String, label: String, target: Double, figure: String), inFlight: Int, counted: Bool = false,
                     numberedFrom: Int? = nil) throws {
            let (seam, alone) = try bulk(kind.entity, rows: rows, client: client, direct: direct, inFlight: inFlight, counted: counted,
                                         numberedFrom: numberedFrom)
            let ratio = seam / alone
            Figures.record(inFlight == 1 ? kind.figure : kind.figure + (counted ? "_counted" : "_pipelined"), ratio)
            let calls = (inFlight == 1 ? "one at a time" : "two in flight") + (counted ? ", counted" : "")
            table.add(["\(rows.formatted()) \(kind.label)", calls, rate(seam), rate(alone),
                       String(format: "%.2f×", ratio), String(format: "≥ %.2f×", kind.target), ratio >= kind.target ? "yes" : "no"])
        }
        // Timers first: `seam ls` is then measured over them alone.
        for kind in kinds {
            for inFlight in [1, 2] {
                try measure(kind, inFlight: inFlight)
                // Listed while the store holds `rows` timers.
                if kind.entity == "Timer" && inFlight == 1 && !bulkOnly { try listings(rows: rows, socket: socket, into: &table) }
            }
        }
        // Beside a client that calls every 50 ms (a dashboard polling Count): seamd's saves in
        // steps rest between their turns only while others are busy, and such a client is not.
        let alone = try bulk("Session", rows: rows, client: client, direct: direct, numberedFrom: 2 * rows)
        let stop = Flag()
        let poller = Thread {
            guard let c = try? SeamConnection.connect(path: socket), (try? c.hello()) != nil else { return }
            while !stop.isSet {
                _ = try? c.call("org.seam.Store.Count", ["entity": "Session"])
                usleep(50_000)
            }
        }
        poller.start()
        let beside = try bulk("Session", rows: rows, client: client, direct: direct, numberedFrom: 3 * rows)
        stop.set()
        while !poller.isFinished { usleep(1_000) }
        let besideRatio = (beside.0 / beside.1) / (alone.0 / alone.1)
        Figures.record("writes.bulk_session_beside_poller_vs_alone", besideRatio)
        table.add(["\(rows.formatted()) Session (Local), beside a client calling every 50 ms", "one at a time", rate(beside.0), rate(beside.1),
                   String(format: "%.2f×", beside.0 / beside.1),
                   String(format: "≥ 0.8× alone (%.2f×)", alone.0 / alone.1), besideRatio >= 0.8 ? "yes" : "no"])
        // Last, so that the rows above are measured over the same tables as before they came:
        // the poller's Count takes longer the more Sessions there are.
        for kind in kinds { try measure(kind, inFlight: 2, counted: true, numberedFrom: 4 * rows) }
        table.print()
        if !bulkOnly {
            try groupCommit(work: work)
            try roundTrip(work: work)
        }
    }

    // MARK: - A save's round trip

    /// A one-row save's round trip through seamd (no channels), beside seamd's own parts measured
    /// alone: the messaging floor (a process that reads the save, writes the WAL pages one Session
    /// insert writes, syncs them when synced, and replies) and SQLite alone (the save's statements
    /// in this process), at both durabilities and in each CPU placement, taking turns.
    static func roundTrip(work: String) throws {
        let rounds = Bench.size(2_400, quick: 600)
        let warmUp = 1_500
        let orders = ChannelBenchmarks.permutations([0, 1, 2])
        var table = BenchTable("A one-row save's round trip (Session, Local), seamd with no channels, beside the messaging floor and SQLite "
                               + "alone; \(rounds.formatted()) rounds each after \(warmUp.formatted()) untimed, blocks of 100 taking turns",
                               columns: ["durability, placement", "seamd p50", "seamd p99", "floor p50", "SQLite alone p50",
                                         "p50 seamd / (floor + SQLite alone)", "target", "met"])
        var worst = 0.0
        for synced in [true, false] {
            let name = synced ? "synced" : "unsynced"
            let seamd = try ChannelBenchmarks.SaveCost(work: work + "/round-trip-\(name)", channels: 0, sync: synced)
            defer { seamd.stop() }
            let relay = try ChannelBenchmarks.RelayLatency(work: work + "/round-trip-relay-\(name)", sync: synced, subscriber: false)
            defer { relay.stop() }
            let alone = try ChannelBenchmarks.SQLiteAlone(work: work + "/round-trip-sqlite-\(name)", sync: synced)
            let turns: [() throws -> [Double]] = [{ try seamd.measure(rounds: 100) }, { try relay.measure(rounds: 100) },
                                                  { try alone.measure(rounds: 100) }]
            for _ in 0..<(warmUp / 100) { for turn in turns { _ = try turn() } }
            sync()
            let servers = [seamd.process.processIdentifier, relay.process.processIdentifier]
            for placement in CPUPlacement.available {
                try placement.apply(client: true, servers: servers)
                var samples = [[Double]](repeating: [], count: turns.count)
                for block in 0..<(rounds / 100) {
                    for system in orders[block % orders.count] { samples[system] += try turns[system]() }
                }
                let (seam, floor, sqlite) = (samples[0], samples[1], samples[2])
                let ratio = Harness.median(seam) / (Harness.median(floor) + Harness.median(sqlite))
                worst = max(worst, ratio)
                table.add([(synced ? "synced (--durability full)" : "not synced (--durability normal)") + ", \(placement.label)",
                           Harness.duration(Harness.median(seam)), Harness.duration(Harness.percentile(seam, 0.99)),
                           Harness.duration(Harness.median(floor)), Harness.duration(Harness.median(sqlite)),
                           String(format: "%.2f×", ratio), "≤ 1.3×", ratio <= 1.3 ? "yes" : "no"])
            }
            try CPUPlacement.scheduler.apply(client: true, servers: servers)
        }
        Figures.record("writes.save_round_trip_vs_floor_and_sqlite_worst_row", worst)
        table.print()
        print("(the floor and SQLite alone as in the commit-to-subscriber table of `scripts/bench channels`, the floor replying to the")
        print(" saver only; the three on one CPU, or the client on CPU 0 and the servers on CPU 1, as each row says)")
    }

    // MARK: - Group commit

    /// Clients each saving one row at a time, as fast as their replies come, at full durability:
    /// seamd with one client and with 50, beside PostgreSQL (fsync on) with one connection and
    /// with 50 doing the same inserts, taking turns in the same run.
    static func groupCommit(work: String) throws {
        let seconds = Bench.size(3.0, quick: 1.0)
        let socket = work + "/full.sock"
        let seamd = try BrokerBenchmarks.start(Executables.sibling("seamd"), ["--data-dir", work + "/full", "--socket", socket,
                                                                               "--no-roles", "--durability", "full"])
        defer { BrokerBenchmarks.stop(seamd) }
        try BrokerBenchmarks.waitForSocket(socket)
        let postgres = try PostgresServer(work: work, fsync: true)
        defer { postgres.stop() }
        let setup = try PostgresConnection(postgres.connectionString)
        try setup.execute("CREATE TABLE session (uuid uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL, "
                          + "started_at double precision NOT NULL, state text NOT NULL DEFAULT 'running')")

        func seamdRate(_ clients: Int) throws -> Double {
            try rate(clients: clients, seconds: seconds) { client in
                let c = try SeamConnection.connect(path: socket)
                try c.hello()
                var i = 0
                return {
                    i += 1
                    _ = try c.call("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                        "name": .string("c\(client)-\(i)"), "startedAt": .integer(1_700_000_000)]]]])
                }
            }
        }
        let conninfo = postgres.connectionString
        func postgresRate(_ clients: Int) throws -> Double {
            try rate(clients: clients, seconds: seconds) { client in
                let c = try PostgresConnection(conninfo)
                try c.prepare("insert", "INSERT INTO session (name, started_at) VALUES ($1, $2)")
                var i = 0
                return {
                    i += 1
                    try c.sendPrepared("insert", ["c\(client)-\(i)", "1700000000"])
                    try c.finishQuery()
                }
            }
        }
        var seamd1: [Double] = [], seamd50: [Double] = [], postgres1: [Double] = [], postgres50: [Double] = []
        for _ in 0..<Bench.size(3, quick: 1) {
            seamd1.append(try seamdRate(1))
            postgres1.append(try postgresRate(1))
            seamd50.append(try seamdRate(50))
            postgres50.append(try postgresRate(50))
        }
        let (s1, s50, p1, p50) = (Harness.median(seamd1), Harness.median(seamd50), Harness.median(postgres1), Harness.median(postgres50))
        Figures.record("writes.group_commit_50_vs_1", s50 / s1)
        Figures.record("writes.group_commit_50_vs_postgres", s50 / p50)
        var table = BenchTable("Single-row saves at full durability (every save on the disk before its reply), one client and 50 "
                               + "(median of \(seamd1.count) runs of \(seconds) s, taking turns with PostgreSQL, fsync on)",
                               columns: ["clients", "seamd", "PostgreSQL", "seamd / PostgreSQL", "target", "met"])
        func r(_ x: Double) -> String { String(format: "%.0f rows/s", x) }
        table.add(["1", r(s1), r(p1), String(format: "%.2f×", s1 / p1), "-", "-"])
        table.add(["50", r(s50), r(p50), String(format: "%.2f×", s50 / p50), "≥ 1.0× PostgreSQL", s50 >= p50 ? "yes" : "no"])
        table.add(["50 / 1", String(format: "%.1f×", s50 / s1), String(format: "%.1f×", p50 / p1), "-", "≥ 5× one client", s50 >= 5 * s1 ? "yes" : "no"])
        table.print()
    }

    /// Rows per second of `clients` threads, each running the body `make` returns (one insert
    /// per call) for `seconds`.
    static func rate(clients: Int, seconds: Double, _ make: @escaping @Sendable (Int) throws -> () throws -> Void) throws -> Double {
        let counts = Counts(clients)
        let group = DispatchGroup()
        let start = Harness.now() + 100_000_000  // every client connected first
        for client in 0..<clients {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let insert = try make(client)
                    while Harness.now() < start { usleep(1_000) }
                    let end = start + UInt64(seconds * 1e9)
                    var n = 0
                    while Harness.now() < end {
                        try insert()
                        n += 1
                    }
                    counts.set(client, n)
                } catch {
                    counts.fail("\(error)")
                }
            }
        }
        group.wait()
        if let failure = counts.failure { throw BenchError("a client failed: \(failure)") }
        return Double(counts.total) / seconds
    }

    /// What the clients of `rate` counted.
    final class Counts: @unchecked Sendable {
        private let lock = NSLock()
        private var counts: [Int]
        private(set) var failure: String?

        init(_ clients: Int) { counts = Array(repeating: 0, count: clients) }

        func set(_ client: Int, _ n: Int) { lock.withLock { counts[client] = n } }
        func fail(_ why: String) { lock.withLock { failure = failure ?? why } }
        var total: Int { lock.withLock { counts.reduce(0, +) } }
    }

    private static func rate(_ rowsPerSecond: Double) -> String { String(format: "%.0f rows/s", rowsPerSecond) }

    /// Batches each side saves in a turn when seamd's calls are pipelined (the first and last
    /// of a turn wait alone: the longer the turn, the nearer a bulk load's steady state).
    static let pipelinedTurn = 10

    /// Rows per second of seamd and of SQLite alone, each inserting `rows` rows of `entity` in
    /// transactions of `batch`, taking turns: a batch each with one call in flight, ten batches
    /// each with more (`inFlight` calls sent before the oldest reply is read).
    static func bulk(_ entity: String, rows: Int, client: SeamConnection, direct: DirectSQLite, inFlight: Int = 1,
                     counted: Bool = false, numberedFrom: Int? = nil) throws -> (Double, Double) {
        let e = TimerApp.schema.entity(entity)!.entity
        let insert = try direct.prepare("INSERT INTO \"\(entity)\" (\(e.attributes.map { "\"\($0.name)\"" }.joined(separator: ", "))) VALUES ("
                                        + e.attributes.indices.map { _ in "?" }.joined(separator: ", ") + ")")
        defer { sqlite3_finalize(insert) }
        var keys = TimeOrderedUUIDs()
        var random = SystemRandomNumberGenerator()
        var seamSeconds = 0.0, aloneSeconds = 0.0
        // SQLite alone: one batch in one transaction, the same rows with keys of the same kind.
        func insertAlone(_ values: [[String: AttributeValue]]) throws {
            try direct.exec("BEGIN IMMEDIATE")
            for v in values {
                let key = AttributeValue.uuid(keys.next(now: UInt64(Date().timeIntervalSince1970 * 1000), using: &random))
                for (k, a) in e.attributes.enumerated() {
                    direct.bind(insert, Int32(k + 1), a.name == Entity.identity ? key : v[a.name] ?? a.defaultValue ?? .null)
                }
                guard sqlite3_step(insert) == SQLITE_DONE else { throw BenchError(String(cString: sqlite3_errmsg(direct.db))) }
                sqlite3_reset(insert)
            }
            try direct.exec("COMMIT")
        }

        let turn = inFlight == 1 ? 1 : pipelinedTurn
        // Numbered apart from the other runs' rows: every run inserts rows of its own.
        let first = numberedFrom ?? (inFlight - 1) * rows
        for t0 in stride(from: 0, to: rows / batch, by: turn) {
            let batches = (t0..<min(rows / batch, t0 + turn)).map { b in
                (0..<batch).map { i in entity == "Timer" ? timerValues(first + b * batch + i) : sessionValues(first + b * batch + i) }
            }
            let calls = batches.map { values -> JSONObject in
                var call: JSONObject = ["inserts": JSON.array(values.map { v in
                    ["entity": .string(entity), "values": .object(JSONObject(uniqueKeysWithValues: v.map { ($0.key, WireValues.encode($0.value)) }))]
                })]
                if counted { call["reply"] = "count" }
                return call
            }
            var t = Harness.now()
            var sent: [JSON] = []
            for call in calls {
                if sent.count == inFlight { _ = try client.finish(sent.removeFirst()) }
                sent.append(try client.begin("org.seam.Store.Save", call))
            }
            for id in sent { _ = try client.finish(id) }
            seamSeconds += Double(Harness.now() - t) / 1e9

            t = Harness.now()
            for values in batches { try insertAlone(values) }
            aloneSeconds += Double(Harness.now() - t) / 1e9
        }
        return (Double(rows) / seamSeconds, Double(rows) / aloneSeconds)
    }

    /// `seam ls --json` and `seam timer ls` over `rows` timers: the median of three runs each.
    static func listings(rows: Int, socket: String, into table: inout BenchTable) throws {
        for (arguments, figure) in [(["ls", "--json"], "writes.seam_ls_json_seconds"), (["timer", "ls"], "writes.seam_timer_ls_seconds")] {
            let times = try (0..<3).map { _ in
                let t = Harness.now()
                let p = try BrokerBenchmarks.start(Executables.sibling("seam"), arguments, environment: ["SEAM_SOCKET": socket])
                p.waitUntilExit()
                guard p.terminationStatus == 0 else { throw BenchError("seam \(arguments.joined(separator: " ")) exited \(p.terminationStatus)") }
                return Double(Harness.now() - t) / 1e9
            }
            let median = Harness.median(times)
            Figures.record(figure, median)
            table.add(["seam \(arguments.joined(separator: " ")), \(rows.formatted()) timers", "-", Harness.duration(median), "-", "-", "≤ 1 s",
                       median <= 1 ? "yes" : "no"])
        }
    }

    static func sessionValues(_ i: Int) -> [String: AttributeValue] {
        ["name": .string("Session \(i)"), "state": .string(i % 3 == 0 ? "paused" : "running"),
         "startedAt": .date(1_700_000_000 + Double(i)), "stepEndsAt": .date(1_700_001_500),
         "steps": .json(#"[{"label":"work","seconds":1500},{"label":"rest","seconds":300}]"#)]
    }

    static func timerValues(_ i: Int) -> [String: AttributeValue] {
        ["name": .string("Timer \(i)"), "steps": .json(#"[{"label":"work","seconds":1500}]"#), "sortOrder": .integer(Int64(i))]
    }
}
