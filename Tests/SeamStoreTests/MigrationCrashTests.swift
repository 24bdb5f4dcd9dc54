import Foundation
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// A migration killed at any moment never harms the originals, and the next open finishes or
/// cleans up what it left: real `seam-migrate` processes killed with SIGKILL at random points,
/// and the crash states between "copy verified" and "swap done" assembled by hand.
final class MigrationCrashTests: XCTestCase {
    private typealias Support = BadInputSupport

    /// Rows per entity: migrations then take about 50–200 ms here, so random kills land in every phase.
    private static let rows = 3000

    /// One old release's files, written once and copied into each iteration's directory.
    private struct Pristine {
        let timersVersion: Int
        let directory: String
        /// `Cloud.sqlite` / `Local.sqlite` → bytes.
        let files: [String: Data]
        /// Classification summaries of the untouched files.
        let summaries: [String]
        /// Entity (as this release names it) → uuids.
        let uuids: [String: Set<String>]
        /// Seconds of an uninterrupted `seam-migrate` run, process start to exit (median of three).
        let migrationSeconds: Double
    }

    // MARK: - Killed at random moments

    /// For SEAM_CRASH_ITERATIONS iterations (default 25): a fixture at a random old version
    /// (1…3, 3,000 rows per entity) gets a real `seam-migrate` that is SIGKILLed after a random
    /// delay between 0 and the typical duration of an uninterrupted run (measured, then updated
    /// from every run that beats its kill; half of the delays are drawn from the last 30 %, where
    /// verification and the swap happen). `inspect()` then leaves either
    /// (a) every file byte-identical to the original, or (b) a finished migration (every file
    /// current, the originals byte-identical in backups/); never a `.X.sqlite.migrating*`,
    /// `migration.intent` or `migration.intent.tmp`. A second `seam-migrate` then exits 0, and
    /// every row of every entity of the old version is in the migrated files under its current
    /// name (Folder → UserGroup, Run → Session in Local), and the removed Setting is gone.
    ///
    /// The seed is printed; SEAM_CRASH_SEED replays a run.
    func testSIGKILLAtRandomMomentsLeavesTheOriginalsOrAFinishedMigration() throws {
        let environment = ProcessInfo.processInfo.environment
        let iterations = max(1, Int(environment["SEAM_CRASH_ITERATIONS"] ?? "") ?? 25)
        let seed = UInt64(environment["SEAM_CRASH_SEED"] ?? "")
            ?? UInt64(truncatingIfNeeded: Int64(Date().timeIntervalSince1970 * 1_000_000)) ^ UInt64(getpid())
        print("MigrationCrashTests: seed \(seed) (SEAM_CRASH_SEED), \(iterations) iterations (SEAM_CRASH_ITERATIONS)")
        var generator = SplitMix64(seed: seed)
        let root = TemporaryDirectory("seam-crash")
        let started = Date()

        var pristines: [Int: Pristine] = [:]
        for version in 1...3 {
            pristines[version] = try makePristine(timersVersion: version, seed: generator.next() % 1_000_000, root: root)
        }
        print("MigrationCrashTests: uninterrupted migrations take "
              + (1...3).map { v in "v\(v) \(Int((pristines[v]?.migrationSeconds ?? 0) * 1000)) ms" }.joined(separator: ", ")
              + " from process start to exit")

        var killedBeforeSwap = 0, killedDuringSwap = 0, killedAfterSwap = 0, finishedBeforeKill = 0, leftBehind = 0
        // Durations of whole runs, per version: the measured ones, then every run that beat its kill,
        // so that the estimate follows the machine's load instead of letting most kills land late.
        var durations = pristines.mapValues { [$0.migrationSeconds] }
        for i in 0..<iterations {
            let version = Int.random(in: 1...3, using: &generator)
            let pristine = try XCTUnwrap(pristines[version])
            // Half the kills anywhere in the run, half in its last 30 % (verification and the swap).
            let samples = (durations[version] ?? [pristine.migrationSeconds]).suffix(9).sorted()
            let typical = samples[samples.count / 2]
            let delay = Bool.random(using: &generator) ? Double.random(in: 0...typical, using: &generator)
                : Double.random(in: (typical * 0.7)...typical, using: &generator)
            let directory = root.file("run-\(i)")
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (name, data) in pristine.files { try data.write(to: URL(fileURLWithPath: directory + "/" + name)) }
            let context = "iteration \(i) (seed \(seed)): v\(version), kill after \(Int(delay * 1000)) ms"

            let start = Date()
            let process = try Executables.start("seam-migrate", [directory])
            let deadline = start.addingTimeInterval(delay)
            while process.isRunning, Date() < deadline { usleep(200) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
            } else {
                durations[version, default: []].append(Date().timeIntervalSince(start))
            }
            process.waitUntilExit()
            let wasKilled = process.terminationReason == .uncaughtSignal
            if !wasKilled { XCTAssertEqual(process.terminationStatus, 0, "\(context): seam-migrate failed on its own") }
            let swapPending = FileManager.default.fileExists(atPath: directory + "/migration.intent")
            if !Support.leftovers(in: directory).isEmpty { leftBehind += 1 }

            let store = StoreDirectory(path: directory, schema: TimerApp.schema)
            let classifications = try store.inspect()
            XCTAssertEqual(Support.leftovers(in: directory), [], "\(context): inspect() should leave no temporary files")
            if classifications.allSatisfy({ $0.state == .current }) {
                try assertFinished(directory, from: pristine, context)
                if !wasKilled { finishedBeforeKill += 1 } else if swapPending { killedDuringSwap += 1 } else { killedAfterSwap += 1 }
            } else {
                XCTAssertFalse(swapPending, "\(context): a recorded swap was not rolled forward")
                XCTAssertEqual(classifications.map(\.summary), pristine.summaries, context)
                for (name, data) in pristine.files {
                    XCTAssertEqual(try Support.bytes(directory + "/" + name), data, "\(context): \(name) changed")
                }
                XCTAssertFalse(FileManager.default.fileExists(atPath: newestBackup(in: directory, of: "Cloud")), context)
                killedBeforeSwap += 1
            }

            let rerun = try Executables.run("seam-migrate", [directory])
            XCTAssertEqual(rerun.status, 0, "\(context): seam-migrate after the crash: \(rerun.stderr)")
            XCTAssertTrue(try store.inspect().allSatisfy { $0.state == .current }, context)
            XCTAssertEqual(Support.leftovers(in: directory), [], context)
            try Support.assertEveryRowSurvived(pristine.uuids, in: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        print("MigrationCrashTests: \(iterations) iterations in \(String(format: "%.1f", Date().timeIntervalSince(started))) s: "
              + "\(killedBeforeSwap) killed before the swap (originals intact), "
              + "\(killedDuringSwap) killed during the swap (rolled forward by inspect()), "
              + "\(killedAfterSwap) killed after the swap, \(finishedBeforeKill) finished before the kill; "
              + "\(leftBehind) left copies or an intent for inspect() to handle")
    }

    // MARK: - Leftovers without an intent

    /// Beside a valid older store: a half-written `.Cloud.sqlite.migrating`, its `-journal`, a
    /// `.Local.sqlite.migrating-wal` and a partial `migration.intent.tmp`. `inspect()` removes
    /// every one, leaves the stores byte-identical and older (no intent means no swap), and
    /// leaves an unrelated file alone; the directory then migrates normally.
    func testInspectRemovesTheLeftoversOfAnInterruptedMigration() throws {
        let tmp = TemporaryDirectory("seam-crash-leftovers")
        try Support.writeFixture(timersVersion: 2, rows: 300, to: tmp.path)
        let uuids = try Support.uuidsByEntity(timersVersion: 2, in: tmp.path)
        try Data("kept by the user".utf8).write(to: URL(fileURLWithPath: tmp.file("notes.txt")))
        let before = try Support.snapshot(tmp.path)
        let halfCopy = try Support.bytes(tmp.file("Cloud.sqlite")).prefix(20_000)
        let leftovers = [
            ".Cloud.sqlite.migrating": Data(halfCopy),
            ".Cloud.sqlite.migrating-journal": Data(repeating: 0xD9, count: 512),
            ".Local.sqlite.migrating-wal": Data(repeating: 0x37, count: 4096),
            "migration.intent.tmp": Data("{\"format\":1,\"sw".utf8),
        ]
        for (name, data) in leftovers { try data.write(to: URL(fileURLWithPath: tmp.file(name))) }
        XCTAssertEqual(Support.leftovers(in: tmp.path), leftovers.keys.sorted())

        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        XCTAssertEqual(try store.inspect().map(\.state), [.older, .older])
        XCTAssertEqual(Support.leftovers(in: tmp.path), [])
        try Support.assertUnchanged(tmp.path, since: before)
        XCTAssertFalse(FileManager.default.fileExists(atPath: tmp.file("backups")), "no intent: nothing is swapped")

        _ = try store.migrate()
        try Support.assertEveryRowSurvived(uuids, in: tmp.path)
    }

    // MARK: - A recorded swap, rolled forward

    /// The crash right after `migration.intent` was written: the originals in place, both verified
    /// copies beside them, and the intent `{"format":1,"swap":["Cloud","Local"]}` (what the
    /// executor writes for a version-2 store, where both files change). `inspect()` swaps both
    /// copies in, keeps the originals byte-identical in backups/, removes the intent, and every
    /// row is there.
    func testInspectRollsForwardASwapRecordedInTheIntent() throws {
        let (original, migrated, tmp) = try originalAndMigrated()
        let crash = tmp.file("crash")
        try FileManager.default.createDirectory(atPath: crash, withIntermediateDirectories: true)
        for name in ["Cloud", "Local"] {
            try Support.copy(original + "/\(name).sqlite", to: crash + "/\(name).sqlite")
            try Support.copy(migrated + "/\(name).sqlite", to: crash + "/.\(name).sqlite.migrating")
        }
        try writeIntent(["Cloud", "Local"], in: crash)

        try assertRolledForward(crash, original: original, migrated: migrated)
    }

    /// The crash in the middle of the swap: `Cloud.sqlite` already replaced (its original in
    /// backups/), `Local.sqlite` still the original with its copy beside it, the intent naming
    /// both. `inspect()` finishes the swap without touching the Cloud backup.
    func testInspectFinishesASwapInterruptedHalfway() throws {
        let (original, migrated, tmp) = try originalAndMigrated()
        let crash = tmp.file("crash")
        try FileManager.default.createDirectory(atPath: crash + "/backups", withIntermediateDirectories: true)
        try Support.copy(original + "/Cloud.sqlite", to: crash + "/backups/Cloud.sqlite")
        try Support.copy(migrated + "/Cloud.sqlite", to: crash + "/Cloud.sqlite")
        try Support.copy(original + "/Local.sqlite", to: crash + "/Local.sqlite")
        try Support.copy(migrated + "/Local.sqlite", to: crash + "/.Local.sqlite.migrating")
        try writeIntent(["Cloud", "Local"], in: crash)

        try assertRolledForward(crash, original: original, migrated: migrated)
    }

    /// A stale intent: the crash came after every copy was renamed into place but before the
    /// intent was removed. `inspect()` removes the intent and changes nothing else: the stores
    /// stay the migrated ones and the backups stay the originals.
    func testInspectRemovesAStaleIntentWithNothingLeftToSwap() throws {
        let (original, migrated, tmp) = try originalAndMigrated()
        let crash = tmp.file("crash")
        try FileManager.default.createDirectory(atPath: crash + "/backups", withIntermediateDirectories: true)
        for name in ["Cloud", "Local"] {
            try Support.copy(original + "/\(name).sqlite", to: crash + "/backups/\(name).sqlite")
            try Support.copy(migrated + "/\(name).sqlite", to: crash + "/\(name).sqlite")
        }
        try writeIntent(["Cloud", "Local"], in: crash)

        try assertRolledForward(crash, original: original, migrated: migrated)
    }

    /// An intent that exists but cannot be read may name any store: every one is taken for half
    /// swapped, by the broker's start (`recoverForService`) and by the check a migration makes
    /// first (`unfinishedSwap`), which took it for naming none and would have let a migration
    /// remove the copies the swap still needs.
    func testAnIntentThatCannotBeReadNamesEveryStore() throws {
        let tmp = TemporaryDirectory("seam-intent")
        let directory = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        XCTAssertEqual(directory.unfinishedSwap, [])
        try FileManager.default.createDirectory(atPath: directory.layout.intent, withIntermediateDirectories: true)  // read: EISDIR
        XCTAssertEqual(directory.unfinishedSwap, Set(TimerApp.schema.configurations))
        let recovery = try directory.recoverForService()
        XCTAssertEqual(recovery.unfinishedSwap?.stores, TimerApp.schema.configurations.sorted())
    }

    // MARK: - Helpers

    /// Runs `seam-migrate ARGUMENTS` to its end and returns its exit status and the seconds from
    /// start to exit, seen by polling `isRunning` (`waitUntilExit()` here notices an exit only on
    /// its 50 ms run-loop tick, which would stretch the measurement and make most kills land late).
    private func timedRun(_ arguments: [String]) throws -> (status: Int32, seconds: Double) {
        let start = Date()
        let process = try Executables.start("seam-migrate", arguments)
        while process.isRunning { usleep(200) }
        let seconds = Date().timeIntervalSince(start)
        process.waitUntilExit()
        return (process.terminationStatus, seconds)
    }

    /// Writes one release's fixture, reads what the checks need, and times one full migration.
    private func makePristine(timersVersion: Int, seed: UInt64, root: TemporaryDirectory) throws -> Pristine {
        let directory = root.file("pristine-v\(timersVersion)")
        try Support.writeFixture(timersVersion: timersVersion, rows: Self.rows, seed: seed, to: directory)
        var files: [String: Data] = [:]
        for name in ["Cloud.sqlite", "Local.sqlite"] { files[name] = try Support.bytes(directory + "/" + name) }
        let summaries = try StoreDirectory(path: directory, schema: TimerApp.schema).inspect().map(\.summary)
        let uuids = try Support.uuidsByEntity(timersVersion: timersVersion, in: directory)

        // The median of three runs: the first, with cold caches, is often twice as slow as the rest.
        var durations: [Double] = []
        for run in 0..<3 {
            let timing = root.file("timing-v\(timersVersion)-\(run)")
            try FileManager.default.createDirectory(atPath: timing, withIntermediateDirectories: true)
            for (name, data) in files { try data.write(to: URL(fileURLWithPath: timing + "/" + name)) }
            let (status, seconds) = try timedRun([timing])
            durations.append(seconds)
            XCTAssertEqual(status, 0, "uninterrupted seam-migrate of v\(timersVersion)")
            if run == 0 { try Support.assertEveryRowSurvived(uuids, in: timing) }
            try? FileManager.default.removeItem(atPath: timing)
        }
        return Pristine(timersVersion: timersVersion, directory: directory, files: files, summaries: summaries, uuids: uuids,
                        migrationSeconds: durations.sorted()[1])
    }

    /// After `inspect()` found every file current: each file that was migrated has its original,
    /// byte-identical, in backups/; each one that was not is byte-identical in place.
    private func assertFinished(_ directory: String, from pristine: Pristine, _ context: String) throws {
        for (name, data) in pristine.files {
            let backup = newestBackup(in: directory, of: String(name.dropLast(".sqlite".count)))
            if FileManager.default.fileExists(atPath: backup) {
                XCTAssertEqual(try Support.bytes(backup), data, "\(context): backups/\(name) is not the original")
            } else {
                XCTAssertEqual(try Support.bytes(directory + "/" + name), data, "\(context): \(name) changed without a backup")
            }
        }
    }

    /// A version-2 fixture (`original`) and the same files migrated to completion (`migrated`).
    private func originalAndMigrated() throws -> (original: String, migrated: String, tmp: TemporaryDirectory) {
        let tmp = TemporaryDirectory("seam-crash-swap")
        let original = tmp.file("original")
        let migrated = tmp.file("migrated")
        try Support.writeFixture(timersVersion: 2, rows: 500, to: original)
        try FileManager.default.createDirectory(atPath: migrated, withIntermediateDirectories: true)
        for name in ["Cloud.sqlite", "Local.sqlite"] { try Support.copy(original + "/" + name, to: migrated + "/" + name) }
        let report = try StoreDirectory(path: migrated, schema: TimerApp.schema).migrate()
        XCTAssertEqual(Set(report.configurations), ["Cloud", "Local"])
        return (original, migrated, tmp)
    }

    private func writeIntent(_ configurations: [String], in directory: String) throws {
        let list = configurations.map { "\"\($0)\"" }.joined(separator: ",")
        try Data("{\"format\":1,\"swap\":[\(list)]}".utf8).write(to: URL(fileURLWithPath: directory + "/migration.intent"))
    }

    /// `inspect()` of `crash` finds both files current, byte-identical to the migrated ones, the
    /// originals byte-identical in backups/, no intent or copy left, and every original row.
    private func assertRolledForward(_ crash: String, original: String, migrated: String,
                                     file: StaticString = #filePath, line: UInt = #line) throws {
        let uuids = try Support.uuidsByEntity(timersVersion: 2, in: original)
        let classifications = try StoreDirectory(path: crash, schema: TimerApp.schema).inspect()
        XCTAssertEqual(classifications.map(\.state), [.current, .current], classifications.map(\.summary).joined(separator: "; "),
                       file: file, line: line)
        XCTAssertEqual(Support.leftovers(in: crash), [], file: file, line: line)
        for name in ["Cloud.sqlite", "Local.sqlite"] {
            XCTAssertEqual(try Support.bytes(crash + "/" + name), try Support.bytes(migrated + "/" + name),
                           "\(name) should be the migrated copy", file: file, line: line)
            XCTAssertEqual(try Support.bytes(crash + "/backups/" + name), try Support.bytes(original + "/" + name),
                           "backups/\(name) should be the original", file: file, line: line)
        }
        try Support.assertEveryRowSurvived(uuids, in: crash, file: file, line: line)
    }
}
