import Foundation
import SeamSchema
import SeamStore
import SeamTimers

/// Migration benchmarks (issue: Store files that migrate safely).
///
/// One run builds a store with `SEAM_BENCH_ROWS` rows (default 1,000,000) at the oldest release
/// and times, side by side: `VACUUM INTO` of the same files (the cost of copying them at all),
/// the full-history migration to the current version, and a migration that only adds an
/// attribute. Each migration runs in a child process so that its peak RSS is its own.
enum StoreBenchmarks {
    static var runs: Int { Bench.size(5, quick: 3) }

    static func run() throws {
        let rows = Self.rows
        let work = NSTemporaryDirectory() + "seam-bench-store-\(getpid())"
        try? FileManager.default.removeItem(atPath: work)
        defer { try? FileManager.default.removeItem(atPath: work) }
        var table = BenchTable("Migration of \(rows) rows (medians of \(runs), each migration run next to a VACUUM INTO run)",
                               columns: ["operation", "time", "× VACUUM INTO", "peak RSS", "store size"])

        // The oldest release: six entities (Timer, Folder, Run, Setting, SyncToken, SyncRecord).
        let oldest = work + "/oldest"
        try writeRelease(1, rows: rows, to: oldest)
        let oldestSize = size(oldest)
        let (vacuumOld, full) = try interleaved(oldest, work: work, mode: "timers")
        table.add(["VACUUM INTO (release-1 files)", Harness.duration(vacuumOld), "1.00×", "-", mb(oldestSize)])
        table.add(["full-history migration v1 → v\(TimerModel.history.current.version)", Harness.duration(full.time), Harness.ratio(full.time, vacuumOld),
                   mb(full.peakRSS), mb(full.size)])

        // The current release, then a build whose only change is one added attribute per file.
        let current = work + "/current"
        let latest = TimerModel.history.current.version
        try writeRelease(latest, rows: rows, to: current)
        let (vacuumCurrent, add) = try interleaved(current, work: work, mode: "add-attribute")
        table.add(["VACUUM INTO (release-\(latest) files)", Harness.duration(vacuumCurrent), "1.00×", "-", mb(size(current))])
        table.add(["add-an-attribute migration", Harness.duration(add.time), Harness.ratio(add.time, vacuumCurrent),
                   mb(add.peakRSS), mb(add.size)])
        table.print()
        print("targets: full-history ≤ 3.0× VACUUM INTO, add-an-attribute ≤ 1.5×, peak RSS ≤ 100 MB")
        Figures.record("store.full_history_vs_vacuum", full.time / vacuumOld)
        Figures.record("store.add_attribute_vs_vacuum", add.time / vacuumCurrent)
        Figures.record("store.migration_peak_rss", Double(max(full.peakRSS, add.peakRSS)))
        try storeFiles(current, work: work)
    }

