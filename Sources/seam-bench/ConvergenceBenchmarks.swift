import Foundation
import SeamJSON
import SeamSchema
import SeamSystem

/// Sync that converges (issue: per-field conflicts, randomised machines): three machines on one
/// server, 1,000 random edits made on random machines while every sync worker is paused
/// (SIGSTOP), so that they are truly concurrent; then the workers go on and the time runs until
/// the three machines' Cloud data compare equal. `SEAM_BENCH_CONVERGENCE_EDITS` sets the count.
enum ConvergenceBenchmarks {
    static var edits: Int { Int(ProcessInfo.processInfo.environment["SEAM_BENCH_CONVERGENCE_EDITS"] ?? "") ?? Bench.size(1000, quick: 300) }
    static var runs: Int { Bench.size(3, quick: 1) }

    static func run() throws {
        let work = try Harness.scratchDirectory("convergence")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let server = try SyncServer(directory: "/tmp/seam-bench-conv-pg-\(getpid())", user: "conv")
        defer { server.stop() }
        let machines = try (0..<3).map { try SyncBenchmarks.Machine("m\($0)", work: work) }
        defer { machines.forEach { $0.stop() } }
        var phrase: String?
        for m in machines { phrase = try m.setUp(server, user: "conv", phrase: phrase) }
        let connections = try machines.map { try $0.connect() }

        // 200 shared timers to edit, known to every machine before the first run.
        var timers: [String] = []
        let inserts: [JSON] = (0..<200).map { i in
            .object(["entity": "Timer", "values": .object(["name": .string("conv \(i)"), "steps": SyncBenchmarks.steps(i)])])
        }
        let made = try connections[0].call("org.seam.Store.Save", ["inserts": .array(inserts)]).parameters
        timers = (made["changes"]?.arrayValue ?? []).filter { $0["kind"]?.stringValue == "insert" }.compactMap { $0["uuid"]?.stringValue }
        guard timers.count == 200 else { throw BenchError("the 200 timers were not made: \(made)") }
        try waitUntilEqual(connections, timeout: 60)

        var table = BenchTable("Convergence: three machines on one PostgreSQL 15, \(edits.formatted()) random edits of 200 timers made "
                               + "while every sync worker was paused, then the time until all three compare equal (\(runs) runs)",
                               columns: ["run", "edits", "conflicting field edits", "converged after", "edits/s settled"])
        var times: [Double] = []
        var random = SplitMix64(seed: 7)
        for run in 1...runs {
            let pids = try machines.map { try workerPID($0) }
            for p in pids { Processes.signal(p, Signals.stop) }
            var touched: [String: Int] = [:]
            for i in 0..<edits {
                let c = connections[Int(random.next() % 3)]
                let t = timers[Int(random.next() % UInt64(timers.count))]
                let field = ["name", "colour", "icon", "repeatCount"][Int(random.next() % 4)]
                let value: JSON = field == "repeatCount" ? .integer(Int64(1 + random.next() % 9)) : .string("r\(run)-\(i)")
                _ = try c.call("org.seam.Store.Save", ["updates": [["entity": "Timer", "uuid": .string(t), "values": [field: value]]]])
                touched["\(t).\(field)", default: 0] += 1
            }
            let start = Harness.now()
            for p in pids { Processes.signal(p, Signals.resume) }
            try waitUntilEqual(connections, timeout: 120)
            let seconds = Double(Harness.now() - start) / 1e9
            times.append(seconds)
            let conflicting = touched.values.filter { $0 > 1 }.reduce(0, +)
            table.add(["\(run)", edits.formatted(), conflicting.formatted(), Harness.duration(seconds),
                       Int((Double(edits) / seconds).rounded()).formatted()])
        }
        table.add(["median", edits.formatted(), "", Harness.duration(Harness.median(times)),
                   Int((Double(edits) / Harness.median(times)).rounded()).formatted()])
        table.print()
        Figures.record("convergence.edits_per_second_settled", Double(edits) / Harness.median(times))
        print("(\"conflicting field edits\": edits of a field that another edit in the same run also changed; the later wins everywhere)")
    }

    static func workerPID(_ m: SyncBenchmarks.Machine) throws -> Int32 {
        let roles = try m.connect().call("org.seam.Store.Status").parameters["roles"]?.arrayValue ?? []
        guard let pid = roles.first(where: { $0["role"]?.stringValue == "sync" })?["pid"]?.int64Value else {
            throw BenchError("\(m.name) runs no sync worker; its log:\n\(m.logTail)")
        }
        return Int32(pid)
    }

    /// Polls until the three machines' timers and groups are equal (every 20 ms).
    static func waitUntilEqual(_ connections: [RawSeam], timeout: Double) throws {
        let start = Harness.now()
        while Double(Harness.now() - start) / 1e9 < timeout {
            let views = try connections.map { c -> String in
                let rows = try c.call("org.seam.Store.Fetch", ["entity": "Timer", "sort": "uuid", "fields": ["uuid", "name", "colour", "icon", "repeatCount"]])
                return String(decoding: JSON.object(rows.parameters).encoded(), as: UTF8.self)
                    .replacingOccurrences(of: "\"sequence\":[0-9]+", with: "", options: .regularExpression)
            }
            if views[0] == views[1] && views[1] == views[2] { return }
            Threads.sleep(0.02)
        }
        throw BenchError("the machines did not converge within \(Int(timeout)) s")
    }
}
