import Foundation
import SeamTestSupport
import XCTest

/// What seamd does when the disk refuses to flush a commit (`--durability full`): nobody hears of
/// the commit, neither its saver nor a subscriber; seamd stops with exit status 74 and says which
/// file failed; and the store opens again afterwards with what it held. The failure is real to
/// seamd: `fdatasync` itself returns EIO, from a library preloaded into the process
/// (`Tests/Fixtures/fault-injection/fail-fdatasync.c`, built here with gcc).
final class WALFlushFailureTests: XCTestCase {
    func testAFailedFlushStopsSeamdBeforeAnyoneHearsOfTheCommit() throws {
        let scratch = TemporaryDirectory("flush-failure")
        let library = scratch.file("fail-fdatasync.so")
        let built = try Executables.runTool("/usr/bin/gcc", [
            "-shared", "-fPIC", "-O1", "-o", library, RepositoryFiles.url("Tests/Fixtures/fault-injection/fail-fdatasync.c").path, "-ldl",
        ])
        XCTAssertEqual(built.status, 0, built.stderr)
        let armed = scratch.file("armed")
        let broker = try BrokerProcess(arguments: ["--durability", "full"], environment: [
            "LD_PRELOAD": library, "SEAM_FAIL_FDATASYNC_SUFFIX": "/Local.sqlite-wal", "SEAM_FAIL_FDATASYNC_ARMED": armed,
        ])
        let subscriber = try RawClient(broker.socketPath)
        subscriber.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session","sort":"startedAt"},"more":true}"#)
        XCTAssertTrue(subscriber.readFrame()?.contains(#""kind":"result""#) == true)
        let saver = try RawClient(broker.socketPath)
        saver.send(#"{"method":"org.seam.Store.Hello","parameters":{"version":1}}"#)
        XCTAssertNotNil(saver.readFrame())

        // The disk flushes: the save is answered and heard.
        saver.send(Self.save("flushed", at: 1_700_000_000))
        XCTAssertTrue(saver.readFrame()?.contains(#""sequence":1"#) == true)
        XCTAssertTrue(subscriber.readFrame()?.contains(#""name":"flushed""#) == true)

        // The disk refuses: no answer, no diff, and seamd stops.
        XCTAssertTrue(FileManager.default.createFile(atPath: armed, contents: nil))
        saver.send(Self.save("refused", at: 1_700_000_001))
        XCTAssertNil(saver.readFrame(timeout: 20), "the saver is told nothing")
        XCTAssertNil(subscriber.readFrame(timeout: 1), "the subscriber hears nothing")
        let deadline = Date().addingTimeInterval(10)
        while broker.process.isRunning && Date() < deadline { usleep(10_000) }
        guard !broker.process.isRunning else { return XCTFail("seamd kept running after its flush failed: \(broker.log)") }
        XCTAssertEqual(broker.process.terminationStatus, 74, broker.log)
        XCTAssertEqual(broker.process.terminationReason, .exit)
        XCTAssertTrue(broker.log.contains("fdatasync"), broker.log)
        XCTAssertTrue(broker.log.contains("Local.sqlite-wal"), broker.log)

        // The next start (the disk mended) opens the store; what was answered is there, and
        // saving goes on from there.
        try FileManager.default.removeItem(atPath: armed)
        let again = try BrokerProcess(arguments: ["--durability", "full"], dataDirectory: broker.dataDirectory)
        defer { again.stop() }
        let client = try RawClient(again.socketPath)
        client.send(#"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","sort":"startedAt"}}"#)
        let rows = try XCTUnwrap(client.readFrame())
        XCTAssertTrue(rows.contains(#""name":"flushed""#), rows)
        client.send(#"{"method":"org.seam.Store.Hello","parameters":{"version":1}}"#)
        XCTAssertNotNil(client.readFrame())
        client.send(Self.save("after", at: 1_700_000_002))
        let reply = try XCTUnwrap(client.readFrame())
        XCTAssertTrue(reply.contains(#""kind":"insert""#), reply)
        XCTAssertEqual(again.stop(), 0, again.log)
    }

    private static func save(_ name: String, at startedAt: Int) -> String {
        #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"Session","values":{"name":"\#(name)","startedAt":\#(startedAt)}}]}}"#
    }
}