    /// What guarding the store files costs (issue: nothing lost at rest), on the current
    /// release's stores of `rows` rows: seamd's start until every store has passed its check at
    /// open, beside `PRAGMA quick_check` of the same files alone; `seam backup` of them while seamd
    /// serves, beside `VACUUM INTO`; and a one-row save's round trip with the check that each
    /// store file is still at its path, beside seamd with it off (`SEAM_FILE_CHECKS=0`); and the
    /// same round trip with seamd counting its metrics, beside it not counting (`SEAM_METRICS=0`).
    static func storeFiles(_ source: String, work: String) throws {
        var table = BenchTable("Store files: the check at open, seam backup, the file check before each save (\(rows) rows, "
                               + "medians of \(runs), each beside its comparison run by run)",
                               columns: ["measure", "Seam", "comparison", "ratio", "target"])
        var opens: [Double] = [], checks: [Double] = [], backups: [Double] = [], vacuums: [Double] = []
        for i in 0..<runs {
            let dir = work + "/files-\(i)"
            try copyDirectory(source, to: dir + "/data")
            // quick_check alone, then seamd started on the same files until both stores are open.
            checks.append(try Harness.time(runs: 1) {
                for name in ["Cloud", "Local"] {
                    let db = try Database(path: "\(dir)/data/\(name).sqlite", options: { var o = Database.Options(); o.readOnly = true; return o }())
                    _ = try db.check(quick: true)
                }
            }[0])
            let started = Harness.now()
            let (process, socket) = try ChannelBenchmarks.startSeamd(dir + "/seamd", data: dir + "/data", sync: false)
            let c = try RawSeam(socket)
            while true {
                let stores = try c.call("org.seam.Store.Status").parameters["stores"]?.arrayValue ?? []
                if stores.allSatisfy({ $0["state"]?.stringValue == "open" }) { break }
                guard Double(Harness.now() - started) / 1e9 < 120 else { throw BenchError("the stores did not open: \(stores)") }
                usleep(200)
            }
            opens.append(Double(Harness.now() - started) / 1e9)
            // seam backup through this seamd, beside VACUUM INTO of the same files.
            vacuums.append(try vacuumInto(dir + "/data", work: dir, runs: 1))
            let set = dir + "/set"
            backups.append(try Harness.time(runs: 1) {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: Executables.sibling("seam"))
                p.arguments = ["backup", set, "--socket", socket]
                p.standardOutput = FileHandle.nullDevice
                p.standardError = FileHandle.nullDevice
                try p.run()
                p.waitUntilExit()
                guard p.terminationStatus == 0 else { throw BenchError("seam backup failed") }
            }[0])
            BrokerBenchmarks.stop(process)
            try? FileManager.default.removeItem(atPath: dir)
        }
        let open = Harness.median(opens), check = Harness.median(checks), backup = Harness.median(backups), vacuum = Harness.median(vacuums)
        table.add(["seamd start → every store checked and open, beside quick_check of both files alone", Harness.duration(open),
                   Harness.duration(check), Harness.ratio(open, check), "-"])
        table.add(["seam backup (through seamd), beside VACUUM INTO of both files", Harness.duration(backup), Harness.duration(vacuum),
                   Harness.ratio(backup, vacuum), "≤ 1.5×"])
        let (with, without) = try saveCostBeside(work: work + "/checks", environment: ["SEAM_FILE_CHECKS": "0"])
        table.add(["one-row save round trip p50 (one CPU), with the file check, beside without it", Harness.duration(with),
                   Harness.duration(without), Harness.ratio(with, without), "≤ 1.05×"])
        let (counted, uncounted) = try saveCostBeside(work: work + "/metrics", environment: ["SEAM_METRICS": "0"])
        table.add(["one-row save round trip p50 (one CPU), counting metrics, beside not counting (SEAM_METRICS=0)",
                   Harness.duration(counted), Harness.duration(uncounted), Harness.ratio(counted, uncounted), "≤ 1.02×"])
        table.print()
        Figures.record("store.backup_vs_vacuum", backup / vacuum)
        Figures.record("store.save_with_file_check_vs_without", with / without)
        Figures.record("store.save_with_metrics_vs_without", counted / uncounted)
        Figures.record("store.open_with_check_vs_quick_check", open / check)
    }

    /// One-row save round trips (p50) on two seamds, one as shipped and one with `environment`
    /// turning something off (the file check before each save, the metrics' counting), taking
    /// turns 100 saves at a time after 1,500 untimed each.
    static func saveCostBeside(work: String, environment: [String: String]) throws -> (Double, Double) {
        let on = try ChannelBenchmarks.SaveCost(work: work + "-on", channels: 0)
        defer { on.stop() }
        let off = try ChannelBenchmarks.SaveCost(work: work + "-off", channels: 0, environment: environment)
        defer { off.stop() }
        _ = try on.measure(rounds: 1_500)
        _ = try off.measure(rounds: 1_500)
        // Every process on one CPU: placed by the scheduler, one seamd's wakeups may cross CPUs
        // and the other's not, which costs tens of microseconds a round trip here.
        let placement: CPUPlacement = CPUPlacement.available.contains(.oneCPU) ? .oneCPU : .scheduler
        try placement.apply(client: true, servers: [on.process.processIdentifier, off.process.processIdentifier])
        defer { try? CPUPlacement.scheduler.apply(client: true, servers: []) }
        var a: [Double] = [], b: [Double] = []
        for _ in 0..<Bench.size(40, quick: 10) {
            a += try on.measure(rounds: 100)
            b += try off.measure(rounds: 100)
        }
        return (Harness.median(a), Harness.median(b))
    }

    /// `SEAM_BENCH_ROWS`, default 1,000,000 (100,000 quick): the rows of the stores the migration
    /// benchmarks build.
    static var rows: Int { Int(ProcessInfo.processInfo.environment["SEAM_BENCH_ROWS"] ?? "") ?? Bench.size(1_000_000, quick: 100_000) }

    /// Writes into `dir` the store files of the release whose timer model was at `timers`,
    /// `rows` rows spread evenly over the entities of that release.
    static func writeRelease(_ timers: Int, rows: Int, to dir: String) throws {
        guard let versions = TimerApp.release(where: TimerModel.name, is: timers) else { throw BenchError("no release with Timers v\(timers)") }
        let entities = versions.reduce(0) { n, v in n + (TimerApp.schema.model(v.key)?.version(v.value)?.entities.count ?? 0) }
        let perEntity = rows / max(entities, 1)
        print("building \(perEntity * entities) rows at release \(timers) …")
        try FixtureWriter(schema: TimerApp.schema, versions: versions, rowsPerEntity: perEntity).write(to: dir)
    }

    /// The timer schema plus a next version that only adds an attribute to Timer and to Session.
    static func addAttributeSchema() throws -> Schema {
        let latest = TimerModel.history.current.version
        var next = try TimerModel.draft(latest).next()
        try next.modify("Timer") { e throws(SchemaError) in try e.add(Attribute("benchExtra", .string, optional: true)) }
        try next.modify("Session") { e throws(SchemaError) in try e.add(Attribute("benchExtra", .string, optional: true)) }
        let timers = try VersionedModel((1...latest).map { try TimerModel.draft($0) } + [next])
        return try Schema([timers, SyncMetadataModel.history])
    }

    /// Child mode: `seam-bench __migrate MODE DIR` migrates and exits.
    static func child(_ arguments: [String]) throws {
        let schema = arguments[0] == "add-attribute" ? try addAttributeSchema() : TimerApp.schema
        _ = try StoreDirectory(path: arguments[1], schema: schema).migrate()
        print(Harness.peakRSS())
    }

    struct Measured { var time: Double; var peakRSS: Int; var size: Int64 }

    /// VACUUM INTO and the migration, alternated run by run, so that the machine's noise falls on
    /// both alike; medians of each.
    private static func interleaved(_ source: String, work: String, mode: String) throws -> (Double, Measured) {
        var vacuums: [Double] = []
        var migrations: [Double] = []
        var peak = 0
        var resultSize: Int64 = 0
        for i in 0..<runs {
            vacuums.append(try vacuumInto(source, work: work, runs: 1))
            let dir = work + "/run-\(mode)-\(i)"
            try copyDirectory(source, to: dir)
            let start = Harness.now()
            let (status, rss) = try spawnSelf(["__migrate", mode, dir])
            migrations.append(Double(Harness.now() - start) / 1e9)
            guard status == 0 else { throw BenchError("migration child exited with \(status)") }
            peak = max(peak, rss)
            resultSize = size(dir)
            try? FileManager.default.removeItem(atPath: dir)
        }
        return (Harness.median(vacuums), Measured(time: Harness.median(migrations), peakRSS: peak, size: resultSize))
    }

    private static func migrations(from source: String, work: String, mode: String) throws -> Measured {
        var times: [Double] = []
        var peak = 0
        var resultSize: Int64 = 0
        for i in 0..<runs {
            let dir = work + "/run-\(mode)-\(i)"
            try copyDirectory(source, to: dir)
            let start = Harness.now()
            let (status, rss) = try spawnSelf(["__migrate", mode, dir])
            times.append(Double(Harness.now() - start) / 1e9)
            guard status == 0 else { throw BenchError("migration child exited with \(status)") }
            peak = max(peak, rss)
            resultSize = size(dir)
            try? FileManager.default.removeItem(atPath: dir)
        }
        return Measured(time: Harness.median(times), peakRSS: peak, size: resultSize)
    }

    private static func vacuumInto(_ dir: String, work: String, runs: Int) throws -> Double {
        var times: [Double] = []
        for i in 0..<runs {
            let out = work + "/vacuum-\(i)"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let start = Harness.now()
            for name in ["Cloud", "Local"] {
                let db = try Database(path: "\(dir)/\(name).sqlite")
                try db.run("VACUUM INTO ?", [.string("\(out)/\(name).sqlite")])
            }
            times.append(Double(Harness.now() - start) / 1e9)
            try? FileManager.default.removeItem(atPath: out)
        }
        return Harness.median(times)
    }

    static func copyDirectory(_ from: String, to: String) throws {
        try FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: true)
        for name in ["Cloud.sqlite", "Local.sqlite"] {
            try FileManager.default.copyItem(atPath: "\(from)/\(name)", toPath: "\(to)/\(name)")
        }
    }

    private static func size(_ dir: String) -> Int64 {
        ["Cloud.sqlite", "Local.sqlite"].reduce(0) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: "\(dir)/\(name)")[.size] as? Int64) ?? 0)
        }
    }

    private static func mb(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }
    private static func mb(_ bytes: Int64) -> String { mb(Int(bytes)) }

    /// Runs this executable again with `arguments`; returns its exit status and the peak RSS it
    /// reports (its own VmHWM, which a fresh process image starts anew).
    static func spawnSelf(_ arguments: [String]) throws -> (Int32, Int) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let rss = Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        return (p.terminationStatus, rss)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
