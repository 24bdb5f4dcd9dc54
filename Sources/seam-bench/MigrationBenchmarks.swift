import Foundation
import SeamJSON
import SeamStore
import SeamSystem
import SeamTimers

/// Migration as a role (issue: migration as a role): the same migration run offline, by
/// `seam-migrate DIR` with no seamd, and through seamd's worker, which `org.seam.Migration.Migrate`
/// starts (seamd closes the stores, the worker builds verified copies and reports progress,
/// seamd verifies them again and swaps them in).
///
/// Each case's store is built once (as the store group builds it: `SEAM_BENCH_ROWS` rows, default
/// 1,000,000) and copied for every run; the two ways take turns run by run, the first of them
/// alternating, so that the machine's noise falls on both alike. Through the worker, every run
/// has a fresh seamd that does not migrate on its own at start; the time runs from the Migrate
/// call (with `more`) to its last reply, `state: "done"`.
enum MigrationBenchmarks {
    static var runs: Int { Bench.size(5, quick: 3) }

    /// One migration through seamd's worker.
    struct ThroughWorker {
        var time: Double
        /// Replies with `state: "running"`, Migrate's own answer included.
        var progressReplies: Int
        /// Until Migrate's answer (the run has started), and until the first progress the worker reported.
        var firstReply: Double
        var firstReport: Double
        /// From the last progress reply to done, and the phase that reply named: what the worker
        /// did after it reported last, its Finished call, then seamd verifying the copies again,
        /// swapping them in and reopening the stores.
        var lastToDone: Double
        var lastPhase: String
    }

    static func run() throws {
        let rows = StoreBenchmarks.rows
        let work = try Harness.scratchDirectory("migration")
        defer { try? FileManager.default.removeItem(atPath: work) }
        // Roles off, and no migration at start: the benchmark starts it.
        let configuration = work + "/seamd.json"
        let roles: JSON = ["roles": ["ticker": ["enabled": false],
                                     "migrate": ["enabled": false, "command": [.string(Executables.sibling("seam-migrate"))]]]]
        try Data(roles.encoded()).write(to: URL(fileURLWithPath: configuration))

        var table = BenchTable("Migration offline and through seamd's worker, \(rows) rows (medians of \(runs), the two alternated run by run; a fresh seamd for each run through the worker)",
                               columns: ["migration", "offline (seam-migrate DIR)", "through the worker", "worker ÷ offline",
                                         "progress replies", "first reply", "first progress report", "last progress → done"])
        var ratios: [String] = []
        for (timers, name) in [(1, "full history"), (4, "add Session.note")] {
            let source = work + "/release-\(timers)"
            try StoreBenchmarks.writeRelease(timers, rows: rows, to: source)
            let plan = try StoreDirectory(path: source, schema: TimerApp.schema).plan()
            let how = plan.files.map { f in
                if case .alter = f.method { return "\(f.configuration): byte copy + ALTER" }
                return "\(f.configuration): rebuild"
            }
            let current = TimerModel.history.current.version
            var offline: [Double] = []
            var worker: [ThroughWorker] = []
            for i in 0..<runs {
                let ways: [() throws -> Void] = [
                    { offline.append(try offlineRun(source, dir: work + "/offline-\(timers)-\(i)")) },
                    { worker.append(try workerRun(source, dir: work + "/worker-\(timers)-\(i)", configuration: configuration)) },
                ]
                for way in i % 2 == 0 ? ways : ways.reversed() { try way() }
            }
            let off = Harness.median(offline)
            let through = Harness.median(worker.map(\.time))
            let tail = Harness.duration(Harness.median(worker.map(\.lastToDone)))
                + " (from " + Set(worker.map(\.lastPhase)).sorted().joined(separator: "/") + ")"
            table.add(["\(name), v\(timers) → v\(current) (\(how.joined(separator: "; ")))", Harness.duration(off), Harness.duration(through),
                       Harness.ratio(through, off), "\(Int(Harness.median(worker.map { Double($0.progressReplies) })))",
                       Harness.duration(Harness.median(worker.map(\.firstReply))),
                       Harness.duration(Harness.median(worker.map(\.firstReport))), tail])
            Figures.record("migration.worker_vs_offline.\(timers == 1 ? "full_history" : "add_attribute")", through / off)
            ratios.append("\(through >= off ? "+" : "")\(Harness.duration(through - off)) (\(Harness.ratio(through, off))) for the \(name)")
            try? FileManager.default.removeItem(atPath: source)
        }
        table.print()
        print("Running the migration as seamd's role rather than offline costs " + ratios.joined(separator: " and ")
              + "; \"last progress → done\" is the part after the worker's last report (named by its phase): the rest of the "
              + "worker's verification, its Finished call, seamd verifying the copies again, the swap and the stores reopened.")
    }

