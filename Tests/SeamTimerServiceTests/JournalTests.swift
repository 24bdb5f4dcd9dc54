import Foundation
import SeamBroker
import SeamClient
import SeamJSON
import SeamTestSupport
import XCTest

/// seamd logging to systemd's journal natively: a real `systemd-journald` (started here when
/// none runs and this is root, as on CI), a real seamd told `SEAM_LOG=journal`, and `journalctl`
/// finding its lines and its roles' by Seam's fields.
final class JournalTests: XCTestCase {
    static let journald = "/lib/systemd/systemd-journald"
    /// The journald this class started (nil: one was running, or none could be).
    nonisolated(unsafe) static var started: Process?

    override class func tearDown() {
        started?.terminate()
        started?.waitUntilExit()
        started = nil
    }

    /// Whether an entry sent now reaches the journal (`systemd-cat`, then `journalctl`).
    func journalAnswers() throws -> Bool {
        let marker = "seam-journal-probe-\(UUID().uuidString)"
        try Executables.runTool("/bin/sh", ["-c", "echo \(marker) | systemd-cat -t seam-probe"])
        let arrived: Void? = try? waitUntil(2, "the probe in the journal") {
            try Executables.runTool("/usr/bin/journalctl", ["-t", "seam-probe", "--no-pager", "-o", "cat", "-n", "20"]).stdout.contains(marker)
        }
        return arrived != nil
    }

    func requireJournal() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/journalctl") else {
            throw XCTSkip("journalctl is not installed (Debian's systemd package)")
        }
        if try journalAnswers() { return }
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: Self.journald), Self.started == nil else {
            throw XCTSkip("no journald answers here, and this test cannot start one (it needs root and \(Self.journald))")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.journald)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        Self.started = p
        try eventually(10, "journald answering") { try journalAnswers() }
    }

    /// Entries of seamd `pid` matching `matches` (`FIELD=value`), as journalctl's JSON.
    func entries(of pid: Int32, _ matches: [String]) throws -> [JSON] {
        let r = try Executables.runTool("/usr/bin/journalctl", ["--no-pager", "-o", "json", "_PID=\(pid)"] + matches)
        return r.stdout.split(separator: "\n").compactMap { try? JSON.decode(String($0)) }
    }

    func testSeamdAndItsRolesLogToTheJournalWithSeamsFields() throws {
        try requireJournal()
        let directory = TemporaryDirectory("journal")
        let config = directory.file("seamd.json")
        try Data("{}".utf8).write(to: URL(fileURLWithPath: config))
        let broker = try BrokerProcess(arguments: ["--log-level", "debug", "--config", config], environment: ["SEAM_LOG": "journal"])
        defer { broker.stop() }
        let seamd = broker.process.processIdentifier
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try c.call("org.seam.Timers.Flash", ["seconds": 1, "name": "journalled"])
        var ticker: Int64?
        try eventually(10, "the ticker running") {
            ticker = try c.status()["roles"]?.arrayValue?.first { $0["role"]?.stringValue == "ticker" }?["pid"]?.int64Value
            return ticker != nil
        }

        // The ticker's line when the flash finishes: SEAM_ROLE names the role, SEAM_PID its process.
        var finished: JSON?
        try eventually(10, "the ticker's line in the journal") {
            finished = try entries(of: seamd, ["SEAM_ROLE=ticker"]).first { $0["MESSAGE"]?.stringValue?.contains("finished") == true }
            return finished != nil
        }
        XCTAssertEqual(finished?["SEAM_PID"]?.stringValue, ticker.map { String($0) })
        XCTAssertEqual(finished?["PRIORITY"]?.stringValue, "6")
        XCTAssertEqual(finished?["SYSLOG_IDENTIFIER"]?.stringValue, "seamd/ticker")

        // seamd's own lines: its role, its pid, and the connection and method a line concerns.
        let serving = try entries(of: seamd, ["SEAM_ROLE=seamd"]).first { $0["MESSAGE"]?.stringValue?.hasPrefix("serving ") == true }
        XCTAssertEqual(serving?["SEAM_PID"]?.stringValue, String(seamd))
        XCTAssertEqual(serving?["SYSLOG_IDENTIFIER"]?.stringValue, "seamd")
        let hello = try entries(of: seamd, ["SEAM_METHOD=org.seam.Store.Hello"])
        XCTAssertTrue(hello.contains { $0["SEAM_CONNECTION"]?.stringValue?.contains("cli") == true && $0["PRIORITY"]?.stringValue == "7" },
                      "\(hello)")
        XCTAssertFalse(broker.log.contains("serving "), "what went to the journal is not also on stderr: \(broker.log)")
    }

    func testARolesLineKeepsTheLevelItSays() {
        XCTAssertEqual(Logger.level(ofRoleLine: "seam-sync: warning: the server is slow"), .warning)
        XCTAssertEqual(Logger.level(ofRoleLine: "error: cannot connect"), .error)
        XCTAssertEqual(Logger.level(ofRoleLine: "seam-ticker: session 1 finished; no error: none"), .info)
        XCTAssertEqual(Logger.level(ofRoleLine: ""), .info)
    }
}
