import Foundation
import SeamContext
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// Saves across the two store files stay all-or-nothing under SIGKILL at any point.
///
/// A child process (`seam-save-crasher`) saves pairs — a timer with its session, or the delete of
/// a timer that cascades to its session — and prints each save once the context returned it. The
/// test kills it at a random moment, reopens the directory, and checks: both files pass
/// `quick_check`; no session points at a missing timer and no timer inserted by the child lacks
/// its session (the pair is never torn); and every save the child reported is there.
final class SaveCrashTests: XCTestCase {
    func testSIGKILLNeverTearsASaveAcrossTwoFiles() throws {
        let iterations = Int(ProcessInfo.processInfo.environment["SEAM_CRASH_ITERATIONS"] ?? "") ?? 25
        let seed = UInt64(ProcessInfo.processInfo.environment["SEAM_CRASH_SEED"] ?? "") ?? UInt64.random(in: 1...1_000_000)
        print("SaveCrashTests: \(iterations) iterations, seed \(seed) (replay with SEAM_CRASH_SEED=\(seed))")
        var random = SplitMix64(seed: seed)
        let temp = TemporaryDirectory("seam-save-crash")
        var totalSaves = 0
        for i in 0..<iterations {
            let child = Process()
            child.executableURL = URL(fileURLWithPath: Executables.path("seam-save-crasher"))
            child.arguments = [temp.path, String(random.next() % 1_000_000)]
            let out = Pipe()
            child.standardOutput = out
            child.standardError = FileHandle.nullDevice
            // A child that crashes by itself must end, not hand its pipe to a backtracer that keeps
            // it open (the read below would wait for ever): the check after the kill reports it.
            var environment = ProcessInfo.processInfo.environment
            environment["SWIFT_BACKTRACE"] = "enable=no"
            child.environment = environment
            try child.run()
            usleep(useconds_t(20_000 + random.next() % 150_000))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            guard child.terminationReason == .uncaughtSignal, child.terminationStatus == SIGKILL else {
                return XCTFail("iteration \(i): seam-save-crasher ended by itself (status \(child.terminationStatus)) before it was "
                               + "killed; run it by hand: seam-save-crasher DIR \(child.arguments![1])")
            }
            let lines = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
            let reported = lines.filter { $0.hasPrefix("saved ") }
            // The one save that may have been in flight: begun, not reported. It may or may not be there.
            let begun = lines.last { $0.hasPrefix("begin ") }?.split(separator: " ")
            let inFlight = begun.map { "\($0[1]) \($0[2])" }
            let lastSaved = reported.last.map { l in l.split(separator: " ").dropFirst(2).joined(separator: " ") }
            let pending = inFlight == lastSaved ? nil : inFlight
            totalSaves += reported.count

            let context = try Context(directory: temp.path, schema: TimerApp.schema)
            for store in context.storeNames {
                XCTAssertEqual(try context.database(store)?.scalar("PRAGMA quick_check"), .string("ok"), "iteration \(i) \(store)")
            }
            XCTAssertEqual(try context.danglingLinks(), [], "iteration \(i): a session outlived its timer")
            let timers = Set(try context.fetch(FetchRequest("Timer", attributes: ["uuid"])).map(\.uuid))
            let sessionTimers = Set(try context.fetch(FetchRequest("Session", attributes: ["timerUUID"])).compactMap { $0["timerUUID"].stringValue })
            XCTAssertEqual(timers.symmetricDifference(sessionTimers), [], "iteration \(i): a timer without its session, or the reverse")
            var expected = Set<String>()
            var deleted = Set<String>()
            for line in reported {
                let parts = line.split(separator: " ")
                guard parts.count == 4 else { continue }
                if parts[2] == "insert" { expected.insert(String(parts[3])) } else { deleted.insert(String(parts[3])) }
            }
            var mayBeGone = Set<String>()
            if let pending, pending.hasPrefix("delete ") { mayBeGone.insert(String(pending.dropFirst(7))) }
            XCTAssertEqual(expected.subtracting(deleted).subtracting(timers).subtracting(mayBeGone), [],
                           "iteration \(i): a reported insert is missing")
            XCTAssertEqual(deleted.intersection(timers), [], "iteration \(i): a reported delete came back")
            if let last = reported.last?.split(separator: " ").dropFirst().first, let seq = Int64(last) {
                XCTAssertGreaterThanOrEqual(context.sequence, seq, "iteration \(i)")
            }
        }
        print("SaveCrashTests: \(totalSaves) saves reported across \(iterations) kills")
        XCTAssertGreaterThan(totalSaves, 0)
    }
}
