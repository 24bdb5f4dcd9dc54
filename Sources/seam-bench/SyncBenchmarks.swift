import Foundation
import SeamJSON
import SeamPostgres
import SeamProtocol
import SeamSchema
import SeamSync
import SeamSystem

/// Sync of the Cloud store through PostgreSQL (issue: sync), between machines that are real
/// `seamd` processes with stores of their own, each running the `seam-sync` worker it
/// supervises, on a PostgreSQL from Debian's packages started by `scripts/pg-server`.
///
/// 1. Latency: two machines of one person (one role, one zone). On B a subscription to
///    `Timer` (`name BEGINSWITH "bench"`); on A `SEAM_BENCH_SYNC_SAVES` saves (default 200), one
///    at a time, inserts and renames of timers taking turns; each is timed from just before the
///    Save is written on A to the diff that holds it reaching B's subscriber. The server's own
///    NOTIFY, heard by a listener of the benchmark's, splits that time into A's export and B's
///    import. The next save waits until the last has arrived everywhere, and 25 ms more, so that
///    this measures latency, not queueing.
/// 2. Catching up: in a zone of its own, machine A gets `SEAM_BENCH_SYNC_RECORDS` timers
///    (default 100,000) through `org.seam.Store.Save`, 1,000 a save, before sync is set up; then
///    `seam sync setup` has its worker send them all (the first export, timed until the server
///    holds them all), A stops, and a fresh machine C is set up against the same zone and timed
///    until it holds them all (a subscription to the zone's last record, then `Count`; polling
///    seamd would slow the saves it measures, see `catchingUp`). How each worker's next cycle ends is printed
///    under the table: a machine that cannot sync after a large batch is worth knowing about.
/// 3. Many zones (`ZoneBenchmarks`): propagation and the server's work per record as zones grow.
enum SyncBenchmarks {
    /// `SEAM_BENCH_SYNC_SAVES`, default 200: the saves timed from A to B.
    static var saves: Int { Int(ProcessInfo.processInfo.environment["SEAM_BENCH_SYNC_SAVES"] ?? "") ?? Bench.size(200, quick: 60) }
    /// `SEAM_BENCH_SYNC_RECORDS`, default 100,000: the timers a new machine catches up with.
    static var records: Int { Int(ProcessInfo.processInfo.environment["SEAM_BENCH_SYNC_RECORDS"] ?? "") ?? Bench.size(100_000, quick: 20_000) }
    static let insertBatch = 1_000
    /// `SEAM_BENCH_SYNC_ONLY=catch-up` runs the first export and the new machine's catch-up
    /// alone (sealed): for trying, or profiling, a change to the sync path.
    static var catchUpOnly: Bool { ProcessInfo.processInfo.environment["SEAM_BENCH_SYNC_ONLY"] == "catch-up" }
    /// `SEAM_BENCH_SYNC_ONLY=zones` runs the many zones alone (`ZoneBenchmarks`).
    static var zonesOnly: Bool { ProcessInfo.processInfo.environment["SEAM_BENCH_SYNC_ONLY"] == "zones" }
    /// Between one save's arrival and the next save.
    static let pause = 0.025
    static let pollInterval = 0.05

