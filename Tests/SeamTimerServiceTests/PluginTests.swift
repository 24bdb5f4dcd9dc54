import Foundation
import SeamClient
import SeamJSON
import SeamTestSupport
import XCTest

/// The example plugins over real processes: supervised through seamd.json, holding the
/// capabilities they declared, listed by `seam status`.
final class PluginTests: XCTestCase {
    let directory = TemporaryDirectory("plugins")

    func broker(config: String) throws -> BrokerProcess { try BrokerProcess.supervising(config: config, in: directory) }

    /// The Python example plugin, supervised: it follows a query given on its command line and
    /// writes JSON lines; `seam status` lists it with what it declared.
    func testASupervisedPythonPluginLogsAQueryAndIsListedWithItsCapabilities() throws {
        let output = directory.file("log.jsonl")
        let plugin = RepositoryFiles.url("Plugins/seam-log/seam-log").path
        let broker = try broker(config: """
            {"roles": {"ticker": {"enabled": false}},
             "plugins": [{"name": "log", "command": ["\(plugin)", "Session", "--fields", "name,state", "--output", "\(output)"]}]}
            """)
        defer { broker.stop() }
        func lines() -> [JSON] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { try? JSON.decode(String($0)) }
        }
        try eventually(10, "the plugin's first line") { lines().count == 1 }
        XCTAssertEqual(lines().first?["kind"]?.stringValue, "result")
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try c.call("org.seam.Timers.Flash", ["seconds": 30, "name": "Logged"])
        try eventually(5, "the diff logged") { lines().count == 2 }
        let diff = try XCTUnwrap(lines().last)
        XCTAssertEqual(diff["kind"]?.stringValue, "diff")
        XCTAssertEqual(diff["inserted"]?[0]?["row"]?["name"]?.stringValue, "Logged")
        XCTAssertNotNil(diff["time"]?.stringValue)

        let plugins = try XCTUnwrap(c.status()["plugins"]?.arrayValue)
        let log = try XCTUnwrap(plugins.first { $0["name"]?.stringValue == "log" }, "\(plugins)")
        XCTAssertEqual(log["author"]?.stringValue, "plugin:log", "the name seamd.json gave it, not the one it claimed")
        XCTAssertEqual(log["reads"], ["Session"])
        XCTAssertEqual(log["writes"], [])
        XCTAssertEqual(log["supervised"]?.boolValue, true)
        let shown = try Executables.run("seam", ["status"], environment: ["SEAM_SOCKET": broker.socketPath]).stdout
        XCTAssertTrue(shown.contains("plugins:") && shown.contains("log") && shown.contains("Session") && shown.contains("nothing"), shown)
    }

    /// The same plugin, not supervised: a plugin that connects by itself; it cannot read what it
    /// did not declare, and says so.
    func testAPluginThatConnectsByItselfIsHeldToItsDeclaration() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let plugin = RepositoryFiles.url("Plugins/seam-log/seam-log").path
        let r = try Executables.runTool(plugin, ["Timer", "--where", "name ==", "--socket", broker.socketPath])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.hasPrefix("seam-log: org.seam.Store.InvalidRequest"), r.stderr)

        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello(role: "plugin", name: "narrow")
        XCTAssertThrowsError(try c.save([.insert(entity: "Timer", values: ["name": .string("x")])])) { e in
            XCTAssertEqual((e as? ClientError)?.remoteName, "org.seam.Store.PermissionDenied", "\(e)")
            XCTAssertTrue("\(e)".contains("plugin:narrow may write nothing"), "\(e)")
        }
    }
}
