import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSystem
import SeamTestSupport
import Synchronization
import XCTest

/// The Swift clients against brokers that stop, hang or vanish: real processes and sockets.
final class ClientTests: XCTestCase {
    /// A socket that accepts (the kernel's backlog does) but never answers: a call with a reply
    /// timeout fails after it, and says so, instead of waiting for ever.
    func testAReplyTimeoutHoldsOnABrokerThatNeverAnswers() throws {
        let dir = TemporaryDirectory("seam-client")
        let listener = try UnixSocket.listen(path: dir.file("silent.sock"))
        defer { UnixSocket.closeDescriptor(listener) }
        let c = try SeamConnection.connect(path: dir.file("silent.sock"))
        c.replyTimeout = 0.5
        let started = Date()
        XCTAssertThrowsError(try c.call("org.seam.Store.Status")) { error in
            guard case .timedOut? = (error as? ClientError)?.kind else { return XCTFail("\(error)") }
            XCTAssertTrue("\(error)".contains("did not answer within 0.5 s"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
    }

    /// `pending()` returns at once when nothing has arrived.
    func testPendingDoesNotWait() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        _ = try c.start("org.seam.Store.Subscribe", ["entity": "Session"])
        try eventually(5, "the result arrives") { try !c.pending().isEmpty }
        let started = Date()
        XCTAssertEqual(try c.pending().count, 0)
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.5)
    }

    /// A call encoded ahead (`prepare`) keeps the id it was given: sent after calls made since,
    /// or beside one never sent, each reply reaches its own call.
    func testAPreparedCallIsAnsweredAsItsOwnWhenEverItIsSent() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let insert = c.prepare("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": "ahead"]]], "reply": "count"])
        let neverSent = c.prepare("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": "never"]]]])
        let count = try c.begin("org.seam.Store.Count", ["entity": "Timer"])
        let saved = try c.begin(insert)
        XCTAssertEqual(saved, .integer(insert.id))
        XCTAssertNotEqual(insert.id, neverSent.id)
        let after = try c.begin("org.seam.Store.Count", ["entity": "Timer"])
        XCTAssertEqual(try c.finish(after)["count"], 1, "the prepared save, sent after the first count, is seen by the second")
        XCTAssertEqual(try c.finish(saved)["changed"], 1)
        XCTAssertEqual(try c.finish(count)["count"], 0)
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Timer", "predicate": "name == 'never'"])["count"], 0)
    }

    /// A reconnect that fails leaves no descriptor number behind: the next call fails, and never
    /// writes into the file the process gave that number to meanwhile.
    func testAFailedReconnectWritesIntoNothingElse() throws {
        let broker = try BrokerProcess()
        let c = try SeamConnection.connect(path: broker.socketPath)
        XCTAssertNotNil(try c.status()["pid"])
        broker.stop()
        XCTAssertThrowsError(try c.status())
        let (mine, peer) = try UnixSocket.pair()
        defer {
            UnixSocket.closeDescriptor(mine)
            UnixSocket.closeDescriptor(peer)
        }
        XCTAssertThrowsError(try c.status())
        UnixSocket.setNonBlocking(peer, true)
        var scratch: [UInt8] = []
        XCTAssertEqual(try UnixSocket.read(peer, into: &scratch), .wouldBlock, "nothing reached another socket")
        XCTAssertEqual(fcntl(mine, F_GETFD) >= 0, true, "and it is still open")
    }

    /// Only reads are sent again after a broken connection: a call that may have changed
    /// something (it may have been done before the break) is not.
    func testOnlyReadsAreRetried() {
        for method in ["org.seam.Store.Fetch", "org.seam.Store.Status", "org.seam.Store.Count"] {
            XCTAssertTrue(SeamConnection.readMethods.contains(method), method)
        }
        for method in ["org.seam.Store.Save", "org.seam.Timers.Flash", "org.seam.Timers.Skip", "org.seam.Sync.Reload",
                       "org.seam.Migration.Migrate", "org.seam.Sync.Acknowledge"] {
            XCTAssertFalse(SeamConnection.readMethods.contains(method), method)
        }
    }

    /// A read is retried on a new connection only when nothing else was in flight on the old
    /// one: a subscription started with `start` is lost with it, and its owner hears so (from
    /// the read, and once from `pending`), instead of waiting for diffs that never come.
    func testCallsInFlightAreNotForgottenByARetry() throws {
        var broker = try BrokerProcess()
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        _ = try c.start("org.seam.Store.Subscribe", ["entity": "UserGroup"])
        XCTAssertEqual(try c.call("org.seam.Store.Status")["product"]?.stringValue, "seamd")
        broker = try broker.restarted()
        XCTAssertThrowsError(try c.call("org.seam.Store.Status"), "not retried over a lost subscription") { error in
            guard case .disconnected? = (error as? ClientError)?.kind else { return XCTFail("\(error)") }
        }
        try c.reconnect()
        XCTAssertThrowsError(try c.pending(), "the started call is lost, and pending says so") { error in
            guard case .disconnected? = (error as? ClientError)?.kind else { return XCTFail("\(error)") }
        }
        XCTAssertNoThrow(try c.pending(), "once")
        // Nothing in flight now: a read is retried across the next restart.
        broker = try broker.restarted()
        XCTAssertEqual(try c.call("org.seam.Store.Status")["product"]?.stringValue, "seamd")
    }

    /// A read whose connection breaks after it was sent (here the proxy cuts it as the reply
    /// passes) is retried on a new one; it was the only call, so nothing else is reported lost.
    func testARetriedReadIsNotReportedLost() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let cuts = Mutex(1)
        let proxy = try FrameProxy(upstream: broker.socketPath, in: broker.directory) { frame in
            guard frame.contains(#""product":"seamd""#) else { return .pass }
            return cuts.withLock { left in
                defer { left = max(0, left - 1) }
                return left > 0 ? .cut : .pass
            }
        }
        defer { proxy.stop() }
        let c = try SeamConnection.connect(path: proxy.socketPath)
        XCTAssertEqual(try c.call("org.seam.Store.Status")["product"]?.stringValue, "seamd")
        XCTAssertEqual(cuts.withLock { $0 }, 0, "precondition: the first reply was cut off")
        XCTAssertNoThrow(try c.pending(), "the retried read was the only call, and it was answered")
    }

    /// A reply timeout counts from the call, not from the last reply to another call: replies
    /// streaming in for a subscription on the same connection do not keep a lost call waiting.
    /// (The proxy loses the Count's reply, as a stuck broker would never send it.)
    func testAReplyTimeoutHoldsWhileOtherRepliesKeepComing() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let proxy = try FrameProxy(upstream: broker.socketPath, in: broker.directory) { $0.contains(#""count":"#) }
        defer { proxy.stop() }
        let c = try SeamConnection.connect(path: proxy.socketPath)
        _ = try c.start("org.seam.Store.Subscribe", ["entity": "UserGroup"])
        let path = broker.socketPath
        let saving = Thread {
            guard let writer = try? SeamConnection.connect(path: path), (try? writer.hello()) != nil else { return }
            for i in 0..<40 {
                _ = try? writer.save([.insert(entity: "UserGroup", values: ["name": .string("g\(i)")])])
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        saving.start()
        c.replyTimeout = 0.5
        let started = Date()
        XCTAssertThrowsError(try c.call("org.seam.Store.Count", ["entity": "UserGroup"])) { error in
            guard case .timedOut? = (error as? ClientError)?.kind else { return XCTFail("\(error)") }
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 2.5, "diffs kept arriving for 4 s")
        XCTAssertFalse(try c.pending().isEmpty, "the diffs that came meanwhile are kept")
    }

    /// A subscriber whose broker comes back on a data directory restored from an older copy
    /// (stores and sequence lease: its sequence behind the stream's) cannot resume
    /// (`SequenceAhead`): the stream starts afresh with a result of what the store holds,
    /// instead of failing.
    func testAStreamStartsAfreshOnAStoreOlderThanItsSequence() async throws {
        var broker = try BrokerProcess()
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try c.save([.insert(entity: "UserGroup", values: ["name": "Kept"])])
        broker.stop()
        let copy = TemporaryDirectory("seam-older")
        for file in try FileManager.default.contentsOfDirectory(atPath: broker.dataDirectory)
        where file.hasSuffix(".sqlite") || file == "sequence.lease" {
            try FileManager.default.copyItem(atPath: broker.dataDirectory + "/" + file, toPath: copy.file(file))
        }
        broker = try broker.restarted()
        let subscriber = try SeamSubscriber.connect(path: broker.socketPath, reconnectTimeout: 20)
        defer { subscriber.close() }
        var updates = subscriber.subscribe(LiveQuery("UserGroup", sort: "name", fields: ["name"])).makeAsyncIterator()
        var live = LiveResult()
        try live.apply(try await XCTUnwrapAsync(try await updates.next()))
        let writer = try SeamConnection.connect(path: broker.socketPath)
        try writer.hello()
        for name in ["Later 1", "Later 2", "Later 3"] {
            try writer.save([.insert(entity: "UserGroup", values: ["name": .string(name)])])
            try live.apply(try await XCTUnwrapAsync(try await updates.next()))
        }
        XCTAssertEqual(live.rows.count, 4)
        // Back to the copy made before the later saves: sequence 1, where the stream saw 4.
        broker.stop()
        for file in try FileManager.default.contentsOfDirectory(atPath: broker.dataDirectory)
        where file.hasPrefix("Cloud") || file.hasPrefix("Local") || file == "sequence.lease" {
            try FileManager.default.removeItem(atPath: broker.dataDirectory + "/" + file)
        }
        for file in try FileManager.default.contentsOfDirectory(atPath: copy.path) {
            try FileManager.default.copyItem(atPath: copy.file(file), toPath: broker.dataDirectory + "/" + file)
        }
        broker = try broker.restarted()
        defer { broker.stop() }
        XCTAssertFalse(broker.log.contains("holds an older sequence") || broker.log.contains("that may have been told"),
                       "the lease was restored too: nothing to find out")
        let fresh = try await XCTUnwrapAsync(try await updates.next())
        try live.apply(fresh)
        XCTAssertEqual(live.rows.map { $0["name"]?.stringValue }, ["Kept"], "what the restored store holds")
    }

    /// A subscriber that gave up reconnecting is closed: a later subscription fails at once,
    /// rather than wait on a connection no reader follows.
    func testASubscriberThatGaveUpFailsNewSubscriptionsAtOnce() async throws {
        let broker = try BrokerProcess()
        let subscriber = try SeamSubscriber.connect(path: broker.socketPath, reconnectTimeout: 0.5)
        defer { subscriber.close() }
        var first = subscriber.subscribe(LiveQuery("Session")).makeAsyncIterator()
        _ = try await first.next()
        broker.stop()
        do {
            while try await first.next() != nil {}
            XCTFail("the stream ended without an error")
        } catch {}
        var second = subscriber.subscribe(LiveQuery("Session")).makeAsyncIterator()
        let started = Date()
        do {
            _ = try await second.next()
            XCTFail("a subscription on a closed subscriber delivered")
        } catch {
            XCTAssertEqual((error as? ClientError).map { "\($0)" }, ClientError(.disconnected).description)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
    }
}