    static func run() throws {
        let work = try Harness.scratchDirectory("sync")
        defer { try? FileManager.default.removeItem(atPath: work) }
        // The server's directory lies directly under /tmp, where the postgres user reaches it.
        let server = try SyncServer(directory: "/tmp/seam-bench-sync-pg-\(getpid())", user: "bench")
        defer { server.stop() }
        if catchUpOnly {
            let (table, notes, _) = try catchingUp(server, work: work, user: "bulk", sealed: true)
            table.print()
            notes.forEach { print($0) }
            return
        }
        if zonesOnly { return try zones(server, work: work) }

        // Names, step labels and group names are sealed for the server (Timers v7); each
        // measure is taken again in a zone of its own with the workers not sealing
        // (SEAM_SYNC_SEAL=0, for this comparison only), side by side in this run.
        // Sealed, not sealed, sealed, not sealed: whichever runs first meets a colder server,
        // so the two take turns and each p50 is the mean of its two runs.
        let (latencyTable, sealedFirst) = try latency(server, work: work, user: "bench", sealed: true)
        latencyTable.print()
        print("target: p50 ≤ 200 ms from the save on A to the diff at B's subscriber")
        print("(each save waits for the last to arrive, then \(Int(pause * 1000)) ms; the workers also sync every 5 s on their own, "
              + "and a save that lands during such a cycle waits for it)")
        try server.addUser("clear")
        let (clearTable, clearFirst) = try latency(server, work: work, user: "clear", sealed: false)
        clearTable.print()
        let sealedSecond = try latency(server, work: work, user: "bench", sealed: true, turn: 2).1
        let clearSecond = try latency(server, work: work, user: "clear", sealed: false, turn: 2).1
        print("(the second turn: p50 \(Harness.duration(sealedSecond)) sealed, \(Harness.duration(clearSecond)) not sealed)")
        let sealedP50 = (sealedFirst + sealedSecond) / 2, clearP50 = (clearFirst + clearSecond) / 2

        let (table, notes, sealedRates) = try catchingUp(server, work: work, user: "bulk", sealed: true)
        table.print()
        print("targets: ≥ 50,000 records/s for the first export, and for a new machine catching up")
        notes.forEach { print($0) }
        let (clearCatchUp, _, clearRates) = try catchingUp(server, work: work, user: "bulkclear", sealed: false)
        clearCatchUp.print()

        var sealing = BenchTable("Encrypted fields: sealed (Timers v7: names, step labels, group names) beside not sealed, this run",
                                 columns: ["measure", "sealed", "not sealed", "ratio"])
        sealing.add(["propagation p50 (save on A → diff at B; mean of two turns)", Harness.duration(sealedP50), Harness.duration(clearP50),
                     String(format: "%.2f×", sealedP50 / clearP50)])
        sealing.add(["first export, records/s", Int(sealedRates.export).formatted(), Int(clearRates.export).formatted(),
                     String(format: "%.2f×", sealedRates.export / clearRates.export)])
        sealing.add(["new machine catching up, records/s", Int(sealedRates.catchUp).formatted(), Int(clearRates.catchUp).formatted(),
                     String(format: "%.2f×", sealedRates.catchUp / clearRates.catchUp)])
        Figures.record("sync.sealed_vs_clear_catch_up", sealedRates.catchUp / clearRates.catchUp)
        Figures.record("sync.sealed_vs_clear_propagation_p50", sealedP50 / clearP50)
        sealing.print()
        print("targets: sealed ≥ 0.8× the rate of not sealed, ≤ 1.2× its latency")

        try zones(server, work: work)
    }

    private static func zones(_ server: SyncServer, work: String) throws {
        try ZoneBenchmarks.run(server, work: work).print()
        print("targets: propagation p99 with every zone saving ≤ 2× with one; the server's work per synced record flat as zones grow")
        print("(machine busy: of both cores over the phase; CPU by process kind: % of one core; server rows and pages from pg_stat_statements, less what the workers' own cycles cost a second with no zone saving)")
    }

    // MARK: - Save on A → subscriber on B

    /// Each zone's recovery phrase, once its first machine has shown it.
    nonisolated(unsafe) static var phrases: [String: String] = [:]

