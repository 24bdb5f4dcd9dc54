import CSQLite
import Foundation
import SeamContext
import SeamSchema
import SeamStore
import SeamTimers

/// Benchmarks of the context (issue: One context over both stores), each beside the same work
/// done directly through SQLite's C API on the same files, in the same run.
enum ContextBenchmarks {
    static func run() throws {
        let work = NSTemporaryDirectory() + "seam-bench-context-\(getpid())"
        try? FileManager.default.removeItem(atPath: work)
        defer { try? FileManager.default.removeItem(atPath: work) }
        var table = BenchTable("Context beside direct SQLite (medians)", columns: ["operation", "Seam", "direct SQLite", "ratio"])

        let rows = Bench.size(100_000, quick: 20_000)
        let batch = 1_000
        let runs = 3
        var context: Context!
        var direct: DirectSQLite!
        var seamSessions: [String] = []
        var directSessions: [String] = []
        var times: [String: [Double]] = [:]
        for run in 0..<runs {
            // Fresh files each run, so every run inserts into the same starting state.
            context = try Context(directory: work + "/seam-\(run)", schema: TimerApp.schema)
            direct = try DirectSQLite(path: work + "/direct-\(run)", schema: TimerApp.schema)
            seamSessions = []
            directSessions = []
            // Batched inserts: 100 saves of 1,000 sessions (Local: no history).
            times["seamLocal", default: []] += try Harness.time(runs: 1) {
                for b in 0..<(rows / batch) {
                    var request = SaveRequest()
                    for i in 0..<batch {
                        let uuid = UUIDText.random()
                        seamSessions.append(uuid)
                        request.insert("Session", sessionValues(uuid, b * batch + i))
                    }
                    try context.save(request)
                }
            }
            times["directLocal", default: []] += try Harness.time(runs: 1) {
                try direct.insertBatches(table: "Session", count: rows, batch: batch) { i in
                    let uuid = UUIDText.random()
                    directSessions.append(uuid)
                    return sessionValues(uuid, i)
                }
            }
            // Batched inserts into Cloud, where every save also writes history.
            times["seamCloud", default: []] += try Harness.time(runs: 1) {
                for b in 0..<(rows / batch) {
                    var request = SaveRequest()
                    for i in 0..<batch { request.insert("Timer", timerValues(UUIDText.random(), b * batch + i)) }
                    try context.save(request)
                }
            }
            times["directCloud", default: []] += try Harness.time(runs: 1) {
                try direct.insertBatches(table: "Timer", count: rows, batch: batch) { i in timerValues(UUIDText.random(), i) }
            }
        }
        let t = times.mapValues(Harness.median)
        table.add(["insert \(rows.formatted()) sessions (Local), batches of 1,000", rate(rows, t["seamLocal"]!), rate(rows, t["directLocal"]!),
                   Harness.ratio(t["seamLocal"]!, t["directLocal"]!)])
        table.add(["insert \(rows.formatted()) timers (Cloud, with history)", rate(rows, t["seamCloud"]!), rate(rows, t["directCloud"]!),
                   Harness.ratio(t["seamCloud"]!, t["directCloud"]!)])

        // Fetch one row by uuid.
        let probes = Bench.size(20_000, quick: 5_000)
        let seamPick = (0..<probes).map { _ in seamSessions.randomElement()! }
        let directPick = (0..<probes).map { _ in directSessions.randomElement()! }
        let seamFetch = Harness.median(try Harness.time(runs: 5) {
            for u in seamPick { _ = try context.row("Session", u) }
        }) / Double(probes)
        let session = TimerApp.schema.entity("Session")!.entity
        let directFetch = Harness.median(try Harness.time(runs: 5) {
            for u in directPick { _ = try direct.fetchByUUID(session, u) }
        }) / Double(probes)
        table.add(["fetch one session by uuid", Harness.duration(seamFetch), Harness.duration(directFetch),
                   Harness.ratio(seamFetch, directFetch)])

        // Fetch by an indexed predicate (the unique timerUUID index).
        let timerUUIDs = try context.fetch(FetchRequest("Session", attributes: ["timerUUID"])).compactMap { $0["timerUUID"].stringValue }
        let directTimerUUIDs = try direct.column("SELECT timerUUID FROM Session WHERE timerUUID IS NOT NULL")
        let n = Bench.size(5_000, quick: 1_000)
        let seamIndexed = Harness.median(try Harness.time(runs: 5) {
            for t in timerUUIDs.prefix(n) {
                _ = try context.fetch(FetchRequest("Session", where: "timerUUID == $t", parameters: ["t": .uuid(t)]))
            }
        }) / Double(n)
        let directIndexed = Harness.median(try Harness.time(runs: 5) {
            for t in directTimerUUIDs.prefix(n) { _ = try direct.fetchWhere(session, column: "timerUUID", t) }
        }) / Double(n)
        table.add(["fetch sessions where timerUUID == $t (indexed)", Harness.duration(seamIndexed), Harness.duration(directIndexed),
                   Harness.ratio(seamIndexed, directIndexed)])
        table.print()
        print("targets: fetch by uuid and batched Local inserts ≤ 1.5× direct SQLite; the Cloud row shows what history costs")
        Figures.record("context.local_inserts_vs_sqlite", t["seamLocal"]! / t["directLocal"]!)
        Figures.record("context.cloud_inserts_vs_sqlite", t["seamCloud"]! / t["directCloud"]!)
        Figures.record("context.fetch_by_uuid_vs_sqlite", seamFetch / directFetch)
        Figures.record("context.fetch_indexed_vs_sqlite", seamIndexed / directIndexed)
    }

    static func rate(_ rows: Int, _ seconds: Double) -> String { String(format: "%.0f rows/s", Double(rows) / seconds) }

