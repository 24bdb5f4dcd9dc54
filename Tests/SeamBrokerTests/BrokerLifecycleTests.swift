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