    static func latency(_ server: SyncServer, work: String, user: String, sealed: Bool, turn: Int = 1) throws -> (BenchTable, Double) {
        let a = try Machine("a-\(user)-\(turn)", work: work, sealed: sealed)
        defer { a.stop() }
        let b = try Machine("b-\(user)-\(turn)", work: work, sealed: sealed)
        defer { b.stop() }
        // A zone's later machines join with the phrase its first one showed.
        let phrase = try a.setUp(server, user: user, phrase: phrases[user])
        phrases[user] = phrase
        try b.setUp(server, user: user, phrase: phrase)
        for m in [a, b] {
            let status = try m.nextReport(timeout: 30)
            guard status["state"]?.stringValue == "idle" else { throw BenchError("\(m.name)'s sync worker: \(status); its log:\n\(m.logTail)") }
        }

        let subscriber = try b.connect()
        let first = try subscriber.call("org.seam.Store.Subscribe", ["entity": "Timer", "predicate": "name BEGINSWITH \"bench\"",
                                                                    "fields": ["name"]], more: true)
        guard first.parameters["kind"]?.stringValue == "result" else { throw BenchError("Subscribe answered \(first.parameters)") }
        let saver = try a.connect()
        // The server's NOTIFY (sent in the transaction of A's export) marks the moment the change is on the server.
        let admin = try PostgresConnection(server.adminConnection(in: server.databases[user] ?? "seam"))
        // The zone's own channel (server schema 3), which its workers made when they connected.
        guard let channel = try admin.rows("SELECT channel FROM seam.zones WHERE zone = '\(user)'").first?.first else {
            throw BenchError("the zone '\(user)' has no row in seam.zones: its workers never wrote")
        }
        try admin.execute("LISTEN \(channel)")

        var total: [Double] = [], export: [Double] = [], importing: [Double] = [], roundTrip: [Double] = []
        var timers: [String] = []
        for i in 0..<saves {
            let name = "bench \(i)"
            let change: JSONObject
            if i % 2 == 0 || timers.isEmpty {
                let uuid = UUIDText.random()
                timers.append(uuid)
                change = ["inserts": [["entity": "Timer", "values": ["uuid": .string(uuid), "name": .string(name), "steps": steps(i)]]]]
            } else {
                change = ["updates": [["entity": "Timer", "uuid": .string(timers[(i * 7919) % timers.count]), "values": ["name": .string(name)]]]]
            }
            let frame = RawSeam.frame("org.seam.Store.Save", change, id: Int64(i))
            _ = try admin.notifications()
            let start = Harness.now()
            try UnixSocket.writeAll(saver.fd, frame)
            var saved: UInt64?, notified: UInt64?, heard: UInt64?
            while saved == nil || notified == nil || heard == nil {
                while let r = try saver.bufferedReply() {
                    if let e = r.error { throw BenchError("Save on A: \(e) \(r.parameters)") }
                    saved = saved ?? Harness.now()
                }
                while let r = try subscriber.bufferedReply() {
                    guard r.parameters["kind"]?.stringValue == "diff" else { throw BenchError("B's subscriber heard \(r.parameters)") }
                    if heard == nil, contains(r.parameters, name: name) { heard = Harness.now() }
                }
                if saved != nil, notified != nil, heard != nil { break }
                if Double(Harness.now() - start) / 1e9 > 30 {
                    throw BenchError("save \(i) (\(name)) did not reach B within 30 s (saved: \(saved != nil), on the server: "
                                     + "\(notified != nil)); A's log:\n\(a.logTail)\nB's log:\n\(b.logTail)")
                }
                var fds = [saver.fd, subscriber.fd, admin.socket].map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                guard poll(&fds, nfds_t(fds.count), 100) >= 0 || errno == EINTR else { throw BenchError("poll: errno \(errno)") }
                if fds[0].revents != 0 { try saver.fill() }
                if fds[1].revents != 0 { try subscriber.fill() }
                if fds[2].revents != 0, !(try admin.notifications()).isEmpty { notified = notified ?? Harness.now() }
            }
            func seconds(_ from: UInt64, _ to: UInt64?) -> Double { Double(Int64(to!) - Int64(from)) / 1e9 }
            total.append(seconds(start, heard))
            export.append(seconds(start, notified))
            importing.append(seconds(notified!, heard))
            roundTrip.append(seconds(start, saved))
            Threads.sleep(pause)
        }

        var table = BenchTable("Sync latency\(sealed ? "" : ", fields not sealed"): a save on machine A heard by a subscriber on machine B "
                               + "(one person's two machines, one PostgreSQL \(server.version) on this machine; \(saves) saves, inserts and "
                               + "renames taking turns)",
                               columns: ["measure", "p50", "p99", "max", "count"])
        func row(_ what: String, _ xs: [Double]) -> [String] {
            [what, Harness.duration(Harness.percentile(xs, 0.5)), Harness.duration(Harness.percentile(xs, 0.99)),
             Harness.duration(xs.max() ?? .nan), "\(xs.count)"]
        }
        table.add(row("save on A → the diff at B's subscriber", total))
        if sealed { Figures.record("sync.propagation_p50", Harness.percentile(total, 0.5)) }
        table.add(row("  of which: save on A → on the server (A's worker exported it; its NOTIFY heard)", export))
        table.add(row("  of which: on the server → the diff at B's subscriber (B's worker imported it)", importing))
        table.add(row("Save round trip on A (the local commit, for scale)", roundTrip))
        return (table, Harness.percentile(total, 0.5))
    }

