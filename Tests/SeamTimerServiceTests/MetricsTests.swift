import Foundation
import SeamClient
import SeamJSON
import SeamSystem
import SeamTestSupport
import XCTest

/// seamd's metrics over real processes: `org.seam.Metrics.Get` counting what clients did,
/// `seam metrics`, and the `metrics` role serving them over HTTP to a real parser (PyPI's
/// `prometheus_client`, the library Prometheus's Python exporters use), and refusing what a
/// browser tricked by DNS rebinding, or a hostile client, sends.
final class MetricsTests: XCTestCase {
    let directory = TemporaryDirectory("metrics")

    /// A port on 127.0.0.1 that nothing listens on now.
    func freePort() throws -> Int {
        let fd = try LoopbackSocket.listen(port: 0)
        defer { Descriptors.close(fd) }
        return try LoopbackSocket.port(of: fd)
    }

    func families(_ c: SeamConnection) throws -> [String: JSON] {
        let reply = try c.call("org.seam.Metrics.Get")
        var out: [String: JSON] = [:]
        for f in reply["families"]?.arrayValue ?? [] { out[f["name"]?.stringValue ?? ""] = f }
        return out
    }

    func sample(_ family: JSON?, _ labels: [String: String] = [:]) -> JSON? {
        family?["samples"]?.arrayValue?.first { s in labels.allSatisfy { s["labels"]?[$0.key]?.stringValue == $0.value } }
    }

