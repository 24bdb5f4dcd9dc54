import Foundation
import SeamClient
import SeamJSON
import SeamTestSupport
import XCTest

/// Starting, refusing a second daemon, stale sockets, clean shutdown, reconnection.
final class BrokerLifecycleTests: XCTestCase {
    func testSIGTERMStopsCleanlyAndRemovesTheSocket() throws {
        let broker = try BrokerProcess()
        let raw = try RawClient(broker.socketPath)
        raw.send(#"{"method":"org.seam.Store.Status","id":1}"#)
        XCTAssertNotNil(raw.readFrame())
        XCTAssertEqual(broker.stop(), 0)
        XCTAssertEqual(raw.readFrame()?.contains("org.seam.Store.ShuttingDown"), true, "clients are told")
        XCTAssertFalse(FileManager.default.fileExists(atPath: broker.socketPath))
        XCTAssertTrue(broker.log.contains("shutting down"), broker.log)
    }

    /// `--spin` (and `SEAM_SPIN_MICROSECONDS`) take microseconds, from 0 to 100,000: anything
    /// else is a usage error (exit 64), and 0 (no polling after a request) serves as well.
    func testSpinTakesMicroseconds() throws {
        for bad in ["-1", "x", "1.5", "100001", ""] {
            let r = try Executables.run("seamd", ["--spin", bad, "--data-dir", "/nonexistent/seam", "--socket", "/nonexistent/seam.sock"])
            XCTAssertEqual(r.status, 64, "--spin \(bad): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("--spin takes microseconds"), r.stderr)
        }
        let fromEnvironment = try Executables.run("seamd", ["--data-dir", "/nonexistent/seam"], environment: ["SEAM_SPIN_MICROSECONDS": "soon"])
        XCTAssertEqual(fromEnvironment.status, 64, fromEnvironment.stderr)
        let broker = try BrokerProcess(arguments: ["--spin", "0"])
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try c.save([.insert(entity: "UserGroup", values: ["name": "a"])])
        XCTAssertEqual(try c.status()["subscriptions"]?.int64Value, 0)
    }

    func testASecondDaemonOnTheSameStoresExitsWithAClearMessage() throws {
        let first = try BrokerProcess()
        defer { first.stop() }
        XCTAssertThrowsError(try BrokerProcess(dataDirectory: first.dataDirectory)) { error in
            XCTAssertTrue("\(error)".contains("another seamd already serves"), "\(error)")
        }
    }

    func testAStaleSocketFromADeadDaemonIsReplaced() throws {
        let first = try BrokerProcess()
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        XCTAssertTrue(FileManager.default.fileExists(atPath: first.socketPath), "a killed daemon leaves its socket file")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Executables.path("seamd"))
        p.arguments = ["--data-dir", first.dataDirectory, "--socket", first.socketPath]
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer {
            kill(p.processIdentifier, SIGTERM)
            p.waitUntilExit()
        }
        var answered = false
        for _ in 0..<200 where !answered {
            usleep(25_000)
            answered = (try? SeamConnection.connect(path: first.socketPath).call("org.seam.Store.Status")) != nil
        }
        XCTAssertTrue(answered)
    }

    /// Runs seamd on `socket` until it exits or 10 s pass; its stderr.
    private func seamdRefusing(socket: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Executables.path("seamd"))
        let data = TemporaryDirectory("refused")
        p.arguments = ["--data-dir", data.file("data"), "--socket", socket, "--no-roles"]
        let err = Pipe()
        p.standardError = err
        try p.run()
        let deadline = Date().addingTimeInterval(10)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 1, "seamd refused to start")
        return String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// A file at the socket's path that is not a socket is someone's: kept, and seamd says so.
    /// Only a socket nobody answers on is a leftover to replace.
    func testAFileThatIsNotASocketIsNotReplaced() throws {
        let directory = TemporaryDirectory("not-a-socket")
        let path = directory.file("notes.txt")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: path))
        let log = try seamdRefusing(socket: path)
        XCTAssertTrue(log.contains("not a socket"), log)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "keep me")
    }

    /// A socket directory that another user owns (here: made and handed over before seamd came,
    /// as one could squat /tmp/seam-$UID) could have our socket replaced with theirs: refused.
    func testASocketDirectoryOfAnotherUserIsRefused() throws {
        let directory = "/tmp/seam-squat-\(getpid())-\(UUID().uuidString.prefix(4))"
        XCTAssertEqual(mkdir(directory, 0o777), 0)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        chmod(directory, 0o777)
        guard chown(directory, 4242, 4242) == 0 else { throw XCTSkip("cannot give a directory to another user here") }
        let log = try seamdRefusing(socket: directory + "/seamd.sock")
        XCTAssertTrue(log.contains("not safe for a socket") && log.contains("uid 4242"), log)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/seamd.sock"))
    }

    /// A write to a stderr nobody reads any more is an error to seamd, not SIGPIPE ending it.
    func testSeamdOutlivesTheReaderOfItsLog() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Executables.path("seamd"))
        let data = TemporaryDirectory("sigpipe")
        let socket = "/tmp/seamd-test-\(getpid())-\(UUID().uuidString.prefix(6))/seamd.sock"
        defer { try? FileManager.default.removeItem(atPath: (socket as NSString).deletingLastPathComponent) }
        p.arguments = ["--data-dir", data.file("data"), "--socket", socket, "--no-roles", "--log-level", "debug"]
        let err = Pipe()
        p.standardError = err
        try p.run()
        defer {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        }
        XCTAssertNotNil(status(on: socket))
        try err.fileHandleForReading.close()
        // Each connection is logged (debug): the first write after the close gets EPIPE.
        for _ in 0..<5 { _ = try? SeamConnection.connect(path: socket).call("org.seam.Store.Status") }
        // Those connections' log lines were written before the next call is answered: a seamd
        // that a failed write ended would not answer it.
        XCTAssertTrue(p.isRunning, "seamd ended (status \(p.isRunning ? 0 : p.terminationStatus))")
        XCTAssertEqual(try SeamConnection.connect(path: socket).call("org.seam.Store.Status")["product"]?.stringValue, "seamd")
    }

    func testTheClientReconnectsForReads() throws {
        let broker = try BrokerProcess()
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        XCTAssertNotNil(try c.call("org.seam.Store.Status"))
        let data = broker.dataDirectory, socket = broker.socketPath
        broker.stop()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Executables.path("seamd"))
        p.arguments = ["--data-dir", data, "--socket", socket]
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer {
            kill(p.processIdentifier, SIGTERM)
            p.waitUntilExit()
        }
        for _ in 0..<200 where (try? RawClient(socket)) == nil { usleep(25_000) }
        XCTAssertEqual(try c.call("org.seam.Store.Status")["product"]?.stringValue, "seamd", "a read retries on a new connection")
        XCTAssertNoThrow(try c.call("org.seam.Store.Save", ["inserts": [["entity": "UserGroup", "values": ["name": "after"]]]]),
                         "and says hello again, so it may still write")
    }

    func testIdleFootprint() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let rss = try SeamConnection.connect(path: broker.socketPath).call("org.seam.Store.Status")["rss"]?.int64Value ?? 0
        print("seamd idle RSS: \(rss / 1024) KiB")
        XCTAssertGreaterThan(rss, 0)
    }
}

