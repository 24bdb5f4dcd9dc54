import Foundation
import SeamClient
import SeamTestSupport
import XCTest

/// A generic varlink client that knows nothing of Seam — the command-line tool of the `varlink`
/// package from PyPI, in the virtual environment scripts/test makes (.build/venv) — lists
/// Seam's interfaces, prints their descriptions (parsing them as varlink interface definitions)
/// and calls a fetch.
final class InteropTests: BrokerTestCase {
    func varlink(_ arguments: String...) throws -> Executables.Result {
        let python = RepositoryFiles.url(".build/venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            XCTFail("no \(python): scripts/test makes it (python3 -m venv .build/venv; .build/venv/bin/pip install varlink)")
            throw CocoaError(.fileNoSuchFile)
        }
        return try Executables.runTool(python, ["-m", "varlink.cli"] + arguments)
    }

    func testAGenericVarlinkClientListsDescribesAndCalls() throws {
        let address = "unix:" + broker.socketPath
        var r = try varlink("info", address)
        XCTAssertEqual(r.status, 0, r.stderr)
        for line in ["Vendor: Seam", "Product: seamd", "org.seam.Store", "org.seam.Timers", "org.varlink.service"] {
            XCTAssertTrue(r.stdout.contains(line), r.stdout)
        }
        for interface in ["org.seam.Store", "org.seam.Timers", "org.varlink.service"] {
            r = try varlink("help", "\(address)/\(interface)")
            XCTAssertEqual(r.status, 0, "\(interface): \(r.stderr)")
            XCTAssertTrue(r.stdout.contains("interface \(interface)"), r.stdout)
        }

        let c = try client()
        try c.call("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": "Interop", "steps": [["label": "a", "seconds": 5]]]]]])
        r = try varlink("call", "\(address)/org.seam.Store.Fetch", #"{"entity": "Timer", "fields": ["name"]}"#)
        XCTAssertEqual(r.status, 0, r.stderr)
        let reply = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let rows = reply?["rows"] as? [[String: Any]]
        XCTAssertEqual(rows?.first?["name"] as? String, "Interop", r.stdout)

        // Its errors are varlink errors to it too (the tool prints them; it exits 0 all the same).
        r = try varlink("call", "\(address)/org.seam.Store.Save", #"{"inserts": [{"entity": "Timer", "values": {"name": "x"}}]}"#)
        XCTAssertTrue((r.stdout + r.stderr).contains("org.seam.Store.PermissionDenied"), r.stdout + r.stderr)
    }
}
