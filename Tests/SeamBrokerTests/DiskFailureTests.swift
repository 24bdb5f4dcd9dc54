import Foundation
import SeamClient
import SeamTestSupport
import XCTest

/// What seamd does when the disk fails under it. The failures are real to seamd: the C library's
/// calls themselves fail, from a library preloaded into the process
/// (`FaultInjection`: `Tests/Fixtures/fault-injection/faults.c`, built with gcc), while a file exists.
final class DiskFailureTests: XCTestCase {
    /// A seamd with the failing library, and the file that arms it.
    private func brokerWithFaults(_ arguments: [String], _ faults: [String: String],
                                  in scratch: TemporaryDirectory) throws -> (BrokerProcess, armed: String) {
        let armed = scratch.file("armed")
        let environment = try FaultInjection.environment(faults, armed: armed, in: scratch)
        return (try BrokerProcess(arguments: arguments, environment: environment), armed)
    }

    /// The disk refuses to flush a commit (`--durability full`): nobody hears of the commit,
    /// neither its saver nor a subscriber; seamd stops with exit status 74 and says which file
    /// failed; and the store opens again afterwards with what it held.
    func testAFailedFlushStopsSeamdBeforeAnyoneHearsOfTheCommit() throws {
        let scratch = TemporaryDirectory("flush-failure")
        let (broker, armed) = try brokerWithFaults(["--durability", "full"], ["SEAM_FAIL_FDATASYNC_SUFFIX": "/Local.sqlite-wal"], in: scratch)
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

    /// A save across both files (deleting a timer deletes its session: Cloud, then Local) whose
    /// second commit meets a full disk, twice: the client hears that it completes later; its
    /// sequence number is not given to another save; no save is worked out around it while it
    /// cannot complete (each is refused, changing nothing); subscribers are sent what the stores
    /// now hold; once the disk has room the next save completes it first; and a restart finds
    /// nothing left to finish.
    func testASaveThatCommitsInOneFileCompletesBeforeTheNextSave() throws {
        let scratch = TemporaryDirectory("full-disk")
        let (broker, armed) = try brokerWithFaults([], ["SEAM_FAIL_PWRITE_SUFFIX": "/Local.sqlite-wal"], in: scratch)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let timer = try c.save([.insert(entity: "Timer", values: ["name": "Tea", "steps": [["label": "Steep", "seconds": 180]]])]).inserted[0]
        let made = try c.save([.insert(entity: "Session", values: ["timerUUID": .string(timer), "name": "Tea", "startedAt": 1_700_000_000])])
        let session = made.inserted[0], before = try XCTUnwrap(made.sequence)
        let sessions = try RawClient(broker.socketPath)
        sessions.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session"},"more":true}"#)
        XCTAssertTrue(sessions.readFrame()?.contains(session) == true)

        XCTAssertTrue(FileManager.default.createFile(atPath: armed, contents: nil))
        XCTAssertThrowsError(try c.save([.delete(entity: "Timer", uuid: timer)])) { error in
            XCTAssertEqual((error as? ClientError)?.remoteName, "org.seam.Store.StoreFailure", "\(error)")
            XCTAssertTrue("\(error)".contains("completes before the next save"), "\(error)")
        }
        XCTAssertNil(try c.row("Timer", uuid: timer), "the first file committed")
        XCTAssertNotNil(try c.row("Session", uuid: session), "the second could not")
        XCTAssertEqual(try c.status()["sequence"]?.int64Value, before + 1, "its number is taken")
        let resync = sessions.readFrame() ?? ""
        XCTAssertTrue(resync.contains(#""kind":"resync""#) && resync.contains(session), resync)

        // Still no room: a save elsewhere is refused rather than worked out around it.
        XCTAssertThrowsError(try c.save([.insert(entity: "Timer", values: ["name": "Later"])])) { error in
            XCTAssertTrue("\(error)".contains("waits to complete in Local"), "\(error)")
            XCTAssertTrue("\(error)".contains("this save changed nothing"), "\(error)")
        }
        XCTAssertEqual(try c.count("Timer"), 0)

        // Room again: the next save completes the unfinished one first, under a number of its own
        // (its first, before + 1, was told with the first file alone), then gets the next.
        try FileManager.default.removeItem(atPath: armed)
        let after = try c.save([.insert(entity: "Timer", values: ["name": "Mint"])])
        XCTAssertEqual(after.sequence, before + 3)
        XCTAssertNil(try c.row("Session", uuid: session), "the cascade reached Local")
        var heard = ""
        while !heard.contains(#""kind":"resync""#), let frame = sessions.readFrame() { heard = frame }
        XCTAssertTrue(heard.contains(#""rows":[]"#), heard)
        XCTAssertTrue(heard.contains(#""sequence":\#(before + 2)"#), heard)
        // A subscriber that heard the first resync and not this one resumes from before + 1: it
        // gets the stores afresh. (A diff from before + 1 would leave it the deleted session.)
        try assertResumeFrom(before + 1, isAFreshResultWithout: session, at: broker.socketPath)

        let again = try broker.restarted()
        defer { again.stop() }
        let d = try SeamConnection.connect(path: again.socketPath)
        XCTAssertEqual(try d.status()["sequence"]?.int64Value, before + 3)
        XCTAssertEqual(try d.count("Session"), 0)
        XCTAssertEqual(try d.fetch("Timer").compactMap { $0["name"]?.stringValue }, ["Mint"])
        XCTAssertFalse(again.log.contains("finished"), again.log)
    }

    /// The same save, left unfinished when seamd stops: the next start finishes it (replaying
    /// its intent) and takes a new number for it, so that a resume from the number told with the
    /// first file alone gets a fresh result rather than "nothing since".
    func testASaveFinishedAtTheNextStartTakesANewNumber() throws {
        let scratch = TemporaryDirectory("full-disk-restart")
        let (broker, armed) = try brokerWithFaults([], ["SEAM_FAIL_PWRITE_SUFFIX": "/Local.sqlite-wal"], in: scratch)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let timer = try c.save([.insert(entity: "Timer", values: ["name": "Tea"])]).inserted[0]
        let session = try c.save([.insert(entity: "Session", values: ["timerUUID": .string(timer), "name": "Tea",
                                                                     "startedAt": 1_700_000_000])]).inserted[0]
        XCTAssertTrue(FileManager.default.createFile(atPath: armed, contents: nil))
        XCTAssertThrowsError(try c.save([.delete(entity: "Timer", uuid: timer)]))
        let told = try XCTUnwrap(try c.status()["sequence"]?.int64Value)
        XCTAssertNotNil(try c.row("Session", uuid: session), "the second file could not commit")
        try FileManager.default.removeItem(atPath: armed)

        let again = try broker.restarted()
        defer { again.stop() }
        let d = try SeamConnection.connect(path: again.socketPath)
        XCTAssertTrue(again.log.contains("finished 1 save(s) interrupted"), again.log)
        XCTAssertNil(try d.row("Session", uuid: session), "the cascade reached Local at the start")
        XCTAssertEqual(try d.status()["sequence"]?.int64Value, told + 1)
        try assertResumeFrom(told, isAFreshResultWithout: session, at: again.socketPath)
    }

    /// Subscribes to every Session with `since`: the first reply must be a resync (a fresh
    /// result) that does not hold `session`.
    private func assertResumeFrom(_ since: Int64, isAFreshResultWithout session: String, at socket: String,
                                  file: StaticString = #filePath, line: UInt = #line) throws {
        let resumed = try RawClient(socket)
        resumed.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session","since":\#(since)},"more":true}"#)
        let first = resumed.readFrame() ?? ""
        XCTAssertTrue(first.contains(#""kind":"resync""#), first, file: file, line: line)
        XCTAssertFalse(first.contains(session), first, file: file, line: line)
    }

    /// Saves committed together (`--durability full`) whose shared commit cannot be written: no
    /// saver is told its save happened — each is told it failed, or its connection is closed
    /// unanswered — none of the rows is there, a subscriber is sent what the stores hold, and
    /// seamd goes on saving once the disk takes writes again.
    func testSavesCommittedTogetherThatCannotBeWrittenAreNotToldAsDone() throws {
        let scratch = TemporaryDirectory("group-failure")
        let (broker, armed) = try brokerWithFaults(["--durability", "full"], ["SEAM_FAIL_PWRITE_SUFFIX": "/Local.sqlite-wal"], in: scratch)
        defer { broker.stop() }
        let subscriber = try RawClient(broker.socketPath)
        subscriber.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session","sort":"startedAt"},"more":true}"#)
        XCTAssertTrue(subscriber.readFrame()?.contains(#""kind":"result""#) == true)
        let savers = try (0..<4).map { _ in try RawClient(broker.socketPath) }
        for saver in savers {
            saver.send(#"{"method":"org.seam.Store.Hello","parameters":{"version":1}}"#)
            XCTAssertNotNil(saver.readFrame())
        }
        XCTAssertTrue(FileManager.default.createFile(atPath: armed, contents: nil))
        for (i, saver) in savers.enumerated() { saver.send(Self.save("lost \(i)", at: 1_700_000_000 + i)) }
        for (i, saver) in savers.enumerated() {
            if let reply = saver.readFrame(timeout: 10) {
                XCTAssertTrue(reply.contains(#""error""#), "saver \(i) was told: \(reply)")
            }  // else: closed unanswered, as a crash would leave it
        }
        try FileManager.default.removeItem(atPath: armed)
        XCTAssertTrue(broker.log.contains("saves committed together failed"), broker.log)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        XCTAssertEqual(try c.count("Session"), 0, "none of the saves is there")
        XCTAssertNotNil(try c.save([.insert(entity: "Session", values: ["name": "after", "startedAt": 1_700_000_100])]).sequence)
        XCTAssertEqual(try c.fetch("Session").compactMap { $0["name"]?.stringValue }, ["after"])
        // The subscriber (unless it was closed with the group's held output) never hears of them.
        var frames: [String] = []
        while !(frames.last?.contains(#""name":"after""#) ?? false), let frame = subscriber.readFrame(timeout: 2) { frames.append(frame) }
        XCTAssertFalse(frames.contains { $0.contains("lost") }, "\(frames)")
    }

    private static func save(_ name: String, at startedAt: Int) -> String {
        #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"Session","values":{"name":"\#(name)","startedAt":\#(startedAt)}}]}}"#
    }
}
