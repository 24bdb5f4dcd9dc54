import Foundation
import SeamJSON
import SeamTestSupport
import XCTest

/// The protocol conformance vectors (`Protocol/vectors/protocol/*.json`) replayed against seamd's
/// broker, each on fresh stores — here in Swift, on the broker in this process, and by the
/// independent Python replayer (`Protocol/tools/replay.py`, against a real seamd) that a client in
/// another language can copy.
final class ConformanceTests: XCTestCase {
    struct Mismatch: Error, CustomStringConvertible {
        var description: String
    }

    static var vectorFiles: [URL] {
        let dir = RepositoryFiles.url("Protocol/vectors/protocol")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted().map { dir.appendingPathComponent($0) }
    }

    func testEveryVectorReplaysInSwift() throws {
        let files = Self.vectorFiles
        XCTAssertGreaterThanOrEqual(files.count, 7)
        for file in files {
            let vector = try JSON.decode(Array(try Data(contentsOf: file)))
            let name = vector["name"]?.stringValue ?? file.lastPathComponent
            let broker = try EmbeddedBroker()
            do { try replay(vector, client: broker.raw()) } catch { XCTFail("\(name): \(error)") }
        }
    }

    func testTheIndependentPythonReplayerAgrees() throws {
        let r = try Executables.runTool("/usr/bin/env", ["python3", RepositoryFiles.url("Protocol/tools/replay.py").path,
                                                         "--seamd", Executables.path("seamd")])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("\(Self.vectorFiles.count) passed, 0 failed"), r.stdout)
    }

    /// The replayer catches what does not match: a vector that expects the wrong thing fails.
    func testAWrongExpectationFails() throws {
        let broker = try EmbeddedBroker()
        let wrong = try JSON.decode(#"{"name": "wrong", "steps": [{"send": {"method": "org.seam.Store.Count", "parameters": {"entity": "Timer"}}, "expect": [{"parameters": {"count": 1, "sequence": 0}}]}]}"#)
        XCTAssertThrowsError(try replay(wrong, client: broker.raw())) { e in
            XCTAssertTrue("\(e)".contains("expected 1, got 0"), "\(e)")
        }
    }

    // MARK: - The replayer (the same rules as Protocol/tools/replay.py)

    func replay(_ vector: JSON, client: RawClient) throws {
        var captured: [String: JSON] = [:]
        for (n, step) in (vector["steps"]?.arrayValue ?? []).enumerated() {
            let sends: [JSON] = step["send"].map { $0.arrayValue ?? [$0] } ?? []
            for call in sends { client.send(Array(try substitute(call, captured).encoded()) + [0]) }
            if let raw = step["raw"]?.stringValue { client.send(raw) }
            for (i, expected) in (step["expect"]?.arrayValue ?? []).enumerated() {
                guard let frame = client.readFrame() else { throw Mismatch(description: "step \(n + 1): no reply \(i + 1)") }
                do { try match(expected, try JSON.decode(frame), &captured, "$") } catch {
                    throw Mismatch(description: "step \(n + 1), reply \(i + 1): \(error)")
                }
            }
            if step["expectClose"]?.boolValue == true, client.readFrame() != nil {
                throw Mismatch(description: "step \(n + 1): expected the broker to close the connection")
            }
        }
    }

    func substitute(_ value: JSON, _ captured: [String: JSON]) throws -> JSON {
        switch value {
        case .string(let s) where s.hasPrefix("$ref:"):
            guard let v = captured[String(s.dropFirst(5))] else { throw Mismatch(description: "nothing captured as \(s)") }
            return v
        case .array(let items): return .array(try items.map { try substitute($0, captured) })
        case .object(let o):
            var out: JSONObject = [:]
            for (k, v) in o { out[k] = try substitute(v, captured) }
            return .object(out)
        default: return value
        }
    }

    func match(_ expected: JSON, _ actual: JSON, _ captured: inout [String: JSON], _ at: String) throws {
        func fail(_ what: String) -> Mismatch { Mismatch(description: "\(at): \(what), got \(actual)") }
        switch expected {
        case .string(let s) where s.hasPrefix("$"):
            if s.hasPrefix("$capture:") {
                guard !actual.isNull else { throw fail("expected a value to capture") }
                captured[String(s.dropFirst(9))] = actual
                return
            }
            if s.hasPrefix("$ref:") {
                guard let v = captured[String(s.dropFirst(5))] else { throw fail("nothing captured as \(s)") }
                return try match(v, actual, &captured, at)
            }
            let ok: Bool
            switch (s, actual) {
            case ("$any", _), ("$string", .string), ("$int", .integer), ("$number", .integer), ("$number", .double), ("$bool", .bool),
                 ("$null", .null):
                ok = true
            case ("$uuid", .string(let v)):
                ok = v.utf8.count == 36 && v == v.lowercased() && v.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12]
            case ("$date", .string(let v)):
                ok = v.hasSuffix("Z") && v.contains("T") && v.contains(".")
            default:
                ok = false
            }
            if !ok { throw fail("expected \(s)") }
        case .object(let e):
            guard case .object(let a) = actual else { throw fail("expected an object") }
            let partial = e["$partial"]?.boolValue == true
            let keys = e.keys.filter { $0 != "$partial" }
            if let missing = keys.first(where: { a[$0] == nil }) { throw fail("missing \(missing)") }
            if !partial, let extra = a.keys.first(where: { !keys.contains($0) }) { throw fail("unexpected \(extra)") }
            func capturing(_ k: String) -> Bool { e[k]?.stringValue?.hasPrefix("$capture:") ?? false }
            for k in keys.sorted(by: { (capturing($0) ? 0 : 1, $0) < (capturing($1) ? 0 : 1, $1) }) {
                try match(e[k]!, a[k]!, &captured, "\(at).\(k)")
            }
        case .array(let e):
            guard case .array(let a) = actual, a.count == e.count else { throw fail("expected \(e.count) items") }
            for i in e.indices { try match(e[i], a[i], &captured, "\(at)[\(i)]") }
        case .integer(let e):
            guard case .integer(let a) = actual, a == e else { throw fail("expected \(e)") }
        default:
            guard expected == actual else { throw fail("expected \(expected)") }
        }
    }
}
