import Foundation
import SeamClient
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// `seam-fixture` and `seam-migrate`, run as real processes.
final class OfflineToolTests: StoreTestCase {
    func testFixtureThenDryRunThenMigrate() throws {
        let dir = temp.file("tool")
        let made = try Executables.run("seam-fixture", ["--version", "1", "--rows", "25", dir])
        XCTAssertEqual(made.status, 0, made.stderr)
        XCTAssertTrue(made.stdout.contains("Timers v1"), made.stdout)
        let before = try bytes(dir + "/Cloud.sqlite")

        let dry = try Executables.run("seam-migrate", ["--dry-run", dir])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertTrue(dry.stdout.contains("Cloud: older"), dry.stdout)
        XCTAssertTrue(dry.stdout.contains("INSERT INTO \"UserGroup\" (\"uuid\", \"name\""), dry.stdout)
        XCTAssertTrue(dry.stdout.contains("json_array(json_object('label', \"old.title\""), "the stage's SQL is shown")
        XCTAssertEqual(try bytes(dir + "/Cloud.sqlite"), before, "a dry run changes nothing")

        let run = try Executables.run("seam-migrate", [dir])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("migrated Cloud, Local: 125 rows"), run.stdout)
        // Not on a terminal (a pipe here): a plain line per phase, no bar, no redrawing.
        // (The copies are built at once, and a phase line names the store whose progress was last
        // seen: which of the two is a matter of timing.)
        XCTAssertTrue(run.stderr.contains(" preparing…") && run.stderr.contains(" done…"), run.stderr)
        for drawn in ["[#", "[.", "%", "\r", "\u{1B}"] { XCTAssertFalse(run.stderr.contains(drawn), "\(drawn) in \(run.stderr)") }
        let lines = run.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, Set(lines).count, "each phase once: \(run.stderr)")
        XCTAssertEqual(try count(dir + "/Local.sqlite", "Session"), 25)

        let again = try Executables.run("seam-migrate", [dir])
        XCTAssertEqual(again.status, 0)
        XCTAssertTrue(again.stdout.contains("Nothing to migrate"), again.stdout)
    }

    /// From release 3, Cloud only gains an attribute with a default (`Timer.sound`, version 6):
    /// it is planned as a copy altered in place; Local (Run → Session) is rebuilt.
    func testAnAdditiveChangeIsPlannedAsAnInPlaceAlter() throws {
        let dir = temp.file("alter")
        XCTAssertEqual(try Executables.run("seam-fixture", ["--version", "3", "--rows", "5", dir]).status, 0)
        let dry = try Executables.run("seam-migrate", ["--dry-run", dir])
        let parts = dry.stdout.components(separatedBy: "Local.sqlite —")
        XCTAssertEqual(parts.count, 2, dry.stdout)
        let cloud = parts[0], local = parts.last ?? ""
        XCTAssertTrue(cloud.contains("Cloud.sqlite —") && cloud.contains("copy the file as it is"), dry.stdout)
        XCTAssertTrue(cloud.contains(#"ALTER TABLE "Timer" ADD COLUMN "sound" TEXT NOT NULL DEFAULT '';"#), dry.stdout)
        XCTAssertFalse(local.contains("copy the file as it is"), "Run → Session rewrites rows: \(dry.stdout)")
        XCTAssertTrue(local.contains(#"CREATE TABLE "Session""#), dry.stdout)
    }

    /// Offline means alone: while a seamd serves the directory (here it has migrated it itself),
    /// the tool refuses and names the way that works (`seam migrate`); once seamd has stopped,
    /// it runs.
    func testTheToolRefusesADirectoryASeamdServes() throws {
        let dir = temp.file("served")
        XCTAssertEqual(try Executables.run("seam-fixture", ["--version", "5", "--rows", "3", dir]).status, 0)
        let broker = try BrokerProcess(dataDirectory: dir)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(20, "seamd has migrated the directory itself") {
            let s = try c.status()
            return s["migration"]?["running"]?.boolValue == false
                && (s["stores"]?.arrayValue ?? []).allSatisfy { $0["state"]?.stringValue == "open" }
        }
        let refused = try Executables.run("seam-migrate", [dir])
        XCTAssertEqual(refused.status, 1, refused.stdout)
        XCTAssertTrue(refused.stderr.contains("a seamd serves") && refused.stderr.contains("seam migrate"), refused.stderr)
        XCTAssertEqual(try leftovers(dir), [], "no copy was begun")
        broker.stop()
        let run = try Executables.run("seam-migrate", [dir])
        XCTAssertEqual(run.status, 0, run.stderr)
    }

    func testErrorsAreOneLineWithAStatus() throws {
        let missing = try Executables.run("seam-migrate", [temp.file("nowhere")])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.hasPrefix("seam-migrate: ") && missing.stderr.contains("not a directory"), missing.stderr)

        let usage = try Executables.run("seam-migrate", ["--frobnicate", temp.path])
        XCTAssertEqual(usage.status, 64)
        XCTAssertTrue(usage.stderr.contains("unknown option --frobnicate"), usage.stderr)

        let help = try Executables.run("seam-migrate", ["--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("usage: seam-migrate"))

        let badVersion = try Executables.run("seam-fixture", ["--version", "9", temp.file("v9")])
        XCTAssertEqual(badVersion.status, 1)
        XCTAssertTrue(badVersion.stderr.contains("Timers has no version 9; versions: 1 to \(TimerModel.history.versions.count)"), badVersion.stderr)

        let dir = temp.file("garbage")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data("hello, I am not a database".utf8).write(to: URL(fileURLWithPath: dir + "/Cloud.sqlite"))
        let garbage = try Executables.run("seam-migrate", [dir])
        XCTAssertEqual(garbage.status, 1)
        XCTAssertTrue(garbage.stderr.contains(dir + "/Cloud.sqlite is damaged or not a Seam store"), garbage.stderr)
    }
}
