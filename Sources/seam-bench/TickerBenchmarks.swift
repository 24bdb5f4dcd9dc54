import Foundation
import SeamJSON
import SeamProtocol
import SeamSystem
import SeamTicker

/// The ticker under load (issue: the timer app): 10,000 running sessions whose steps end at
/// staggered times, while another client keeps writing; the lateness of each step end as the
/// broker commits it. And `seam ls` with 1,000 timers.
enum TickerBenchmarks {
    static let sessions = 10_000

    /// What writes beside the ticker: nothing, a steady rate, or one client as fast as it goes.
    enum Load {
        case none
        case rate(Double)
        case saturating

        var label: String {
            switch self {
            case .none: "no write load"
            case .rate(let r): "\(Int(r)) saves/s"
            case .saturating: "one writer flat out"
            }
        }
    }

    struct Outcome {
        var lateness: [Double]
        var savesPerSecond: Double
        var creation: Double
    }

    static func run() throws {
        // Quick: one column; the 10,000 sessions stay, since the ticker's cost per event is what
        // a regression would change.
        let loads: [Load] = Bench.size([.rate(500), .saturating, .none], quick: [.rate(500)])
        var outcomes: [Outcome] = []
        for load in loads { outcomes.append(try scenario(load)) }

        var table = BenchTable("The ticker: \(sessions.formatted()) running sessions (one step of 6 to 12 s each, started over about a second), "
                               + "beside a write load (timer edits in the Cloud store; a fresh seamd each)",
                               columns: ["measure"] + loads.map(\.label))
        table.add(["step ends committed"] + outcomes.map { "\($0.lateness.count.formatted()) of \(sessions.formatted())" })
        table.add(["lateness p50 (commit − due)"] + outcomes.map { Harness.duration(Harness.percentile($0.lateness, 0.5)) })
        table.add(["lateness p99"] + outcomes.map { Harness.duration(Harness.percentile($0.lateness, 0.99)) })
        table.add(["lateness max"] + outcomes.map { Harness.duration($0.lateness.max() ?? .nan) })
        table.add(["saves/s alongside, measured"] + outcomes.map { String(format: "%.0f", $0.savesPerSecond) })
        table.add(["creating the sessions (Flash, pipelined)"] + outcomes.map { String(format: "%.2f s", $0.creation) })
        table.print()
        print("target: lateness p99 ≤ 2 ms")
        Figures.record("ticker.lateness_p99", outcomes.map { Harness.percentile($0.lateness, 0.99) }.max() ?? .nan)
        try listing()
    }