    /// Whether a diff inserts or updates a row named `name`.
    static func contains(_ diff: JSONObject, name: String) -> Bool {
        for key in ["inserted", "updated"] {
            for entry in diff[key]?.arrayValue ?? [] where entry["row"]?["name"]?.stringValue == name { return true }
        }
        return false
    }

    static func steps(_ i: Int) -> JSON {
        .array((0...(i % 3)).map { k in .object(["label": .string("step \(k + 1)"), "seconds": .integer(Int64(30 + (i * 7 + k * 13) % 600))]) })
    }

    // MARK: - A new machine catching up

    static func catchingUp(_ server: SyncServer, work: String, user: String, sealed: Bool)
        throws -> (BenchTable, [String], (export: Double, catchUp: Double)) {
        let n = records
        try server.addUser(user)
        let admin = try PostgresConnection(server.adminConnection(in: server.databases[user] ?? "seam"))
        // Records on the server, counted as they arrive: the rows past the last change tag seen
        // (through the index on zone and tag, so that polling costs what arrived, not the table),
        // then once in full at the end. A first export writes each record once, tags in commit order.
        var counted = 0
        var lastTag = "0"
        func onServer() throws -> Int {
            let r = try admin.rows("SELECT count(*), coalesce(max(change_tag), \(lastTag)) FROM seam.records "
                                   + "WHERE zone = '\(user)' AND change_tag > \(lastTag) AND record_type <> 'seam.key'")[0]
            counted += Int(r[0]) ?? 0
            lastTag = r[1]
            if counted < n { return counted }
            return Int(try admin.rows("SELECT count(*) FROM seam.records WHERE zone = '\(user)' AND NOT deleted AND record_type <> 'seam.key'")[0][0]) ?? 0
        }

        // A: the timers saved before sync is set up, 1,000 a save.
        let a = try Machine(user + "-a", work: work, sealed: sealed)
        defer { a.stop() }
        let saver = try a.connect()
        let insertStart = Harness.now()
        for first in stride(from: 0, to: n, by: insertBatch) {
            let inserts: [JSON] = (first..<min(first + insertBatch, n)).map { i in
                .object(["entity": "Timer", "values": .object(["name": .string("bulk \(i)"), "steps": steps(i),
                                                               "icon": .string(["clock", "bolt", "cup", "bell"][i % 4]),
                                                               "repeatCount": .integer(Int64(1 + i % 5))])])
            }
            _ = try saver.call("org.seam.Store.Save", ["inserts": .array(inserts)])
        }
        let insertTime = Double(Harness.now() - insertStart) / 1e9

        // A's first export: from `seam sync setup` finishing to the server holding every record.
        let phrase = try a.setUp(server, user: user)
        let exported = try waitFor(n, "A's first export to the server", machine: a, onServer)
        // The cycle that exported ends with a report (idle, or an error); then A stops, so that
        // C is measured alone: it needs only the server.
        let afterExport = try a.nextReport(timeout: 600)
        let restartsA = try a.workerRestarts()
        a.stop()

        // C: a new machine, empty stores, the same zone. Watched through two subscriptions, not
        // polled: a client calling every 50 ms is someone else busy, for whom seamd's saves in
        // steps rest between their turns (which the import's saves are), and polling slowed the
        // catch-up it measured by a third or more. The import applies the zone's records in
        // change-tag order, each batch in one save: the last record's arrival is the last batch's.
        guard let lastUUID = try admin.rows("SELECT uuid::text FROM seam.records WHERE zone = '\(user)' AND record_type = 'Timer' "
                                            + "AND NOT deleted ORDER BY change_tag DESC LIMIT 1").first?.first ?? nil else {
            throw BenchError("the server holds no Timer of zone \(user)")
        }
        let c = try Machine(user + "-c", work: work, sealed: sealed)
        defer { c.stop() }
        let counter = try c.connect()
        let watcher = try c.connect()
        _ = try watcher.call("org.seam.Store.Subscribe", ["entity": "Timer", "fields": ["uuid"], "limit": 1], more: true, id: 1)
        _ = try watcher.call("org.seam.Store.Subscribe", ["entity": "Timer", "predicate": .string("uuid == \"\(lastUUID)\""), "fields": ["uuid"]],
                             more: true, id: 2)
        try c.setUp(server, user: user, phrase: phrase)
        let caughtUp = try waitForArrival(on: watcher, within: 120 + Double(n) / 1_000, "C catching up", machine: c)
        let held = Int(try counter.call("org.seam.Store.Count", ["entity": "Timer"]).parameters["count"]?.int64Value ?? 0)
        guard held == n else { throw BenchError("C holds \(held) timers once the last arrived, not \(n); its log:\n\(c.logTail)") }
        // The cycle that imported, then the next (the worker's 5 s poll): does C sync on afterwards?
        let afterCatchingUp = try c.nextReport(timeout: 600)
        let nextStart = Harness.now()
        let nextCycle = try? c.nextReport(after: afterCatchingUp, timeout: 60)
        let nextAfter = Double(Harness.now() - nextStart) / 1e9
        let restartsC = try c.workerRestarts()

        var table = BenchTable("Sync: a new machine catching up with \(n.formatted()) timers\(sealed ? "" : ", fields not sealed") "
                               + "(one zone, PostgreSQL \(server.version) on this machine; "
                               + "times from `seam sync setup` finishing; the server polled every \(Int(pollInterval * 1000)) ms, C "
                               + "watched through subscriptions)",
                               columns: ["step", "records", "time", "records/s", "first record after"])
        func rate(_ seconds: Double) -> String { Int((Double(n) / seconds).rounded()).formatted() }
        if sealed {
            Figures.record("sync.catch_up_records_per_second", Double(n) / caughtUp.total)
            Figures.record("sync.first_export_records_per_second", Double(n) / exported.total)
        }
        table.add(["A: saved locally (Save, \(insertBatch.formatted()) a save; sync not set up yet)", n.formatted(),
                   Harness.duration(insertTime), rate(insertTime), "-"])
        table.add(["A: first export (A's worker → the server holding them all)", n.formatted(),
                   Harness.duration(exported.total), rate(exported.total), Harness.duration(exported.first)])
        table.add(["C: new machine, empty stores → holding them all (the last record heard on C, then Count)", n.formatted(),
                   Harness.duration(caughtUp.total), rate(caughtUp.total), Harness.duration(caughtUp.first)])
        // The server alone: A's records as they are on the server, inserted again into a zone
        // of their own by one connection, as A's worker sent them (the same statement, the
        // same pages, in the same binary form), with nothing else running: the most a first
        // export could reach on this machine from the server's part of the work alone.
        let alone = try postgresAlone(server, from: user, admin: admin)
        table.add(["PostgreSQL alone: the same records, \(alone.page) a statement as A's worker sends them, one connection", n.formatted(),
                   Harness.duration(alone.seconds), rate(alone.seconds), "-"])
        func state(_ s: JSONObject?) -> String {
            guard let s else { return "no report within 60 s" }
            let error = s["lastError"]?.stringValue
            if s["state"]?.stringValue == "error" { return "error: " + (error ?? "?") }
            return "\(s["state"]?.stringValue ?? "?")" + (s["running"]?.boolValue == false ? ", the worker not running" : "")
                + (error.map { " (seamd: " + $0 + ")" } ?? "")
        }
        let againstAlone = alone.seconds / exported.total
        if sealed { Figures.record("sync.first_export_vs_postgres_alone", againstAlone) }
        let notes = [
            String(format: "A's first export: %.2f× the rate of PostgreSQL alone taking the same pages (the server's own ceiling for one zone: "
                   + "a zone's writes commit one after another, under its row in seam.zones)", againstAlone),
            "sync workers afterwards: A's, at the end of the cycle that exported: \(state(afterExport)) (restarts: \(restartsA))",
            "C's, at the end of the cycle that caught up: \(state(afterCatchingUp)); at its next cycle (reported "
                + "\(Harness.duration(nextAfter)) later): \(state(nextCycle)) (restarts: \(restartsC))",
        ]
        return (table, notes, (Double(n) / exported.total, Double(n) / caughtUp.total))
    }

