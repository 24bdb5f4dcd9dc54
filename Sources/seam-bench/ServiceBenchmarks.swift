import Foundation
import SeamClient
import SeamSystem

/// Seam as a service: how long `seam up` takes until seamd answers (beside starting seamd
/// directly), and how long a killed ticker is gone before its replacement follows the sessions
/// again (the first restart waits 1 s by design: the backoff's first step).
enum ServiceBenchmarks {
    static var runs: Int { Bench.size(15, quick: 5) }

    static func run() throws {
        let work = try Harness.scratchDirectory("service")
        defer { try? FileManager.default.removeItem(atPath: work) }
        var table = BenchTable("Seam as a service (\(runs) runs each; medians, with min and max)",
                               columns: ["measure", "median", "min", "max", "note"])
        let socket = work + "/s.sock"
        let environment = env(work, socket: socket)

        // seam up → first answered call, on fresh stores and on existing ones; seamd started
        // directly (no seam up) beside it.
        var fresh: [Double] = [], again: [Double] = [], direct: [Double] = [], down: [Double] = []
        for i in 0..<runs {
            let data = work + "/data-\(i)"
            var e = environment
            e["SEAM_DATA_DIR"] = data
            fresh.append(try timeToAnswer(socket) { try spawn(Executables.sibling("seam"), ["up"], e) })
            down.append(try timed { try runToEnd(Executables.sibling("seam"), ["down"], e) })
            again.append(try timeToAnswer(socket) { try spawn(Executables.sibling("seam"), ["up"], e) })
            try runToEnd(Executables.sibling("seam"), ["down"], e)
            var pid: Int32 = 0
            direct.append(try timeToAnswer(socket) {
                pid = try spawn(Executables.sibling("seamd"), ["--socket", socket, "--data-dir", data], e)
            })
            Processes.signal(pid, Signals.terminate)
            _ = Processes.wait(pid, timeout: 10)
            _ = Processes.reap()  // the `seam up` processes, which exited once seamd answered
        }
        table.add(row("seam up → first answered call (fresh stores)", fresh, "stores created, ticker started"))
        table.add(row("seam up → first answered call (existing stores)", again, "\(Harness.ratio(Harness.median(again), Harness.median(direct))) of seamd started directly"))
        table.add(row("seamd started directly → first answered call", direct, "the baseline: no seam up"))
        table.add(row("seam down (until seamd has gone)", down, "SIGTERM, clean shutdown, ticker stopped"))

        // A killed ticker: from SIGKILL to the replacement's subscription being live again.
        var back: [Double] = [], spawnToLive: [Double] = []
        for i in 0..<Bench.size(5, quick: 2) {
            var e = environment
            e["SEAM_DATA_DIR"] = work + "/ticker-\(i)"
            try runToEnd(Executables.sibling("seam"), ["up"], e)
            defer { _ = try? runToEnd(Executables.sibling("seam"), ["down"], e) }
            let c = try SeamConnection.connect(path: socket)
            let (pid, _) = try waitForTicker(c, notPID: nil)
            let killed = Harness.now()
            kill(pid, SIGKILL)
            let (_, uptime) = try waitForTicker(c, notPID: pid)
            let total = Double(Harness.now() - killed) / 1e9
            back.append(total)
            spawnToLive.append(uptime)
        }
        table.add(row("killed ticker → replacement following sessions", back, "includes the 1 s first backoff step"))
        table.add(row("  of which: replacement started → subscribed", spawnToLive, "process start, Hello, Subscribe"))
        table.print()
        Figures.record("service.seam_up_fresh", Harness.median(fresh))
        Figures.record("service.seam_up_existing_vs_direct", Harness.median(again) / Harness.median(direct))
        Figures.record("service.seam_down", Harness.median(down))
        Figures.record("service.ticker_replaced", Harness.median(back))
    }

    static func env(_ work: String, socket: String) -> [String: String] {
        var e = ProcessInfo.processInfo.environment
        e["SEAM_SOCKET"] = socket
        e["XDG_STATE_HOME"] = work + "/state"
        e["XDG_CONFIG_HOME"] = work + "/config"
        return e
    }

    static func row(_ name: String, _ xs: [Double], _ note: String) -> [String] {
        [name, Harness.duration(Harness.median(xs)), Harness.duration(xs.min() ?? .nan), Harness.duration(xs.max() ?? .nan), note]
    }

    /// Seconds from `start` until a Status call on `socket` is answered.
    static func timeToAnswer(_ socket: String, _ start: () throws -> Void) throws -> Double {
        let t0 = Harness.now()
        try start()
        while true {
            if let c = try? SeamConnection.connect(path: socket), (try? c.status()) != nil { return Double(Harness.now() - t0) / 1e9 }
            if Double(Harness.now() - t0) / 1e9 > 20 { throw BenchError("nothing answered on \(socket) within 20 s") }
            usleep(500)
        }
    }

    static func timed(_ body: () throws -> Void) throws -> Double {
        let t0 = Harness.now()
        try body()
        return Double(Harness.now() - t0) / 1e9
    }

    @discardableResult
    static func spawn(_ path: String, _ args: [String], _ env: [String: String]) throws -> Int32 {
        try Processes.spawn(path, arguments: args, environment: env, descriptors: [-1, -1, -1])
    }

    static func runToEnd(_ path: String, _ args: [String], _ env: [String: String]) throws {
        let pid = try spawn(path, args, env)
        guard let exit = Processes.wait(pid, timeout: 30), exit.succeeded else { throw BenchError("\(path) \(args) failed") }
    }

    /// Waits until the ticker runs (with a pid other than `notPID`) and its subscription is live;
    /// returns its pid and seconds since it started.
    static func waitForTicker(_ c: SeamConnection, notPID: Int32?) throws -> (Int32, Double) {
        let t0 = Harness.now()
        while Double(Harness.now() - t0) / 1e9 < 20 {
            let s = try c.status()
            if let t = s["roles"]?.arrayValue?.first(where: { $0["name"]?.stringValue == "ticker" }),
               t["state"]?.stringValue == "running", let pid = t["pid"]?.int64Value, Int32(pid) != notPID,
               (s["subscriptions"]?.int64Value ?? 0) >= 1 {
                return (Int32(pid), t["uptime"]?.doubleValue ?? .nan)
            }
            usleep(200)
        }
        throw BenchError("the ticker did not come back within 20 s")
    }
}