    /// `seam-migrate DIR` on a copy of `source`: process start to exit. Started and reaped
    /// with `Processes` (posix_spawn, a blocking waitpid): Foundation's `waitUntilExit` polls
    /// every 50 ms, which would add up to 50 ms to the offline side only.
    static func offlineRun(_ source: String, dir: String) throws -> Double {
        try StoreBenchmarks.copyDirectory(source, to: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let start = Harness.now()
        let pid = try Processes.spawn(Executables.sibling("seam-migrate"), arguments: [dir],
                                      environment: ProcessInfo.processInfo.environment, descriptors: [-1, -1, -1])
        let exit = Processes.wait(pid)
        let time = Double(Harness.now() - start) / 1e9
        guard let exit, exit.succeeded else { throw BenchError("seam-migrate \(dir): \(exit?.description ?? "lost")") }
        return time
    }

    /// A fresh seamd on a copy of `source`; once it answers, Migrate with `more`, timed to the
    /// reply that says done; then seamd is stopped (SIGTERM) and waited for.
    static func workerRun(_ source: String, dir: String, configuration: String) throws -> ThroughWorker {
        try StoreBenchmarks.copyDirectory(source, to: dir + "/data")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/s.sock"
        let log = dir + "/seamd.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let seamd = Process()
        seamd.executableURL = URL(fileURLWithPath: Executables.sibling("seamd"))
        seamd.arguments = ["--data-dir", dir + "/data", "--socket", socket, "--config", configuration]
        seamd.standardOutput = FileHandle.nullDevice
        seamd.standardError = FileHandle(forWritingAtPath: log)
        try seamd.run()
        defer { BrokerBenchmarks.stop(seamd) }
        func failure(_ what: String) -> BenchError {
            BenchError(what + "; seamd's log:\n" + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? ""))
        }

        try BrokerBenchmarks.waitForSocket(socket)
        let c = try RawSeam(socket)
        _ = try c.call("org.seam.Store.Hello", ["version": 1])
        let start = Harness.now()
        func elapsed() -> Double { Double(Harness.now() - start) / 1e9 }
        var reply = try c.call("org.seam.Migration.Migrate", more: true)
        var out = ThroughWorker(time: .nan, progressReplies: 1, firstReply: elapsed(), firstReport: .nan, lastToDone: .nan, lastPhase: "")
        var lastProgress = out.firstReply
        guard reply.parameters["state"]?.stringValue == "running" else {
            throw failure("Migrate answered \(reply.parameters["state"]?.stringValue ?? "nothing") rather than running")
        }
        while reply.continues {
            reply = try c.reply()
            if let e = reply.error { throw failure("the migration failed: \(e) \(reply.parameters)") }
            guard reply.parameters["state"]?.stringValue == "running" else { continue }
            lastProgress = elapsed()
            out.lastPhase = reply.parameters["progress"]?["phase"]?.stringValue ?? "?"
            out.progressReplies += 1
            if out.firstReport.isNaN { out.firstReport = lastProgress }
        }
        out.time = elapsed()
        out.lastToDone = out.time - lastProgress
        guard reply.parameters["state"]?.stringValue == "done" else { throw failure("the last reply was \(reply.parameters)") }
        return out
    }
}
