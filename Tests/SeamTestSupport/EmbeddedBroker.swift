import Foundation
import SeamBroker
import SeamClient
import SeamSystem
import SeamTimerService
import SeamTimers
import XCTest

/// seamd's broker in the test's own process, on a loop the test turns (the idea of swift-nio's
/// `EmbeddedEventLoop`): its clients are socket pairs, and a client waiting for a reply turns
/// the loop instead of sleeping, so a test runs in one thread, without starting a process.
/// The broker is seamd's own (`Broker`, the timer app's schema and service); it runs no roles and
/// takes none of the process's signals. Tests of signals, supervision, crashes and other users
/// start a real seamd instead (`BrokerProcess`).
public final class EmbeddedBroker {
    public let broker: Broker
    public let directory: TemporaryDirectory
    public let dataDirectory: String
    public let clock: any Clock
    private let configure: (inout Broker.Configuration) -> Void
    private let lines: Locked<[String]>
    private var stopped = false

    /// A broker on a new store directory (or `dataDirectory`), on `clock`; `configure` changes
    /// its configuration before it opens the stores.
    public convenience init(clock: any Clock = SystemClock(), dataDirectory: String? = nil,
                            configure: @escaping (inout Broker.Configuration) -> Void = { _ in }) throws {
        let directory = TemporaryDirectory("embedded")
        try self.init(clock: clock, directory: directory, dataDirectory: dataDirectory ?? directory.file("data"), configure: configure)
    }

    private init(clock: any Clock, directory: TemporaryDirectory, dataDirectory: String,
                 configure: @escaping (inout Broker.Configuration) -> Void) throws {
        self.directory = directory
        self.dataDirectory = dataDirectory
        self.clock = clock
        self.configure = configure
        let lines = Locked<[String]>([])
        self.lines = lines
        // Short: sockaddr_un holds 107 bytes. Nobody connects to it: clients come in pairs.
        var configuration = Broker.Configuration(dataDirectory: dataDirectory,
                                                 socketPath: directory.file("seamd.sock"))
        if configuration.socketPath.utf8.count > 100 { configuration.socketPath = "/tmp/seam-embedded-\(getpid())-\(UUID().uuidString.prefix(8)).sock" }
        configuration.interfaces = [TimerService.interface]
        configuration.clock = clock
        configuration.spinSeconds = 0
        configure(&configuration)
        let log = Logger(tag: "seamd", level: .debug) { line in lines.mutate { $0.append(line) } }
        broker = try Broker(configuration: configuration, schema: TimerApp.schema, log: log)
        try broker.start()
    }

    deinit { stop() }

    /// What the broker logged, every level, in order.
    public var log: String { lines.value.joined() }

    /// One turn of the loop: what is ready is handled, waiting at most `maxWait` seconds.
    public func turn(maxWait: Double = 0) { broker.turn(maxWait: maxWait) }

    /// Turns the loop until `condition` holds; false when `timeout` seconds (real ones) passed first.
    @discardableResult
    public func turn(until condition: () throws -> Bool, timeout: Double = 5) rethrows -> Bool {
        let deadline = WallClock.monotonic() + timeout
        while try !condition() {
            guard WallClock.monotonic() < deadline else { return false }
            broker.turn(maxWait: 0.002)
        }
        return true
    }

    /// Turns the loop until `fd` has something to read, for at most `milliseconds`.
    @discardableResult
    public func waitReadable(_ fd: Int32, milliseconds: Int32) -> Bool {
        let deadline = WallClock.monotonic() + Double(milliseconds) / 1000
        repeat {
            broker.turn(maxWait: 0)
            if UnixSocket.waitReadable(fd, timeoutMilliseconds: 0) { return true }
            broker.turn(maxWait: 0.001)
        } while WallClock.monotonic() < deadline
        return UnixSocket.waitReadable(fd, timeoutMilliseconds: 0)
    }

    /// A new connection; it has said Hello (so it may save) unless `hello` is false.
    public func client(hello: Bool = true, role: String = "cli") throws -> SeamConnection {
        let fd = try broker.connectPair().fd
        let c = SeamConnection(adopting: fd, name: "embedded broker") { [unowned self] fd, milliseconds in
            self.waitReadable(fd, milliseconds: milliseconds)
        }
        if hello { try c.hello(role: role) }
        return c
    }

    /// A bare connection, for what a broken client can send.
    public func raw() throws -> RawClient { try rawConnection().client }

    /// `raw()`, with the broker's number for the connection; the kernel buffers at most about
    /// `sendBufferBytes` of what the broker sends it, when given.
    public func rawConnection(sendBufferBytes: Int? = nil) throws -> (client: RawClient, connection: Int) {
        let (fd, connection) = try broker.connectPair(sendBufferBytes: sendBufferBytes)
        return (RawClient(fd: fd) { [unowned self] fd, milliseconds in self.waitReadable(fd, milliseconds: milliseconds) }, connection)
    }

    /// Shuts this broker down as seamd does on SIGTERM, and starts another on the same store
    /// directory (what a client sees when seamd restarts).
    public func restarted() throws -> EmbeddedBroker {
        stop()
        return try EmbeddedBroker(clock: clock, directory: directory, dataDirectory: dataDirectory, configure: configure)
    }

    /// Shuts the broker down (once): clients are told, the stores closed cleanly.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        broker.shutdown()
    }
}

/// A test case with a fresh broker in this process for each test (`EmbeddedBroker`), and
/// clients of it.
open class EmbeddedBrokerTestCase: XCTestCase {
    public var broker: EmbeddedBroker!

    open override func setUpWithError() throws { broker = try EmbeddedBroker() }

    open override func tearDown() {
        broker?.stop()
        broker = nil
    }

    /// A connection that has said Hello (so it may save).
    public func client() throws -> SeamConnection { try broker.client() }
}