/// Socket activation, the per-uid limit and the typed client calls.
final class BrokerActivationTests: XCTestCase {
    /// systemd's way: a listening socket on fd 3, LISTEN_PID and LISTEN_FDS. Python plays systemd.
    func testASocketPassedBySystemdIsServed() throws {
        let temp = TemporaryDirectory("seam-activation")
        let socket = "/tmp/seam-act-\(getpid()).sock"
        defer { unlink(socket) }
        let script = """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.bind(sys.argv[1]); s.listen(16)
            if s.fileno() != 3: os.dup2(s.fileno(), 3)
            os.set_inheritable(3, True)
            env = dict(os.environ, LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
            os.execve(sys.argv[2], [sys.argv[2], "--data-dir", sys.argv[3], "--socket", "/nonexistent/ignored.sock"], env)
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", script, socket, Executables.path("seamd"), temp.file("data")]
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer {
            kill(p.processIdentifier, SIGTERM)
            p.waitUntilExit()
        }
        let answered = status(on: socket)
        XCTAssertEqual(answered?["product"]?.stringValue, "seamd")
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/nonexistent/ignored.sock"))
    }

    /// At the cap, a new connection takes the place of the oldest that has not said Hello; when
    /// every one has (and the reserve for a person's `seam` is full too), the next is refused.
    func testConnectionsPerUIDAreBounded() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        var held: [RawClient] = []
        for _ in 0..<512 { held.append(try RawClient(broker.socketPath)) }
        // Each one answered, so accepted: a sleep here let the next connection be accepted
        // before some of these on a busy machine, and it was not the one refused.
        for c in held { c.send(#"{"method":"org.varlink.service.GetInfo"}"#) }
        for c in held { XCTAssertEqual(c.readFrame()?.contains("seamd"), true) }
        let newcomer = try RawClient(broker.socketPath)
        newcomer.send(#"{"method":"org.varlink.service.GetInfo"}"#)
        XCTAssertEqual(newcomer.readFrame()?.contains("seamd"), true, "let in")
        XCTAssertTrue(held[0].isClosed(timeout: 5), "in place of the oldest that had not said Hello")
        XCTAssertTrue(broker.log.contains("the oldest that has not said Hello"), broker.log)
        held = []
        newcomer.shutdownWriting()

        var people: [SeamConnection] = []
        try eventually(10, "the anonymous ones are gone") { try SeamConnection.connect(path: broker.socketPath).status()["connections"]?.int64Value ?? 999 < 5 }
        for _ in 0..<(512 + 32) {
            let c = try SeamConnection.connect(path: broker.socketPath)
            try c.hello()
            people.append(c)
        }
        let refused = try RawClient(broker.socketPath)
        XCTAssertEqual(refused.readFrame()?.contains("org.seam.Store.PermissionDenied"), true)
        XCTAssertTrue(refused.isClosed(timeout: 5))
        people.removeLast(10)
        try eventually(5, "room again once some close") { (try? SeamConnection.connect(path: broker.socketPath).status()) != nil }
    }

    func testTypedClientCalls() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let (sequence, inserted) = try c.save([.insert(entity: "Timer", values: ["name": "Tea"]),
                                               .insert(entity: "Timer", values: ["name": "Bread"])])
        XCTAssertEqual(sequence, 1)
        XCTAssertEqual(inserted.count, 2)
        XCTAssertEqual(try c.fetch("Timer", sort: "name").compactMap { $0["name"]?.stringValue }, ["Bread", "Tea"])
        XCTAssertEqual(try c.row("Timer", uuid: inserted[0])?["name"]?.stringValue, "Tea")
        XCTAssertNil(try c.row("Timer", uuid: "00000000-0000-4000-8000-000000000000"))
        XCTAssertEqual(try c.count("Timer", where: "name == $n", parameters: ["n": "Tea"]), 1)
        try c.save([.update(entity: "Timer", uuid: inserted[1], values: ["name": "Rye"]), .delete(entity: "Timer", uuid: inserted[0])])
        XCTAssertEqual(try c.fetch("Timer").compactMap { $0["name"]?.stringValue }, ["Rye"])
    }
}

/// The Status of the seamd on `socket`, once it answers (nil after 10 s).
private func status(on socket: String) -> JSONObject? {
    for _ in 0..<400 {
        if let s = try? SeamConnection.connect(path: socket).status() { return s }
        usleep(25_000)
    }
    return nil
}
