import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSystem
import SeamTestSupport
import XCTest

/// What broken or hostile clients can send: the broker answers where there is a call, closes
/// where the stream cannot recover, and keeps serving everyone else. The broker runs in this
/// process, on a manual clock (`EmbeddedBroker`).
final class BrokerBadInputTests: XCTestCase {
    var broker: EmbeddedBroker!
    let clock = ManualClock()

    override func setUpWithError() throws { broker = try EmbeddedBroker(clock: clock) }
    override func tearDown() {
        broker?.stop()
        broker = nil
    }

    /// The broker still answers a well-behaved client.
    func assertServing(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try broker.client(hello: false).call("org.seam.Store.Status")["product"]?.stringValue,
                       "seamd", file: file, line: line)
    }

    func errorName(_ frame: String?) -> String? {
        guard let frame, let json = try? JSON.decode(Array(frame.utf8)) else { return nil }
        return json["error"]?.stringValue
    }

    func testGarbageInvalidJSONAndInvalidUTF8AreAnsweredAndTheConnectionGoesOn() throws {
        let raw = try broker.raw()
        raw.send([0xde, 0xad, 0xbe, 0xef, 0x00])
        XCTAssertEqual(errorName(raw.readFrame()), "org.seam.Store.InvalidRequest")
        raw.send("{\"method\": ")
        XCTAssertEqual(errorName(raw.readFrame()), "org.seam.Store.InvalidRequest")
        raw.send([UInt8](#"{"method":"org.seam.Store.Status","parameters":{"x":""#.utf8) + [0xc3, 0x28] + Array("\"}}".utf8) + [0])
        XCTAssertEqual(errorName(raw.readFrame()), "org.seam.Store.InvalidRequest", "invalid UTF-8 inside a string")
        raw.send("[1, 2, 3]")
        let notAnObject = raw.readFrame()
        XCTAssertEqual(errorName(notAnObject), "org.seam.Store.InvalidRequest", "valid JSON of the wrong shape")
        XCTAssertTrue(notAnObject?.contains("not a JSON object") == true, notAnObject ?? "")
        raw.send(#"{"parameters": {}}"#)
        XCTAssertEqual(errorName(raw.readFrame()), "org.varlink.service.InvalidParameter")
        raw.send(#"{"method": "org.seam.Store.Fetch", "parameters": [1]}"#)
        XCTAssertEqual(errorName(raw.readFrame()), "org.varlink.service.InvalidParameter")
        raw.send(#"{"method": "org.seam.Store.Status", "more": "yes"}"#)
        XCTAssertEqual(errorName(raw.readFrame()), "org.varlink.service.InvalidParameter")
        raw.send(String(repeating: "[", count: 100) + String(repeating: "]", count: 100))
        XCTAssertEqual(errorName(raw.readFrame()), "org.seam.Store.InvalidRequest", "nesting past the limit")
        raw.send(#"{"method": "org.seam.Store.Status", "id": "after-the-garbage"}"#)
        let reply = try XCTUnwrap(raw.readFrame())
        XCTAssertTrue(reply.contains("\"after-the-garbage\"") && reply.contains("\"seamd\""), reply)
    }

    /// Whatever the client said before: the broker holds no more than a frame's worth of it
    /// (one that had made a call was never closed, and grew the broker without bound).
    func testAFrameWithNoNULPastTheLimitClosesTheConnection() throws {
        let raw = try broker.raw()
        raw.send(#"{"method": "org.seam.Store.Hello", "parameters": {"version": 1, "role": "cli"}, "id": 1}"#)
        XCTAssertNotNil(raw.readFrame())
        let chunk = [UInt8](repeating: UInt8(ascii: " "), count: 1 << 20)
        for _ in 0..<5 { raw.send(chunk) }
        XCTAssertTrue(raw.isClosed(timeout: 10), "a frame past 4 MiB cannot be resynchronised")
        assertServing()
    }

    /// Past the limit is past the limit, even when the frame's NUL comes in the same read (the
    /// broker reads 64 KiB at a time: 4 MiB and 100 bytes used to be served).
    func testAWholeFramePastTheLimitClosesTheConnection() throws {
        let raw = try broker.raw()
        let head = #"{"method": "org.seam.Store.Status", "parameters": {"padding": ""#
        let padding = String(repeating: "x", count: (4 << 20) + 100 - head.utf8.count - 3)
        raw.send(head + padding + #""}}"#)
        let reply = raw.readFrame(timeout: 10)
        XCTAssertEqual(errorName(reply), "org.seam.Store.InvalidRequest", reply ?? "no reply")
        XCTAssertTrue(raw.isClosed(timeout: 10))
        assertServing()
    }

    func testALargeFrameUnderTheLimitIsServed() throws {
        let raw = try broker.raw()
        let padding = String(repeating: "x", count: 3 << 20)
        raw.send(#"{"method": "org.seam.Store.Status", "parameters": {"padding": "\#(padding)"}, "id": 1}"#)
        XCTAssertNotNil(raw.readFrame(timeout: 10)?.contains("seamd"))
    }

    func testOnewayGetsNoReply() throws {
        let raw = try broker.raw()
        raw.send(#"{"method": "org.seam.Store.Status", "oneway": true}"#)
        raw.send(#"{"method": "org.seam.Store.Status", "id": 2}"#)
        let reply = try XCTUnwrap(raw.readFrame())
        XCTAssertTrue(reply.contains("\"id\":2"), "the first reply is to the second call: \(reply)")
    }

    func testAClientThatSaysNothingIsClosedAfterTheHandshakeTimeout() throws {
        let raw = try broker.raw()
        let talker = try broker.raw()
        clock.advance(Limits.handshakeTimeout - 0.5)
        talker.send(#"{"method": "org.seam.Store.Status", "id": 1}"#)
        XCTAssertNotNil(talker.readFrame())
        XCTAssertFalse(raw.isClosed(timeout: 0.05), "closed before its time")
        clock.advance(1)
        XCTAssertTrue(raw.isClosed(timeout: 1))
        XCTAssertFalse(talker.isClosed(timeout: 0.05), "a client that spoke in time stays")
        assertServing()
    }

    func testAClientThatDisconnectsMidCallHarmsNobody() throws {
        for _ in 0..<20 {
            let raw = try broker.raw()
            raw.send(#"{"method": "org.seam.Store.Fetch", "parameters": {"entity": "Ti"#, nul: false)
        }
        for _ in 0..<20 {
            let raw = try broker.raw()
            raw.send(#"{"method": "org.seam.Store.Fetch", "parameters": {"entity": "Timer"}}"#)
        }
        assertServing()
    }

    /// Idle connections cost little: what 300 of them add to the process (here the test's own,
    /// the broker in it) stays under 20 MB.
    func testHundredsOfIdleConnections() throws {
        let c = try broker.client(hello: false)
        let before = try c.call("org.seam.Store.Status")["rss"]?.int64Value ?? 0
        var idle: [RawClient] = []
        for _ in 0..<300 { idle.append(try broker.raw()) }
        let status = try c.call("org.seam.Store.Status")
        XCTAssertGreaterThanOrEqual(status["connections"]?.int64Value ?? 0, 300)
        XCTAssertLessThan((status["rss"]?.int64Value ?? .max) - before, 20 << 20)
        idle.removeAll()
        assertServing()
    }
}

/// What needs a real seamd: a client of another user.
final class BrokerPeerTests: BrokerTestCase {
    /// Peers of another uid are refused: the socket is opened to everyone for this test, and a
    /// client runs as `nobody`.
    func testAPeerOfAnotherUIDIsRefused() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root to run a client as another user") }
        let dir = (broker.socketPath as NSString).deletingLastPathComponent
        chmod(dir, 0o755)
        chmod(broker.socketPath, 0o666)
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            try:
                s.sendall(b'{"method":"org.seam.Store.Status"}\\0')
                s.settimeout(5)
                data = s.recv(100)
                print("closed" if data == b"" else "answered")
            except (ConnectionResetError, BrokenPipeError):
                print("closed")
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
        p.arguments = ["-u", "nobody", "--", "python3", "-c", script, broker.socketPath]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        p.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(text.trimmingCharacters(in: .whitespacesAndNewlines), "closed", text)
        XCTAssertEqual(try SeamConnection.connect(path: broker.socketPath).call("org.seam.Store.Status")["product"]?.stringValue, "seamd")
    }
}