    /// The records of `zone` on the server (fields sealed as exported), inserted again by a new
    /// role into its own zone, 500 a statement on one connection, the next page sent once the
    /// last is answered (as the worker does), timed from the first page sent to the last answered.
    static func postgresAlone(_ server: SyncServer, from zone: String, admin: PostgresConnection) throws -> (seconds: Double, page: Int) {
        let records = try admin.rows("SELECT record_type, uuid::text, fields::text, versions::text FROM seam.records "
                                     + "WHERE zone = '\(zone)' AND record_type <> 'seam.key' AND NOT deleted ORDER BY change_tag")
        let role = zone + "pg"
        try server.addUser(role)
        let pg = try SeamPostgres.PostgresConnection("host=127.0.0.1 port=\(server.port) user=\(role) password=\(server.passwords[role] ?? "") "
                                                     + "dbname=\(server.databases[role] ?? "seam")")
        try pg.pinSearchPath()
        let page = 500
        let pages: [[PostgresParameter]] = stride(from: 0, to: records.count, by: page).map { first in
            let slice = records[first..<min(first + page, records.count)]
            return FirstExportPage.parameters(types: slice.map { $0[0] }, uuids: slice.map { $0[1] }, fields: slice.map { $0[2] },
                                              versions: slice.map { $0[3] })
        }
        let start = Harness.now()
        var inserted = 0
        for parameters in pages {
            try pg.send(FirstExportPage.sql, parameters)
            inserted += try pg.finishSent().count
        }
        let seconds = Double(Harness.now() - start) / 1e9
        guard inserted == records.count else { throw BenchError("PostgreSQL alone inserted \(inserted) of \(records.count) records") }
        return (seconds, page)
    }