    /// One run: a fresh seamd, 10,000 sessions, the ticker in this process, and `load` beside it
    /// until every session has finished.
    static func scenario(_ load: Load) throws -> Outcome {
        // A directory (and socket) per run: a ticker from the run before cannot reach this seamd.
        let work = try Harness.scratchDirectory("ticker-\(load.label.filter(\.isLetter))")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let (process, socket) = try ChannelBenchmarks.startSeamd(work + "/seamd", sync: false)
        defer { BrokerBenchmarks.stop(process) }

        // 10,000 one-step sessions of 6 to 12 s, created as fast as Flash goes: their ends spread out.
        let maker = try RawSeam(socket)
        _ = try maker.call("org.seam.Store.Hello", ["version": 1])
        let created = Harness.now()
        for start in stride(from: 0, to: sessions, by: 500) {
            var batch: [UInt8] = []
            for i in start..<min(start + 500, sessions) {
                batch += RawSeam.frame("org.seam.Timers.Flash", ["seconds": .integer(Int64(6 + i % 7)), "name": .string("s\(i)")], id: Int64(i))
            }
            try UnixSocket.writeAll(maker.fd, batch)
            for _ in start..<min(start + 500, sessions) {
                let r = try maker.reply()
                if let e = r.error { throw BenchError("Flash failed: \(e)") }
            }
        }
        let creation = Double(Harness.now() - created) / 1e9

        // The ticker, in this process, reporting each step end's lateness.
        let latenesses = Samples()
        var options = Ticker.Options(socketPath: socket)
        options.logsTransitions = false
        options.onTransition = { latenesses.add($0) }
        let ticker = try Ticker(options: options) { _ in }
        let box = UncheckedBox(ticker)
        Thread.detachNewThread { try? box.value.run() }

        // The write load: edits of one timer, until every session has finished.
        let writer = try RawSeam(socket)
        _ = try writer.call("org.seam.Store.Hello", ["version": 1])
        let timer = try writer.call("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": "load"]]]])
            .parameters["changes"]?[0]?["uuid"] ?? .null
        var writes = 0
        let loadStart = Harness.now()
        while true {
            let elapsed = Double(Harness.now() - loadStart) / 1e9
            switch load {
            case .none:
                Thread.sleep(forTimeInterval: 0.005)
            case .rate(let r):
                let due = Double(writes) / r
                if due > elapsed { Thread.sleep(forTimeInterval: min(due - elapsed, 0.005)) } else { fallthrough }
            case .saturating:
                _ = try writer.call("org.seam.Store.Save", ["updates": [["entity": "Timer", "uuid": timer, "values": ["sortOrder": .integer(Int64(writes))]]]],
                                    id: Int64(writes))
                writes += 1
            }
            // Every session has one step: its end, reported by the ticker, finishes it. (Asking
            // seamd instead — a Count over 10,000 sessions, a few times a second — stalled its
            // thread for milliseconds, and the ticker's calls with it.)
            if latenesses.count >= sessions { break }
            if elapsed > 120 { throw BenchError("\(sessions - latenesses.count) sessions still running after 120 s") }
        }
        let running = try writer.call("org.seam.Store.Count", ["entity": "Session", "predicate": #"state != "finished""#])
        if running.parameters["count"]?.int64Value != 0 { throw BenchError("the ticker reported every step end, but seamd has sessions running") }
        let loadSeconds = Double(Harness.now() - loadStart) / 1e9
        return Outcome(lateness: latenesses.all, savesPerSecond: Double(writes) / loadSeconds, creation: creation)
    }

    /// `seam ls` with 1,000 timers: process start to exit, median of 15.
    static func listing() throws {
        let work = try Harness.scratchDirectory("listing")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let (process, socket) = try ChannelBenchmarks.startSeamd(work + "/seamd", sync: false)
        defer { BrokerBenchmarks.stop(process) }
        let writer = try RawSeam(socket)
        _ = try writer.call("org.seam.Store.Hello", ["version": 1])
        var inserts: [JSON] = []
        for i in 0..<1_000 { inserts.append(["entity": "Timer", "values": ["name": .string("timer \(i)"), "steps": [["label": "a", "seconds": 60]]]]) }
        _ = try writer.call("org.seam.Store.Save", ["inserts": .array(inserts)])
        var times: [Double] = []
        for _ in 0..<Bench.size(15, quick: 5) {
            let t = Harness.now()
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Executables.sibling("seam"))
            p.arguments = ["ls", "--socket", socket]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            guard p.terminationStatus == 0 else { throw BenchError("seam ls failed") }
            times.append(Double(Harness.now() - t) / 1e9)
        }
        Figures.record("ticker.seam_ls_1000", Harness.median(times))
        var table = BenchTable("seam ls with 1,000 timers", columns: ["measure", "value"])
        table.add(["median wall time (process start to exit)", Harness.duration(Harness.median(times))])
        table.print()
    }
}

/// Numbers collected from another thread.
final class Samples: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Double] = []
    func add(_ v: Double) { lock.lock(); values.append(v); lock.unlock() }
    var all: [Double] { lock.lock(); defer { lock.unlock() }; return values }
    var count: Int { lock.lock(); defer { lock.unlock() }; return values.count }
}
