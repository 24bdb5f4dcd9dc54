import Foundation
import SeamJSON
import SeamTestSupport
import XCTest

/// `seam doctor` against real seamd processes and real files: all well, then each thing that
/// can go wrong around Seam, each said with what to do (`--json` and the exit status too).
final class DoctorTests: XCTestCase {
    func doctor(_ arguments: [String], home: TemporaryDirectory) throws -> (status: Int32, findings: [JSONObject], text: String) {
        let env = ["XDG_CONFIG_HOME": home.file("config"), "HOME": home.path]
        let json = try Executables.run("seam", ["doctor", "--json"] + arguments, environment: env)
        let text = try Executables.run("seam", ["doctor"] + arguments, environment: env)
        XCTAssertEqual(json.status, text.status, text.stdout)
        let findings = (try JSON.decode(Array(json.stdout.utf8)))["findings"]?.arrayValue?.compactMap(\.objectValue) ?? []
        return (json.status, findings, text.stdout)
    }

    func finding(_ findings: [JSONObject], _ check: String) -> JSONObject? { findings.first { $0["check"]?.stringValue == check } }

    /// A seamd serving both stores, no units, no sync: no problem; a line per check.
    func testAllWell() throws {
        let home = TemporaryDirectory("seam-doctor")
        let broker = try BrokerProcess(arguments: ["--no-roles"])
        defer { _ = broker.stop() }
        let r = try doctor(["--socket", broker.socketPath, "--config-dir", home.file("config/seam")], home: home)
        XCTAssertEqual(r.status, 0, r.text)
        XCTAssertEqual(finding(r.findings, "seamd")?["level"]?.stringValue, "ok", r.text)
        for store in ["Cloud", "Local"] { XCTAssertEqual(finding(r.findings, "store \(store)")?["level"]?.stringValue, "ok", r.text) }
        XCTAssertEqual(finding(r.findings, "units")?["level"]?.stringValue, "note")
        XCTAssertEqual(finding(r.findings, "sync")?["level"]?.stringValue, "note")
        XCTAssertEqual(finding(r.findings, "disk")?["level"]?.stringValue, "ok")
        XCTAssertTrue(r.text.hasSuffix("no problems found\n"), r.text)
    }

    /// No seamd, a socket directory others may write to, a unit whose seamd has gone, and sync
    /// files others may read: each a problem, with what to do; exit 1.
    func testEachProblemSaysWhatToDo() throws {
        let home = TemporaryDirectory("seam-doctor")
        let open = home.file("open")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(open, 0o777)
        let units = home.file("config/systemd/user")
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        try "[Service]\nExecStart=\"/nowhere/seamd\"\n".write(toFile: units + "/seamd.service", atomically: true, encoding: .utf8)
        let config = home.file("config/seam")
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try "h:5432:db:u:secret\n".write(toFile: config + "/sync.pgpass", atomically: true, encoding: .utf8)
        chmod(config + "/sync.pgpass", 0o644)
        try "seam-zone-key 1 \(String(repeating: "ab", count: 32))\n".write(toFile: config + "/sync.key", atomically: true, encoding: .utf8)
        chmod(config + "/sync.key", 0o640)
        try #"{"url": "postgresql://u@h/db", "passwordFile": "\#(config)/sync.pgpass", "keyFile": "\#(config)/sync.key"}"#
            .write(toFile: config + "/sync.json", atomically: true, encoding: .utf8)

        let r = try doctor(["--socket", open + "/seamd.sock", "--config-dir", config], home: home)
        XCTAssertEqual(r.status, 1, r.text)
        XCTAssertEqual(finding(r.findings, "seamd")?["level"]?.stringValue, "problem")
        XCTAssertTrue(finding(r.findings, "seamd")?["todo"]?.stringValue?.contains("seam up") ?? false, r.text)
        XCTAssertEqual(finding(r.findings, "socket directory")?["level"]?.stringValue, "problem", r.text)
        XCTAssertTrue(finding(r.findings, "socket directory")?["todo"]?.stringValue?.contains("chmod 700 \(open)") ?? false, r.text)
        XCTAssertEqual(finding(r.findings, "unit seamd.service")?["level"]?.stringValue, "problem", r.text)
        XCTAssertTrue(finding(r.findings, "unit seamd.service")?["said"]?.stringValue?.contains("/nowhere/seamd") ?? false, r.text)
        let sync = r.findings.filter { $0["check"]?.stringValue == "sync files" }.compactMap { $0["said"]?.stringValue }
        XCTAssertEqual(sync.count, 2, r.text)
        XCTAssertTrue(sync.allSatisfy { $0.contains("chmod 600") }, "\(sync)")
        XCTAssertTrue(r.text.contains("PROBLEM") && r.text.contains("→ seam up"), r.text)
        XCTAssertTrue(r.text.hasSuffix("problem(s) found\n"), r.text)
    }

    /// A store seamd serves at an older version is a warning with the command that migrates it.
    func testAnOutdatedStoreIsAWarningWithItsCommand() throws {
        let home = TemporaryDirectory("seam-doctor")
        let data = home.file("data")
        let fixture = try Executables.run("seam-fixture", ["--version", "4", "--rows", "5", data])
        XCTAssertEqual(fixture.status, 0, fixture.stderr)
        let config = home.file("seamd.json")
        try #"{"roles": {"migrate": {"enabled": false}, "ticker": {"enabled": false}}}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let broker = try BrokerProcess(arguments: ["--config", config], dataDirectory: data)
        defer { _ = broker.stop() }
        let r = try doctor(["--socket", broker.socketPath, "--config-dir", home.file("none")], home: home)
        XCTAssertEqual(r.status, 0, "a warning is no problem: \(r.text)")
        XCTAssertEqual(finding(r.findings, "store Cloud")?["level"]?.stringValue, "warning", r.text)
        XCTAssertTrue(finding(r.findings, "store Cloud")?["todo"]?.stringValue?.contains("seam migrate") ?? false, r.text)
    }
}
