import SeamJSON
import SeamProtocol
import SeamSystem

/// What the connection table asks of the broker that hosts it.
protocol ConnectionHost: AnyObject {
    /// Whole calls were read from `c`: it is queued for a turn (unless something holds its calls).
    func schedule(_ c: Connection)
    /// Handles the calls read from `c`, at most `budget` of them and none begun after `deadline`.
    func processFrames(_ c: Connection, budget: Int, until deadline: Double)
    /// `c` has read everything queued for it and is owed resyncs: the next is built.
    func startResync(_ c: Connection)
    /// `c` has closed: its turn and its subscriptions go.
    func connectionClosed(_ c: Connection)
    /// Whether output must wait: the round's saves applied and not committed, or committed and
    /// not yet on the disk (group commit, `SavePath`).
    var mustHoldOutput: Bool { get }
    /// Holds `c`'s queued output until the round's saves are on the disk.
    func holdForSync(_ c: Connection)
}

/// The broker's connections: who may connect (same uid, a cap per user), reading what they send
/// into their frame decoders, writing what is queued for them, and each one's life
/// (`ConnectionLifecycle`, pure: this type performs what it answers). What the calls mean is the
/// broker's (`ConnectionHost`). One thread: the event loop's.
final class ConnectionTable {
    /// Every open connection, by its descriptor.
    private(set) var byDescriptor: [Int32: Connection] = [:]
    private var nextID = 0
    /// Connections served since seamd started (each one's number is the next).
    var served: Int { nextID }
    /// Connections closed for leaving more unread than `Limits.maxOutboxBytes`.
    private(set) var closedForSlowReading = 0
    weak var host: (any ConnectionHost)?
    private let loop: EventLoop
    private let log: Logger
    /// Seconds a new connection has to send its first call before it is closed.
    private let handshakeTimeout: Double
    /// What a connection may leave unread (`Limits`, unless a test made them smaller).
    let outboxLimits: BrokerLimits.OutboxLimits
    /// The calls handled at once when a connection's paused calls resume (the rest in turns).
    private let callsPerTurn: Int
    /// Where every read lands before its bytes join a connection's frame decoder (one thread: one buffer).
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)

    init(loop: EventLoop, log: Logger, handshakeTimeout: Double, limits: BrokerLimits) {
        self.loop = loop
        self.log = log
        self.handshakeTimeout = handshakeTimeout
        outboxLimits = limits.outbox
        callsPerTurn = limits.callsPerTurn
    }

    deinit { scratch.deallocate() }

    private var clock: any Clock { loop.clock }
    var values: Dictionary<Int32, Connection>.Values { byDescriptor.values }
    var count: Int { byDescriptor.count }
    subscript(_ fd: Int32) -> Connection? { byDescriptor[fd] }

    /// Serves `fd`, a client's end that was accepted (or made a pair), if its peer may connect.
    func admit(_ fd: Int32) {
        let peer: PeerCredentials
        do { peer = try UnixSocket.peerCredentials(fd) } catch {
            log.warning("refused a peer whose credentials cannot be read: \(error)")
            Descriptors.close(fd)
            return
        }
        guard peer.uid == Environment.userID else {
            log.warning("refused pid \(peer.pid) of uid \(peer.uid): only uid \(Environment.userID) may connect")
            Descriptors.close(fd)
            return
        }
        let held = clientConnections
        if held >= Limits.maxConnectionsPerUID, let idle = oldestIdleConnection() {
            log.info("\(held) connections, the most one user may hold: closing \(idle.label), the oldest that "
                     + (idle.calls == 0 ? "has sent nothing" : "has not said Hello") + ", for a new one")
            close(idle)
        }
        // Past the cap, a connection is let in on the reserve, to say Hello as a person's `seam`.
        guard held < Limits.maxConnectionsPerUID + Limits.reservedConnections else {
            log.warning("refused pid \(peer.pid): uid \(peer.uid) already holds \(held) connections, each of them in use")
            let c = Connection(fd: fd, id: 0, peer: peer, now: clock.monotonic)
            c.enqueue(Reply(.permissionDenied("too many connections for this user (\(Limits.maxConnectionsPerUID))"), id: nil).frame())
            _ = try? c.flush()
            Descriptors.close(fd)
            return
        }
        let connection = register(fd, peer: peer)
        connection.handshakeTimer = loop.after(handshakeTimeout) { [unowned self] in
            if connection.calls == 0, !connection.closed {
                self.log.info("\(connection.label) sent nothing for \(self.handshakeTimeout) s; closing it", .init(connection: connection.label))
                self.close(connection)
            }
        }
        log.debug("\(connection.label) connected", .init(connection: connection.label))
    }

    /// Connections of clients that connected by themselves (not the roles seamd started).
    var clientConnections: Int { byDescriptor.values.lazy.filter { $0.supervisedAs == nil }.count }

    /// The connection to close for a new one when the cap is reached: the oldest that has sent
    /// nothing, else the oldest that has not said Hello; nil when every one is in use.
    func oldestIdleConnection(sparing spared: Connection? = nil) -> Connection? {
        var silent: Connection?
        var anonymous: Connection?
        for c in byDescriptor.values where c.supervisedAs == nil && c !== spared && !c.closed {
            // A whole call read and not yet handled (its Hello, say, behind a busy turn) is not
            // silence: the client spoke (the isolation bench's good client was closed so, once).
            if c.decoder.hasCompleteFrame() { continue }
            if c.calls == 0 {
                if silent.map({ c.id < $0.id }) ?? true { silent = c }
            } else if c.hello == nil, !c.awaitingRead {
                if anonymous.map({ c.id < $0.id }) ?? true { anonymous = c }
            }
        }
        return silent ?? anonymous
    }

    /// A new connection on `fd`, watched by the loop.
    func register(_ fd: Int32, peer: PeerCredentials) -> Connection {
        nextID += 1
        let connection = Connection(fd: fd, id: nextID, peer: peer, now: clock.monotonic)
        byDescriptor[fd] = connection
        do {
            try loop.watch(fd, .read) { [unowned self] events in self.handle(connection, events) }
        } catch {
            log.error("cannot watch \(connection.label): \(error)")
            close(connection)
        }
        return connection
    }

    private func handle(_ c: Connection, _ events: EventLoop.Events) {
        if c.readClosed {
            // Only room to write and the peer's full close are watched now.
            if events.peerGone { return hungUp(c) }
            if events.writable { flush(c) }
            return
        }
        if events.writable { flush(c) }
        if events.readable || events.hangup { read(c) }
    }

    /// Reads once per readiness event: level-triggered epoll reports the socket again if more
    /// is waiting, so a second read that would only say "nothing yet" is saved. True when it
    /// read something (more may be waiting).
    @discardableResult
    func read(_ c: Connection) -> Bool {
        guard !c.closed else { return false }
        let result: UnixSocket.ReadResult
        do { result = try UnixSocket.read(c.fd, into: scratch) } catch {
            log.debug("\(c.label): \(error)", .init(connection: c.label))
            close(c)
            return false
        }
        switch result {
        case .closed:
            readEnded(c)
            return false
        case .wouldBlock:
            return false
        case .bytes(let n):
            c.decoder.append(UnsafeRawBufferPointer(rebasing: scratch[0..<n]))
            if c.callsPaused, c.decoder.pendingBytes > outboxLimits.maxWaitingCallBytes {
                log.warning("\(c.label) sends calls without reading the replies (\(c.pendingOutput) bytes queued, "
                            + "\(c.decoder.pendingBytes) bytes of calls waiting); closing it")
                close(c)
                return false
            }
            host?.schedule(c)
            return true
        }
    }

    func send(_ reply: Reply, to c: Connection) { send(frame: reply.frame(), to: c) }

    /// Sends a reply frame; an empty one means the call is answered later (see `Finished`).
    func send(frame: [UInt8], to c: Connection) {
        guard !frame.isEmpty, !c.discardsOutput else { return }
        if host?.mustHoldOutput == true {  // group commit: nothing leaves before the saves are committed and on the disk
            if queue(frame: frame, to: c) { host?.holdForSync(c) }
            return
        }
        // The common case — nothing queued before it — writes the reply straight from its own
        // bytes; what the socket does not take is queued as it is.
        if c.pendingOutput == 0, !c.closed {
            let written: Int
            do { written = try UnixSocket.write(c.fd, frame, from: 0, atMost: Outbox.writeSliceBytes) } catch {
                writeFailed(c, error)
                return
            }
            if written == frame.count { return }
            c.enqueue(frame, written: written)  // the rest, without copying it
            flush(c)
            return
        }
        if queue(frame: frame, to: c) { flush(c) }
    }

    /// Queues a frame without writing it yet (the caller flushes); false when the connection is
    /// closed, or has just been closed for reading too slowly.
    @discardableResult
    func queue(frame: [UInt8], to c: Connection) -> Bool {
        guard !c.closed, !c.discardsOutput else { return false }
        let before = c.pendingOutput
        c.enqueue(frame)
        // One frame is never too much on its own (a result or a diff may be large: clients accept
        // frames up to `Limits.maxReplyFrameBytes`), nor on top of the little a connection may
        // leave unread before its calls and diffs wait (`pauseCallsBytes`); frames left unread
        // beyond that are, once they pass the limit.
        if before > outboxLimits.pauseCallsBytes, c.pendingOutput > outboxLimits.maxOutboxBytes {
            log.warning("\(c.label) reads too slowly (\(c.pendingOutput) bytes queued); closing it", .init(connection: c.label))
            closedForSlowReading += 1
            close(c)
            return false
        }
        return true
    }

    /// Writes what the socket takes. Once the client has read everything queued, the calls it
    /// sent meanwhile (paused, `Limits.pauseCallsBytes`) are handled, and then the resyncs its
    /// connection is owed follow, a batch at a time (`queueResyncs`), from this loop.
    func flush(_ c: Connection) {
        if let host, host.mustHoldOutput { return host.holdForSync(c) }
        guard !c.closed, !c.discardsOutput else { return }
        let drained: Bool
        do { drained = try c.flush() } catch {
            writeFailed(c, error)
            return
        }
        perform(c.life.handle(.written(drained: drained)), for: c)
    }

    /// Does what a connection's lifecycle says.
    func perform(_ actions: ConnectionLifecycle.Actions, for c: Connection) {
        guard !actions.isEmpty else { return }
        if actions.contains(.dropOutbox) { c.outbox = Outbox() }
        if actions.contains(.watch) { watch(c) }
        if actions.contains(.handleCalls) { host?.processFrames(c, budget: .max, until: .infinity) }
        if actions.contains(.resumeCallsNextTurn) { resumeCalls(c) }
        // All read: the resyncs still owed (the calls that waited went first).
        if actions.contains(.afterDrain) { if c.owesResync { host?.startResync(c) } else { closeIfFinished(c) } }
        if actions.contains(.closeIfFinished) { closeIfFinished(c) }
        if actions.contains(.closeUnlessCallOut) { closeUnlessCallOut(c) }
    }

    /// Handles the calls that waited on `c` (`Limits.pauseCallsBytes`), then flushes: from the
    /// loop's next turn, never from inside whatever flushed it (a commit's diffs, a migration's
    /// resyncs), so that one connection's calls never run in the middle of another's. (An
    /// Unsubscribe among them spares its subscription the resync it was owed.)
    private func resumeCalls(_ c: Connection) {
        _ = loop.after(0) { [weak self, weak c] in
            guard let self, let c, !c.closed else { return }
            // A turn's worth now, the rest in turns (`schedule`); a half-closed connection with
            // calls still in its decoder is not closed meanwhile (`closeIfFinished`).
            self.host?.processFrames(c, budget: self.callsPerTurn, until: .infinity)
            self.host?.schedule(c)
            self.perform(c.life.handle(.resumed), for: c)
            self.flush(c)
            if c.discardsOutput { self.closeIfFinished(c) }  // flush writes nothing then
        }
    }

    /// Tells epoll what `c` waits for (`ConnectionLifecycle.interest`): calls until its client
    /// closed its writing half, and room to write while anything is queued; nothing once its
    /// end is no longer watched.
    private func watch(_ c: Connection) {
        guard !c.closed else { return }
        let interest = c.life.interest
        switch c.life.input {
        case .open: loop.change(c.fd, interest.write ? [.read, .write] : .read)
        case .ended: loop.change(c.fd, interest.write ? .write : [], halfClose: false)
        case .unwatched: loop.forget(c.fd)
        }
    }

    /// The client closed its writing half (or the whole connection): every call it sent is
    /// read. A client may close only that half and go on reading (as `socat` and shell
    /// pipelines do), so the connection stays while there is something for it: replies
    /// queued, calls that wait for it to read them, subscriptions. It closes once there is
    /// none (`closeIfFinished`), or when the client closes entirely (`hungUp`).
    private func readEnded(_ c: Connection) {
        log.debug("\(c.label) closed its end", .init(connection: c.label))
        perform(c.life.handle(.inputEnded), for: c)
    }

    /// Closes a connection whose client closed its writing half once nothing is left for it:
    /// every call it sent handled, and (while anyone reads) no reply queued or owed, no
    /// subscription. Calls that wait or are being handled keep it, whoever reads.
    func closeIfFinished(_ c: Connection) {
        if c.life.isFinished(c.remaining) { close(c) }
    }

    /// The client of a connection that closed its writing half is gone altogether: the calls
    /// that waited for it to read are still handled (one-way saves among them), their replies
    /// dropped, and the connection closed.
    private func hungUp(_ c: Connection) {
        log.debug("\(c.label) disconnected", .init(connection: c.label))
        perform(c.life.handle(.hungUp), for: c)
    }

    /// Closes a connection nobody reads, unless a call of it waits — for a reader, or parked for
    /// the stores' checks: it is handled then (with the calls after it), and the connection
    /// closed (`resumeAfterRead`, `collectChecks`). Its end is not watched meanwhile (it would
    /// be reported on every turn).
    func closeUnlessCallOut(_ c: Connection) {
        if c.hasCallOut { perform(c.life.handle(.callOutAsItGoes), for: c) } else { close(c) }
    }

    /// A write to `c` failed. When its peer has gone (it closed its end), the calls it sent
    /// before it went are still in the socket: they are read and handled to the end (its
    /// end of file, or now when that was read already), which then closes the connection, and
    /// their replies dropped. A client that sends and exits (one-way
    /// saves, say) loses nothing. Any other failure closes the connection. Calls that waited
    /// for their client to read are handled (their replies dropped): they may be all it sent.
    func writeFailed(_ c: Connection, _ error: SystemError) {
        log.debug("\(c.label): \(error)", .init(connection: c.label))
        guard error.errno == SystemError.brokenPipe || error.errno == SystemError.connectionReset else { return close(c) }
        perform(c.life.handle(.peerGone), for: c)
    }

    func close(_ c: Connection) {
        guard !c.closed else { return }
        _ = c.life.handle(.closed)
        if let t = c.handshakeTimer { loop.cancel(t) }
        loop.forget(c.fd)
        Descriptors.close(c.fd)
        byDescriptor[c.fd] = nil
        host?.connectionClosed(c)
    }
}

extension ConnectionTable {
    /// As `Status` shows the plugins connected now: each with what it may read and write
    /// (null: every entity).
    func pluginsStatus() -> JSON {
        let plugins = values.filter { $0.hello?.role == "plugin" }.sorted { $0.id < $1.id }
        return .array(plugins.map { c in
            var o: JSONObject = ["name": .string(c.hello?.name ?? ""), "author": .string(c.hello?.author ?? ""),
                                 "pid": .integer(Int64(c.peer.pid)), "supervised": .bool(c.supervisedAs != nil),
                                 "declared": .bool(c.hello?.declared ?? false)]
            for (k, v) in (c.hello?.capabilities ?? .everything).json { o[k] = v }
            return .object(o)
        })
    }
}