    func testGetCountsCallsByMethodAndOutcomeAndReadsGaugesNow() throws {
        let broker = try BrokerProcess.supervising(config: #"{"roles": {"ticker": {"enabled": false}}}"#, in: directory)
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        for i in 0..<5 { _ = try c.save([.insert(entity: "UserGroup", values: ["name": .string("g\(i)")])]) }
        _ = try? c.save([.insert(entity: "UserGroup", values: ["name": .integer(3)])])
        _ = try c.fetch("UserGroup", where: "name BEGINSWITH 'g'")
        _ = try c.count("UserGroup")
        let sub = try SeamConnection.connect(path: broker.socketPath)
        try sub.hello()
        try sub.call("org.seam.Timers.Flash", ["seconds": 30, "name": "m"])

        let f = try families(c)
        let requests = f["seam_requests_total"]
        XCTAssertEqual(requests?["type"]?.stringValue, "counter")
        XCTAssertEqual(sample(requests, ["method": "org.seam.Store.Save", "outcome": "ok"])?["value"]?.int64Value, 5)
        let refused = try XCTUnwrap(requests?["samples"]?.arrayValue?.first {
            $0["labels"]?["method"]?.stringValue == "org.seam.Store.Save" && $0["labels"]?["outcome"]?.stringValue != "ok"
        }, "the refused save, by its error: \(String(describing: requests))")
        XCTAssertEqual(refused["value"]?.int64Value, 1)
        XCTAssertTrue(refused["labels"]?["outcome"]?.stringValue?.hasPrefix("org.seam.Store.") == true, "\(refused)")
        XCTAssertEqual(sample(requests, ["method": "org.seam.Store.Fetch", "outcome": "ok"])?["value"]?.int64Value, 1,
                       "a Fetch run on a reader is counted once, when it is answered")
        XCTAssertEqual(sample(requests, ["method": "org.seam.Store.Count", "outcome": "ok"])?["value"]?.int64Value, 1)
        XCTAssertEqual(sample(requests, ["method": "org.seam.Timers.Flash", "outcome": "ok"])?["value"]?.int64Value, 1)
        let seconds = sample(f["seam_request_seconds"], ["method": "org.seam.Store.Save"])
        XCTAssertEqual(seconds?["count"]?.int64Value, 6)
        XCTAssertEqual(seconds?["buckets"]?.arrayValue?.count, 16)
        let commits = sample(f["seam_commit_rows"])
        XCTAssertEqual(commits?["count"]?.int64Value, 6, "five saves and the flash")
        XCTAssertEqual(sample(f["seam_connections"])?["value"]?.int64Value, 2)
        XCTAssertEqual(sample(f["seam_store_open"], ["store": "Cloud"])?["value"]?.int64Value, 1)
        XCTAssertGreaterThan(sample(f["seam_store_bytes"], ["store": "Local"])?["value"]?.int64Value ?? 0, 0)
        XCTAssertEqual(sample(f["seam_sync_configured"])?["value"]?.int64Value, 0)

        // A connection that said no Hello is refused; a subscription shows up as it is made.
        let raw = try RawClient(broker.socketPath)
        raw.send(#"{"method":"org.seam.Metrics.Get"}"#)
        XCTAssertTrue(raw.readFrame()?.contains("PermissionDenied") == true)
        raw.send(#"{"method":"org.seam.Store.Hello","parameters":{"version":1}}"#)
        _ = raw.readFrame()
        raw.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session","sort":"startedAt"},"more":true}"#)
        XCTAssertTrue(raw.readFrame()?.contains("\"result\"") == true)
        let after = try families(c)
        XCTAssertEqual(sample(after["seam_subscriptions"])?["value"]?.int64Value, 1)
        XCTAssertEqual(sample(after["seam_channels"])?["value"]?.int64Value, 1)
        XCTAssertEqual(sample(after["seam_requests_total"], ["method": "org.seam.Store.Subscribe", "outcome": "ok"])?["value"]?.int64Value, 1)

        // `seam metrics`: the same figures as text.
        let text = try Executables.run("seam", ["metrics"], environment: ["SEAM_SOCKET": broker.socketPath])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains(#"seam_requests_total{method="org.seam.Store.Save",outcome="ok"} 5"#), text.stdout)
        XCTAssertTrue(text.stdout.contains("# TYPE seam_request_seconds histogram"), text.stdout)
        let json = try Executables.run("seam", ["metrics", "--json"], environment: ["SEAM_SOCKET": broker.socketPath])
        XCTAssertNotNil(try JSON.decode(json.stdout)["families"]?.arrayValue)
    }

    /// A save big enough to be read off the loop (a frame past 32 KiB) is counted too, and its rows.
    func testABigSaveReadOffTheLoopIsCounted() throws {
        let broker = try BrokerProcess.supervising(config: #"{"roles": {"ticker": {"enabled": false}}}"#, in: directory)
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let name = String(repeating: "n", count: 100)
        _ = try c.save((0..<500).map { .insert(entity: "UserGroup", values: ["name": .string("\(name)\($0)")]) })
        _ = try? c.save((0..<500).map { _ in .insert(entity: "UserGroup", values: ["name": .integer(1), "x": .string(name)]) })
        let f = try families(c)
        XCTAssertEqual(sample(f["seam_requests_total"], ["method": "org.seam.Store.Save", "outcome": "ok"])?["value"]?.int64Value, 1)
        XCTAssertEqual(f["seam_requests_total"]?["samples"]?.arrayValue?.filter {
            $0["labels"]?["method"]?.stringValue == "org.seam.Store.Save" && $0["labels"]?["outcome"]?.stringValue != "ok"
        }.count, 1, "the refused big save, by its error")
        let rows = sample(f["seam_commit_rows"])
        XCTAssertEqual(rows?["count"]?.int64Value, 1)
        XCTAssertEqual(rows?["sum"]?.doubleValue, 500)
    }

    /// The role, enabled in seamd.json: Prometheus's own parser reads what it serves; requests
    /// for another host, method or path, and hostile ones, are refused, and it goes on serving.
    func testTheMetricsRoleServesTextThatPrometheusParsesAndRefusesTheRest() throws {
        let port = try freePort()
        let broker = try BrokerProcess.supervising(config: """
            {"roles": {"ticker": {"enabled": false}, "metrics": {"enabled": true, "port": \(port)}}}
            """, in: directory)
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        _ = try c.save([.insert(entity: "UserGroup", values: ["name": .string("scraped")])])
        try eventually(10, "the metrics role listening") { (try? http(port: port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")) != nil }
        let roles = try XCTUnwrap(c.status()["roles"]?.arrayValue)
        XCTAssertTrue(roles.contains { $0["role"]?.stringValue == "metrics" && $0["pid"]?.int64Value != nil }, "\(roles)")

        // Hostile clients first: one that connects and sends nothing, one that sends a head too
        // long, one with bytes that are not HTTP; the scrape after them is still answered.
        let silent = try connectLoopback(port)
        defer { Descriptors.close(silent) }
        XCTAssertTrue(try http(port: port, "GET /metrics HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000) + "\r\n\r\n")
            .hasPrefix("HTTP/1.1 431"))
        XCTAssertTrue(try http(port: port, "\u{0}\u{1}\u{2}garbage\r\n\r\n").hasPrefix("HTTP/1.1 400"))
        XCTAssertTrue(try http(port: port, "GET /metrics HTTP/1.1\r\nHost: rebound.example:\(port)\r\n\r\n").hasPrefix("HTTP/1.1 421"))
        XCTAssertTrue(try http(port: port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: http://evil.example\r\n\r\n")
            .hasPrefix("HTTP/1.1 200"), "a scraper may send an Origin; what protects it is the Host")
        XCTAssertTrue(try http(port: port, "DELETE /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").hasPrefix("HTTP/1.1 405"))
        XCTAssertTrue(try http(port: port, "GET /secrets HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").hasPrefix("HTTP/1.1 404"))

        let python = RepositoryFiles.url(".build/venv/bin/python").path
        let script = """
            import sys, urllib.request
            from prometheus_client.parser import text_string_to_metric_families
            with urllib.request.urlopen("http://127.0.0.1:\(port)/metrics", timeout=10) as r:
                assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers["Content-Type"]
                text = r.read().decode()
            families = {f.name: f for f in text_string_to_metric_families(text)}
            saves = [s for s in families["seam_requests"].samples
                     if s.name == "seam_requests_total" and s.labels == {"method": "org.seam.Store.Save", "outcome": "ok"}]
            assert saves and saves[0].value == 1, saves
            assert families["seam_request_seconds"].type == "histogram"
            assert families["seam_store_bytes"].type == "gauge"
            up = [s for s in families["seam_role_up"].samples if s.labels["role"] == "metrics"]
            assert up and up[0].value == 1, up
            print(len(families))
            """
        let r = try Executables.runTool(python, ["-c", script])
        XCTAssertEqual(r.status, 0, r.stderr + r.stdout)
        XCTAssertGreaterThan(Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, 20, r.stdout)
    }

    func testTheRoleIsOptInAndItsPortIsChecked() throws {
        let broker = try BrokerProcess.supervising(config: """
            {"roles": {"ticker": {"enabled": false}, "metrics": {"port": 70000, "colour": "red"}}}
            """, in: directory)
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        let status = try c.status()
        XCTAssertFalse(status["roles"]?.arrayValue?.contains { $0["role"]?.stringValue == "metrics" } ?? true,
                       "mentioned without enabled: true, it does not run")
        let problems = status["configurationProblems"]?.arrayValue?.compactMap(\.stringValue) ?? []
        XCTAssertTrue(problems.contains { $0.contains("roles.metrics.colour") }, "\(problems)")
        // A client cannot claim the role for itself.
        XCTAssertThrowsError(try c.hello(role: "metrics"))
    }

    // MARK: - Helpers

    func connectLoopback(_ port: Int) throws -> Int32 { try LoopbackSocket.connect(port: port) }

    /// Sends `request` on a new connection and reads the whole response (the server closes).
    func http(port: Int, _ request: String) throws -> String {
        let fd = try connectLoopback(port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        guard !out.isEmpty else { throw SystemError("recv", path: "127.0.0.1:\(port)", errno: ECONNRESET) }
        return String(decoding: out, as: UTF8.self)
    }
}
