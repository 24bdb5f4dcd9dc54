import Foundation
import SeamJSON
import SeamProtocol
import SeamSystem

/// Many people on one sync server (issue: sync for many people): `zones` zones of three
/// machines each (real seamd processes with their sync workers), every zone's first machine
/// renaming its timer at a steady rate (once a second), its other two subscribed to it. A
/// save's propagation — from just before the Save is written on the first machine to the diff
/// at each of the others — with 1, 10 and all zones saving; and the server's work per synced
/// record (pg_stat_statements: rows its statements returned, buffer pages they touched) as more
/// zones write. Targets: p99 with every zone ≤ 2× with one; the work per record flat.
enum ZoneBenchmarks {
    static var zones: Int { Int(ProcessInfo.processInfo.environment["SEAM_BENCH_ZONES"] ?? "") ?? Bench.size(100, quick: 6) }
    static let machinesPerZone = 3
    static var rounds: Int { Bench.size(10, quick: 4) }
    /// Saves of each zone when few zones save: enough deliveries for a p99 to compare with.
    static func rounds(active: Int) -> Int { max(rounds, Bench.size(60, quick: 12) / active) }

    struct Zone {
        var user: String
        var machines: [SyncBenchmarks.Machine]
        var saver: RawSeam
        var timer: String
        var subscribers: [RawSeam]
    }

    struct Phase {
        var active: Int
        var propagation: [Double]
        var rowsPerRecord: Double
        var pagesPerRecord: Double
        /// The machine's CPU over the phase.
        var cpu: MachineCPU
        var seconds: Double
    }