    static func sessionValues(_ uuid: String, _ i: Int) -> [String: AttributeValue] {
        ["uuid": .uuid(uuid), "timerUUID": i % 2 == 0 ? .uuid(UUIDText.random()) : .null, "name": .string("Session \(i)"),
         "state": .string(i % 3 == 0 ? "paused" : "running"), "startedAt": .date(1_700_000_000 + Double(i)),
         "steps": .json(#"[{"label":"work","seconds":1500},{"label":"rest","seconds":300}]"#), "stepEndsAt": .date(1_700_001_500)]
    }

    static func timerValues(_ uuid: String, _ i: Int) -> [String: AttributeValue] {
        ["uuid": .uuid(uuid), "name": .string("Timer \(i)"), "steps": .json(#"[{"label":"work","seconds":1500}]"#),
         "sortOrder": .integer(Int64(i))]
    }
}

/// The same work through SQLite's C API directly: prepared statements, explicit transactions.
final class DirectSQLite {
    let db: OpaquePointer
    let schema: Schema

    /// `synchronous` as SQLite's pragma takes it: NORMAL (WAL written at commit, synced at
    /// checkpoints) or FULL (the WAL synced at every commit).
    init(path: String, schema: Schema, synchronous: String = "NORMAL") throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var handle: OpaquePointer?
        guard sqlite3_open(path + "/direct.sqlite", &handle) == SQLITE_OK, let handle else { throw BenchError("open failed") }
        db = handle
        self.schema = schema
        try exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=\(synchronous)")
        for model in schema.models {
            for sql in SchemaSQL.create(model.current, configuration: Configuration.defaultName) { try exec(sql) }
        }
    }

    deinit { sqlite3_close(db) }

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var s: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &s, nil) == SQLITE_OK, let s else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
        return s
    }

    func bind(_ s: OpaquePointer, _ i: Int32, _ v: AttributeValue) {
        switch v {
        case .null: sqlite3_bind_null(s, i)
        case .integer(let n): sqlite3_bind_int64(s, i, n)
        case .bool(let b): sqlite3_bind_int64(s, i, b ? 1 : 0)
        case .double(let d), .date(let d): sqlite3_bind_double(s, i, d)
        case .string(let t), .uuid(let t), .json(let t): sqlite3_bind_text(s, i, t, -1, seam_sqlite_transient())
        case .binary(let b): sqlite3_bind_blob(s, i, b, Int32(b.count), seam_sqlite_transient())
        }
    }

    /// Inserts `count` full rows (defaults filled as a caller would) in transactions of `batch`.
    func insertBatches(table: String, count: Int, batch: Int, _ values: (Int) -> [String: AttributeValue]) throws {
        let entity = schema.entity(table)!.entity
        let columns = entity.attributes
        let s = try prepare("INSERT INTO \"\(table)\" (\(columns.map { "\"\($0.name)\"" }.joined(separator: ", "))) VALUES ("
                            + columns.indices.map { _ in "?" }.joined(separator: ", ") + ")")
        defer { sqlite3_finalize(s) }
        var i = 0
        while i < count {
            try exec("BEGIN IMMEDIATE")
            for _ in 0..<batch {
                let v = values(i)
                for (k, a) in columns.enumerated() { bind(s, Int32(k + 1), v[a.name] ?? a.defaultValue ?? .null) }
                guard sqlite3_step(s) == SQLITE_DONE else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
                sqlite3_reset(s)
                i += 1
            }
            try exec("COMMIT")
        }
    }

    private var byUUID: OpaquePointer?
    private var byColumn: OpaquePointer?

    /// Reads every column of the row with `uuid` into Swift values.
    func fetchByUUID(_ e: Entity, _ uuid: String) throws -> [AttributeValue] {
        if byUUID == nil {
            byUUID = try prepare("SELECT \(e.attributes.map { "\"\($0.name)\"" }.joined(separator: ", ")) FROM \"\(e.name)\" WHERE uuid = ?")
        }
        return try readOne(byUUID!, e, uuid)
    }

    func fetchWhere(_ e: Entity, column: String, _ value: String) throws -> [AttributeValue] {
        if byColumn == nil {
            byColumn = try prepare("SELECT \(e.attributes.map { "\"\($0.name)\"" }.joined(separator: ", ")) FROM \"\(e.name)\" WHERE \"\(column)\" = ?")
        }
        return try readOne(byColumn!, e, value)
    }

    private func readOne(_ s: OpaquePointer, _ e: Entity, _ key: String) throws -> [AttributeValue] {
        sqlite3_bind_text(s, 1, key, -1, seam_sqlite_transient())
        defer { sqlite3_reset(s) }
        var out: [AttributeValue] = []
        if sqlite3_step(s) == SQLITE_ROW {
            for (i, a) in e.attributes.enumerated() {
                let c = Int32(i)
                if sqlite3_column_type(s, c) == SQLITE_NULL { out.append(.null); continue }
                switch a.type {
                case .integer: out.append(.integer(sqlite3_column_int64(s, c)))
                case .bool: out.append(.bool(sqlite3_column_int64(s, c) != 0))
                case .double, .date: out.append(.double(sqlite3_column_double(s, c)))
                case .binary: out.append(.binary([]))
                default: out.append(.string(String(cString: sqlite3_column_text(s, c))))
                }
            }
        }
        return out
    }

    func column(_ sql: String) throws -> [String] {
        let s = try prepare(sql)
        defer { sqlite3_finalize(s) }
        var out: [String] = []
        while sqlite3_step(s) == SQLITE_ROW { out.append(String(cString: sqlite3_column_text(s, 0))) }
        return out
    }
}