    /// Seconds until `watcher`'s subscription 1 (any record, limit 1) hears of the first record
    /// and until its subscription 2 (the last record) hears of the last. Gives up after `limit`.
    static func waitForArrival(on watcher: RawSeam, within limit: Double, _ what: String, machine: Machine) throws -> (first: Double, total: Double) {
        let start = Harness.now()
        func elapsed() -> Double { Double(Harness.now() - start) / 1e9 }
        var first = Double.nan
        while elapsed() < limit {
            while let r = try watcher.bufferedReply() {
                if let e = r.error { throw BenchError("\(what): a subscription ended: \(e) \(r.parameters)") }
                let inserted = !(r.parameters["inserted"]?.arrayValue ?? []).isEmpty || !(r.parameters["rows"]?.arrayValue ?? []).isEmpty
                guard inserted else { continue }
                if first.isNaN { first = elapsed() }
                if r.id == .integer(2) { return (first, elapsed()) }
            }
            var fd = pollfd(fd: watcher.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&fd, 1, 100) >= 0 || errno == EINTR else { throw BenchError("poll: errno \(errno)") }
            if fd.revents != 0 { try watcher.fill() }
        }
        throw BenchError("\(what): the last record did not arrive within \(Int(limit)) s; \(machine.name)'s log:\n\(machine.logTail)")
    }

    /// Polls `count` every 50 ms until it reaches `n`; seconds until the first record and until
    /// the last. Gives up when the count has not moved for 60 s.
    static func waitFor(_ n: Int, _ what: String, machine: Machine, _ count: () throws -> Int) throws -> (first: Double, total: Double) {
        let start = Harness.now()
        func elapsed() -> Double { Double(Harness.now() - start) / 1e9 }
        var first = Double.nan
        var last = 0
        var moved = elapsed()
        while true {
            let k = try count()
            if k > 0, first.isNaN { first = elapsed() }
            if k >= n { return (first, elapsed()) }
            if k != last {
                last = k
                moved = elapsed()
            } else if elapsed() - moved > 60 {
                throw BenchError("\(what): stuck at \(k) of \(n) for 60 s; \(machine.name)'s log:\n\(machine.logTail)")
            }
            Threads.sleep(pollInterval)
        }
    }

    // MARK: - Machines

    /// One machine: a seamd with stores and a configuration of its own (ticker off), syncing
    /// once `setUp` has run `seam sync setup` against it.
    final class Machine {
        let name: String
        let config: String
        let socket: String
        let log: String
        let process: Process

