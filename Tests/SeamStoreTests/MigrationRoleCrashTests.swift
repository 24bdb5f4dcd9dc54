import Foundation
import SeamClient
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// SIGKILL of the migration worker or of `seamd`, at random moments of a migration through the
/// worker, many times over, with real processes. The migration is Timers v2 → current: both
/// files are rebuilt (runs move from Cloud to Local), so "never a mix" covers two files that
/// must change together.
///
/// After each kill, once what seamd does at start has run (recovery of an interrupted swap,
/// removal of leftovers): both stores hold the old versions intact or both the new ones —
/// never one of each — and no temporary file remains. A killed worker is noticed by the seamd
/// still running, which removes the copies and serves the originals at their old versions. A
/// killed seamd takes its worker with it. After the final migration every row of the original
/// is there.
///
/// SEAM_CRASH_ITERATIONS sets the number of kills (default 25); the seed is printed and
/// SEAM_CRASH_SEED replays a run.
final class MigrationRoleCrashTests: XCTestCase {
    func testKillingTheWorkerOrSeamdNeverLeavesAMixOrALeftover() throws {
        let environment = ProcessInfo.processInfo.environment
        let iterations = max(1, Int(environment["SEAM_CRASH_ITERATIONS"] ?? "") ?? 25)
        let seed = UInt64(environment["SEAM_CRASH_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64(Int64.max))
        print("MigrationRoleCrashTests: seed \(seed) (SEAM_CRASH_SEED), \(iterations) kills (SEAM_CRASH_ITERATIONS)")
        var random = SplitMix64(seed: seed)
        let tmp = TemporaryDirectory("seam-role-crash")
        let pristine = tmp.file("pristine")
        try BadInputSupport.writeFixture(timersVersion: 2, rows: 15_000, to: pristine)
        let original = try MigrationRoleSupport.uuids(in: pristine)
        let data = tmp.file("data")
        // How long an uninterrupted migration takes, from seamd's start: the kills fall within it.
        try FileManager.default.copyItem(atPath: pristine, toPath: data)
        let started = Date()
        let timing = try BrokerProcess(dataDirectory: data)
        let probe = try SeamConnection.connect(path: timing.socketPath)
        try eventually(30, "the timing migration ends") { try probe.status()["migration"]?["last"] != nil }
        let span = Date().timeIntervalSince(started)
        timing.stop()
        try FileManager.default.removeItem(atPath: data)
        try FileManager.default.copyItem(atPath: pristine, toPath: data)
        print("MigrationRoleCrashTests: an uninterrupted migration takes \(Int(span * 1000)) ms from seamd's start")
        var tally: [String: Int] = [:]

        for i in 0..<iterations {
            let broker = try BrokerProcess(dataDirectory: data)
            let delay = Double(random.next() % UInt64(max(1, span * 1100))) / 1000
            let killWorker = random.next() % 2 == 0
            usleep(UInt32(delay * 1_000_000))
            let worker = Self.workerPID(for: data)
            if worker != nil { tally["worker running", default: 0] += 1 }
            let what: String
            if killWorker, let worker {
                kill(worker, SIGKILL)
                what = "worker killed after \(delay) s"
                let c = try SeamConnection.connect(path: broker.socketPath)
                try eventually(10, "seamd handles its worker's death (\(what))") {
                    try c.status()["migration"]?["running"]?.boolValue == false
                }
                XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [], "\(what): seamd removes the copies at once")
                for name in ["Cloud", "Local"] {
                    let state = try MigrationRoleSupport.store(name, c)["state"]?.stringValue
                    XCTAssertTrue(["outdated", "open", "checking"].contains(state), "\(what): \(name) serves (\(state ?? "nil"))")
                }
                broker.stop()
            } else {
                kill(broker.process.processIdentifier, SIGKILL)
                broker.process.waitUntilExit()
                what = "seamd killed after \(delay) s" + (worker == nil ? " (no worker running)" : "")
                if let worker {
                    try eventually(5, "the worker dies with seamd (\(what))") { !Self.isRunning(worker) }
                }
            }
            // What seamd does at start, before anything else: finish or undo what a kill left.
            let directory = StoreDirectory(path: data, schema: TimerApp.schema)
            let states = try directory.inspect().map(\.state)
            XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [], "\(what): a temporary file remains")
            let outcome: String
            switch states {
            case [.older, .new], [.older, .older]: outcome = "old"
            case [.current, .current]: outcome = "new"
            default:
                outcome = "mixed"
                XCTFail("iteration \(i), \(what): the stores are \(states), a mix of versions (seed \(seed))")
            }
            tally[outcome, default: 0] += 1
            if outcome == "new" {
                XCTAssertEqual(try MigrationRoleSupport.uuids(in: data), original, "\(what): rows lost (seed \(seed))")
                // Start the next kill from the old version again.
                try FileManager.default.removeItem(atPath: data)
                try FileManager.default.copyItem(atPath: pristine, toPath: data)
            }
        }
        print("MigrationRoleCrashTests: \(tally["worker running"] ?? 0) kills while the worker ran; \(tally["old"] ?? 0) left "
              + "the old version, \(tally["new"] ?? 0) the new one")

        // The final migration, uninterrupted: every row of the original is there.
        let broker = try BrokerProcess(dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(30, "the final migration ends") {
            try ["Cloud", "Local"].allSatisfy { try MigrationRoleSupport.store($0, c)["state"]?.stringValue == "open" }
        }
        XCTAssertEqual(try MigrationRoleSupport.uuids(in: data), original, "rows lost (seed \(seed))")
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
        broker.stop()
    }

    /// The pid of the `seam-migrate --worker` working on `directory`, if one runs.
    static func workerPID(for directory: String) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry),
                  let raw = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.contains("--worker"), arguments.last == directory, isRunning(pid) { return pid }
        }
        return nil
    }

    /// Whether `pid` runs (a zombie does not).
    static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(close, offsetBy: 2)]
        return state != "Z" && state != "X"
    }
}