    static func run(_ server: SyncServer, work: String) throws -> BenchTable {
        // Room for every worker's connection, and the statistics of every statement.
        let admin = try PostgresConnection(server.adminConnection)
        try admin.execute("ALTER SYSTEM SET max_connections = \(zones * machinesPerZone + 50)")
        try admin.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        try server.restart()
        // A statement counts once per database: room for every zone's (known once the library is
        // loaded; taken at the next start).
        try PostgresConnection(server.adminConnection).execute("ALTER SYSTEM SET pg_stat_statements.max = \(max(5_000, zones * 100))")
        try server.restart()
        let stats = try PostgresConnection(server.adminConnection)
        try stats.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

        var all: [Zone] = []
        defer { for z in all { for m in z.machines { m.stop() } } }
        for z in 0..<zones {
            let user = "zone\(z)"
            try server.addUser(user)
            var machines: [SyncBenchmarks.Machine] = []
            var phrase: String?
            for k in 0..<machinesPerZone {
                let m = try SyncBenchmarks.Machine("z\(z)m\(k)", work: work)
                machines.append(m)
                phrase = try m.setUp(server, user: user, phrase: phrase)
            }
            let saver = try machines[0].connect()
            let timer = UUID().uuidString.lowercased()
            _ = try saver.call("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["uuid": .string(timer), "name": .string("z\(z) r0")]]]])
            all.append(Zone(user: user, machines: machines, saver: saver, timer: timer, subscribers: []))
        }
        // Every machine has the zone's timer before anything is timed; then the subscriptions.
        for (z, zone) in all.enumerated() {
            for m in zone.machines.dropFirst() {
                let c = try m.connect()
                let start = Harness.now()
                while try c.call("org.seam.Store.Count", ["entity": "Timer", "predicate": "uuid == $u", "parameters": ["u": .string(zone.timer)]])
                    .parameters["count"]?.int64Value != 1 {
                    if Double(Harness.now() - start) / 1e9 > 60 { throw BenchError("\(m.name) never got zone \(z)'s timer; its log:\n\(m.logTail)") }
                    Threads.sleep(0.05)
                }
                let s = try m.connect()
                _ = try s.call("org.seam.Store.Subscribe", ["entity": "Timer", "predicate": "uuid == $u", "parameters": ["u": .string(zone.timer)],
                                                            "fields": ["name"]], more: true)
                all[z].subscribers.append(s)
            }
        }
        let idle = try idleWork(stats)
        var phases: [Phase] = []
        for active in Array(Set([1, min(10, zones), zones])).sorted() {
            phases.append(try phase(all, active: active, stats: stats, idle: idle))
        }

        var table = BenchTable("\(zones) zones of \(machinesPerZone) machines on one PostgreSQL \(server.version) (real seamd and seam-sync each; "
                               + "a save once a second in each active zone, \(rounds(active: 1)) each with one zone saving, \(rounds(active: 10)) with ten, \(rounds) with more; its propagation to the zone's other machines)",
                               columns: ["zones saving", "deliveries", "propagation p50", "propagation p99", "p99 / one zone's",
                                         "server rows per synced record", "server pages per synced record",
                                         "machine busy", "CPU: postgres / seamd / seam-sync"])
        let base = Harness.percentile(phases[0].propagation, 0.99)
        for p in phases {
            let p99 = Harness.percentile(p.propagation, 0.99)
            table.add([String(p.active), String(p.propagation.count), Harness.duration(Harness.percentile(p.propagation, 0.5)),
                       Harness.duration(p99), Harness.ratio(p99, base), String(format: "%.1f", p.rowsPerRecord),
                       String(format: "%.1f", p.pagesPerRecord),
                       String(format: "%.0f%%", 100 * p.cpu.busy / max(p.cpu.total, 0.001)),
                       ["postgres", "seamd", "seam-sync"].map { String(format: "%.0f%%", 100 * (p.cpu.byCommand[$0] ?? 0) / p.seconds) }
                           .joined(separator: " / ")])
        }
        Figures.record("sync.zones_p99_ratio", Harness.percentile(phases.last!.propagation, 0.99) / base)
        Figures.record("sync.zones_pages_per_record_ratio", phases.last!.pagesPerRecord / max(phases[0].pagesPerRecord, 0.001))
        return table
    }

    /// `active` zones save, a save a second each (spread over the second), `rounds` times; every
    /// delivery to their other machines timed.
    /// The server's work so far: rows its statements returned, buffer pages they touched.
    static func serverWork(_ stats: PostgresConnection) throws -> (rows: Double, pages: Double) {
        let r = try stats.rows("SELECT coalesce(sum(rows), 0), coalesce(sum(shared_blks_hit + shared_blks_read), 0) FROM pg_stat_statements")[0]
        return (Double(r[0]) ?? 0, Double(r[1]) ?? 0)
    }

    /// The server's work a second with no zone saving: every worker's own cycles (each syncs
    /// every 5 s), taken off each phase's so that what is left is the saves'.
    static func idleWork(_ stats: PostgresConnection) throws -> (rows: Double, pages: Double) {
        let seconds = Bench.size(15.0, quick: 5.0)
        let before = try serverWork(stats)
        Threads.sleep(seconds)
        let after = try serverWork(stats)
        return ((after.rows - before.rows) / seconds, (after.pages - before.pages) / seconds)
    }

    static func phase(_ all: [Zone], active: Int, stats: PostgresConnection, idle: (rows: Double, pages: Double)) throws -> Phase {
        func serverWork() throws -> (rows: Double, pages: Double) { try Self.serverWork(stats) }
        let zones = Array(all.prefix(active))
        var sent: [String: UInt64] = [:]
        var propagation: [Double] = []
        let before = try serverWork()
        let cpuBefore = MachineCPU.now()
        let interval = 1.0 / Double(active)
        let started = Harness.now()
        var next = 0
        let rounds = rounds(active: active)
        let total = rounds * active
        let expected = total * (machinesPerZone - 1)
        let fds = zones.flatMap { z in z.subscribers.map(\.fd) }
        let owners = zones.enumerated().flatMap { i, z in z.subscribers.map { (i, $0) } }
        while propagation.count < expected {
            let elapsed = Double(Harness.now() - started) / 1e9
            if next < total, elapsed >= Double(next) * interval {
                let zone = zones[next % active]
                let name = "z\(next % active) r\(next / active + 1) \(active)"
                sent[name] = Harness.now()
                _ = try zone.saver.call("org.seam.Store.Save", ["updates": [["entity": "Timer", "uuid": .string(zone.timer),
                                                                             "values": ["name": .string(name)]]]])
                next += 1
                continue
            }
            if elapsed > Double(total) * interval + 60 { throw BenchError("\(expected - propagation.count) deliveries missing after 60 s") }
            let wait = next < total ? max(0, Double(next) * interval - elapsed) : 0.05
            let ready = UnixSocket.waitReadable(fds, timeoutMilliseconds: Int32(min(50, wait * 1000)))
            let now = Harness.now()
            for (i, isReady) in ready.enumerated() where isReady {
                let subscriber = owners[i].1
                try subscriber.fill()
                while let reply = try subscriber.bufferedReply() {
                    for row in reply.parameters["updated"]?.arrayValue ?? [] {
                        if let name = row["row"]?["name"]?.stringValue, let at = sent[name] { propagation.append(Double(now - at) / 1e9) }
                    }
                }
            }
        }
        let cpu = MachineCPU.now().since(cpuBefore)
        let after = try serverWork()
        let records = Double(total)
        let seconds = Double(Harness.now() - started) / 1e9
        return Phase(active: active, propagation: propagation, rowsPerRecord: (after.rows - before.rows - idle.rows * seconds) / records,
                     pagesPerRecord: (after.pages - before.pages - idle.pages * seconds) / records, cpu: cpu, seconds: seconds)
    }
}