        /// `sealed` false: the worker seals nothing (`SEAM_SYNC_SEAL=0`), to compare.
        init(_ name: String, work: String, sealed: Bool = true) throws {
            self.name = name
            let dir = work + "/" + name
            config = dir + "/config"
            socket = dir + "/s.sock"
            log = dir + "/seamd.log"
            try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
            let roles: JSON = ["roles": ["ticker": ["enabled": false]]]
            try Data(roles.encoded()).write(to: URL(fileURLWithPath: config + "/seamd.json"))
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            process = Process()
            process.executableURL = URL(fileURLWithPath: Executables.sibling("seamd"))
            process.arguments = ["--data-dir", dir + "/data", "--socket", socket, "--config", config + "/seamd.json"]
            if !sealed { process.environment = ProcessInfo.processInfo.environment.merging(["SEAM_SYNC_SEAL": "0"]) { $1 } }
            process.standardOutput = FileHandle(forWritingAtPath: log)
            process.standardError = FileHandle(forWritingAtPath: log)
            try process.run()
            do { try BrokerBenchmarks.waitForSocket(socket) } catch {
                stop()
                throw BenchError("seamd \(name) did not start: \(error); its log:\n\(logTail)")
            }
        }

        /// SIGTERM, and waits for it (it stops its sync worker).
        func stop() { BrokerBenchmarks.stop(process) }

        /// A connection that has said Hello.
        func connect() throws -> RawSeam {
            let c = try RawSeam(socket)
            _ = try c.call("org.seam.Store.Hello", ["version": 1])
            return c
        }

        /// `seam sync setup URL --password-stdin --key-stdin` for this machine, with the zone's
        /// recovery phrase (none: the zone's first machine makes its key); returns the phrase once
        /// it has exited (seamd has started its worker by then).
        @discardableResult
        func setUp(_ server: SyncServer, user: String, phrase: String? = nil) throws -> String? {
            let (exit, output) = try SyncServer.capture(Executables.sibling("seam"),
                                                        ["sync", "setup", server.url(user), "--password-stdin", "--key-stdin", "--config-dir",
                                                         config, "--socket", socket], input: (server.passwords[user] ?? "") + "\n" + (phrase ?? "") + "\n")
            guard exit.succeeded else { throw BenchError("seam sync setup on \(name): \(exit): \(output)") }
            return phrase ?? output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.split(separator: " ").count == 24 }
        }

        /// The worker's next report at the end of a cycle (idle, or an error) that differs from
        /// `previous` (its last pull or its error); throws after `timeout` seconds.
        func nextReport(after previous: JSONObject? = nil, timeout: Double) throws -> JSONObject {
            let c = try RawSeam(socket)
            let start = Harness.now()
            var status: JSONObject = [:]
            while Double(Harness.now() - start) / 1e9 < timeout {
                status = try c.call("org.seam.Sync.Status").parameters
                let ended = (status["state"]?.stringValue == "idle" && status["lastPull"]?.doubleValue != nil)
                    || status["state"]?.stringValue == "error"
                let new = previous.map { $0["lastPull"] != status["lastPull"] || $0["lastError"] != status["lastError"] } ?? true
                if ended && new { return status }
                Threads.sleep(0.02)
            }
            throw BenchError("\(name)'s sync worker made no new report in \(Int(timeout)) s: \(status); its log:\n\(logTail)")
        }

        /// How often seamd has restarted its sync worker.
        func workerRestarts() throws -> Int {
            let roles = try RawSeam(socket).call("org.seam.Store.Status").parameters["roles"]?.arrayValue ?? []
            return Int(roles.first { $0["role"]?.stringValue == "sync" }?["restarts"]?.int64Value ?? 0)
        }

        var logTail: String {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(30).joined(separator: "\n")
        }
    }
}

/// A PostgreSQL for sync, started by `scripts/pg-server` (Debian's packages) in a directory of
/// its own directly under /tmp, on a port of its own, with login roles that each own a zone.
final class SyncServer {
    let directory: String
    private(set) var port = 0
    /// Role name → password.
    private(set) var passwords: [String: String] = [:]
    /// Role name → the database its zone is in ("seam" for the first).
    private(set) var databases: [String: String] = [:]
    private let script: String

    init(directory: String, user: String) throws {
        self.directory = directory
        guard let script = Self.repositoryFile("scripts/pg-server") else {
            throw BenchError("scripts/pg-server not found (run seam-bench from the repository, as scripts/bench does)")
        }
        self.script = script
        // A port someone else holds fails the start: try another.
        var failure = ""
        for _ in 0..<3 {
            try? FileManager.default.removeItem(atPath: directory)
            port = Int.random(in: 20_000...60_000)
            let (exit, output) = try Self.capture(script, ["start", directory, "--port", String(port), "--user", user])
            if exit.succeeded {
                passwords[user] = try Self.password(output)
                return
            }
            failure = output
            _ = try? Self.capture(script, ["stop", directory])
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw BenchError("scripts/pg-server start: \(failure)")
    }

    /// Stops the server and starts it again (its settings read anew).
    func restart() throws {
        let (exit, output) = try Self.capture(script, ["restart", directory])
        guard exit.succeeded else { throw BenchError("scripts/pg-server restart: \(output)") }
    }

    /// Adds a role: a zone of its own.
    func addUser(_ name: String) throws {
        let (exit, output) = try Self.capture(script, ["add-user", directory, name])
        guard exit.succeeded else { throw BenchError("scripts/pg-server add-user \(name): \(output)") }
        passwords[name] = try Self.password(output)
        if let url = output.split(separator: "\n").first(where: { $0.hasPrefix("url: ") }), let slash = url.lastIndex(of: "/") {
            databases[name] = String(url[url.index(after: slash)...])
        }
    }

    /// The zone's URL: a database of its own for a role `add-user` made (pg-server's default).
    func url(_ user: String) -> String { "postgresql://\(user)@127.0.0.1:\(port)/\(databases[user] ?? "seam")" }

    /// The superuser, over the Unix socket in `directory`: sees every zone.
    var adminConnection: String { adminConnection(in: "seam") }

    /// The superuser in `database` (a zone's own, say).
    func adminConnection(in database: String) -> String { "host=\(directory) port=\(port) user=postgres dbname=\(database)" }

    /// The server's major version, as its data directory records it.
    var version: String {
        ((try? String(contentsOfFile: directory + "/data/PG_VERSION", encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server and removes its directory.
    func stop() {
        _ = try? Self.capture(script, ["stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func password(_ output: String) throws -> String {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("password: ") }) else {
            throw BenchError("scripts/pg-server printed no password: \(output)")
        }
        return String(line.dropFirst("password: ".count))
    }

    /// Runs a program to its end with `input` on its standard input (nothing: /dev/null) and
    /// returns how it ended and what it wrote (standard output and error together).
    static func capture(_ path: String, _ arguments: [String], input: String? = nil) throws -> (Processes.Exit, String) {
        // The input goes into the pipe before the program starts (it fits: a pipe holds 64 KiB),
        // so that no write can meet a closed pipe.
        var stdin: Int32 = -1
        if let input {
            let p = try Pipes.make()
            let bytes = Array(input.utf8)
            let written = write(p.write, bytes, bytes.count)
            close(p.write)
            guard written == bytes.count else {
                close(p.read)
                throw BenchError("could not write the input of \(path)")
            }
            stdin = p.read
        }
        defer { if stdin >= 0 { close(stdin) } }
        let output = try Pipes.make()
        let pid: Int32
        do {
            pid = try Processes.spawn(path, arguments: arguments, environment: ProcessInfo.processInfo.environment,
                                      descriptors: [stdin, output.write, output.write])
        } catch {
            close(output.read)
            close(output.write)
            throw error
        }
        close(output.write)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(output.read, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        close(output.read)
        guard let exit = Processes.wait(pid) else { throw BenchError("\(path): lost its process") }
        return (exit, String(decoding: bytes, as: UTF8.self))
    }

    /// `relative` in the repository: from the current directory (scripts/bench runs from the
    /// repository's root) or above this executable (`.build/release/seam-bench`).
    static func repositoryFile(_ relative: String) -> String? {
        var places = [FileManager.default.currentDirectoryPath]
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while url.pathComponents.count > 1 {
            places.append(url.path)
            url = url.deletingLastPathComponent()
        }
        return places.map { $0 + "/" + relative }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
