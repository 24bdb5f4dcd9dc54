import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamStore
import SeamSystem

/// The daemon's core: it owns the context over both stores, accepts clients on a Unix socket,
/// and answers their varlink calls — one thread, one event loop, no locks.
public final class Broker {
    public struct Configuration: Sendable {
        public var dataDirectory: String
        public var socketPath: String
        public var durability: Durability = .normal
        /// A listening socket handed over by systemd (`LISTEN_FDS`), used instead of binding.
        public var listenDescriptor: Int32?
        /// Seconds the event loop keeps polling after a turn with work before it sleeps
        /// (`EventLoop.spinSeconds`): a request that follows closely is read without waiting for
        /// an idle CPU to wake. 0 sleeps at once.
        public var spinSeconds: Double = 0.000_2
        /// Seconds a new connection has to send its first call before it is closed.
        public var handshakeTimeout: Double = Limits.handshakeTimeout
        /// Seconds, all told, that clients have at shutdown to read what is queued for them.
        public var shutdownGrace = 0.5
        /// Whether each save first checks that the store files are still at their paths (on by
        /// default; `SEAM_FILE_CHECKS=0` turns it off, for the benchmark that measures its cost).
        public var verifiesFiles = true
        /// Interfaces the application adds beside org.seam.Store.
        public var interfaces: [ServiceInterface] = []
        /// The processes to start and keep running (none unless the caller says).
        public var supervision = SupervisorConfiguration(roles: [], problems: [])
        /// Where `seam sync setup` writes the sync configuration (nil: sync is never started).
        public var syncConfigurationPath: String?
        /// Where time comes from for the loop's timers, the timer service, role backoff and what
        /// `Status` reports (what a piece of work costs is measured on the system's clock).
        public var clock: any Clock = SystemClock()
        /// What one client's call may cost (`seamd.json`'s `limits`).
        public var limits: BrokerLimits { supervision.limits }
        public init(dataDirectory: String, socketPath: String) {
            self.dataDirectory = dataDirectory
            self.socketPath = socketPath
        }
    }

    public let configuration: Configuration
    let log: Logger
    let context: Context
    let loop: EventLoop
    let lock: FileLock
    let listener: Int32
    let ownsSocketFile: Bool
    let startedAt: Double
    var connections: [Int32: Connection] = [:]
    let subscriptions = Subscriptions()
    var nextConnectionID = 0
    /// The role processes seamd starts and keeps running (`Broker+Roles`).
    let supervisor: Supervisor
    /// The migration running now, and how the last one ended (`MigrationCoordinator`).
    let migrations: MigrationCoordinator
    /// Stores that did not open again after a migration, tried again with backoff.
    var reopening: [String: StoreReopening] = [:]
    /// The sync worker's `Listen` calls, and its last `Report`.
    var syncListeners: [(connection: Connection, callID: JSON?)] = []
    var syncReport: JSONObject?
    /// Rows by uuid as the wire encodes them; exact, because every save evicts what it touched.
    var rowCache = RowCache()
    var stopping = false
    /// The backup, check or restore running (`org.seam.Maintenance`).
    let maintenance: MaintenanceRunner
    /// The threads that run reads off the loop, and what they hand back (`Broker+Reads`).
    let readers: ReaderPool
    /// What the readers and the committer hand back, each to what asked for it.
    let offLoop = OffLoopResults()
    /// Connections with calls read and not yet handled, in turn order (`Broker+Turns`).
    var runnable = TurnQueue()
    /// Connections whose next call writes, held while a store's check at open runs (`parked`).
    var parkedForChecks: [Connection] = []
    /// Connections whose next call waits for a store that holds its writes (`Broker+HeldWrites`).
    var parkedForHeldWrites: [(connection: Connection, writes: Set<String>?)] = []
    /// The big save being written in steps, while one is (`Broker+Steps`).
    var stepping: Stepping?
    /// When the save in steps may take its next turn (it rests while others are busy); when a
    /// connection other than the last to save in steps last had a turn or a read answered; and
    /// that connection.
    var stepsResumeAt = 0.0
    /// Whether the save in steps' commit runs on its thread now (`Broker+Steps`), and the
    /// subscribers' results that wait for it (`takeReadOutcomes`).
    var stepCommitting = false
    let committer = WorkerThread()
    var othersActiveAt = 0.0
    weak var lastStepper: Connection?
    /// Wakes the loop when a store's check at open has finished.
    var checksWaker: EventLoop.Waker?
    /// Connections with replies or diffs held until the saves of this round are on the disk
    /// (full durability's group commit, `Broker+GroupCommit`).
    var heldForSync: [ObjectIdentifier: Connection] = [:]
    /// Each entity's attribute types by name (`attributeTypes`).
    var attributeTypesByEntity: [String: [String: AttributeType]] = [:]
    /// The connection whose turn it is, and whether it is the round's last (`runTurns`).
    var turn: (connection: Connection, last: Bool)?
    /// Where every read lands before its bytes join a connection's frame decoder (one thread: one buffer).
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
    public private(set) var exitStatus: Int32 = 0

    /// Takes the store directory's lock, opens (creating or migrating) the stores, and listens.
    public init(configuration: Configuration, schema: Schema, log: Logger) throws(BrokerError) {
        self.configuration = configuration
        self.log = log
        startedAt = configuration.clock.monotonic
        Signals.ignoreBrokenPipes()
        Signals.watchChildren()
        do { try FileSystem.makeDirectory(configuration.dataDirectory, mode: 0o700) } catch {
            throw BrokerError("cannot create the store directory \(configuration.dataDirectory): \(error.message)")
        }
        let lockPath = FileSystem.join(configuration.dataDirectory, "seamd.lock")
        do { lock = try FileLock(path: lockPath) } catch where error.errno == SystemError.wouldBlock {
            throw BrokerError("another seamd already serves \(configuration.dataDirectory) (\(lockPath) is locked); "
                              + "stop it first, or give this one another --data-dir")
        } catch {
            throw BrokerError("cannot lock \(lockPath): \(error)")
        }
        var options = Context.Options()
        options.durability = configuration.durability
        // Outdated stores are served as they are until the worker has migrated them; a newer
        // or unreadable store stays closed while the other serves.
        options.servesOutdated = true
        // History is kept until the sync worker has exported it, however old.
        options.syncConfigured = configuration.supervision.roles.contains { $0.role == "sync" }
        options.historyIgnoresAuthors = ["sync"]
        // Synced, a save's diffs are worked out while the disk takes its commit (`publish`), and
        // the saves of one round of the loop are synced together (`Broker+GroupCommit`).
        options.defersSync = true
        // Each store is checked as it opens, off this thread; writes wait for the check.
        options.checksAtOpen = true
        options.verifiesFilesBeforeWrites = configuration.verifiesFiles
        options.checkpointFrames = configuration.limits.checkpointFrames
        let opened: Context
        do { opened = try Context(directory: configuration.dataDirectory, schema: schema, options: options) } catch {
            throw BrokerError("cannot open the stores: \(error)")
        }
        // And while a store that synced before may sync again (see `reloadSync`).
        if !options.syncConfigured, Self.hasSyncedBefore(opened) { opened.syncConfigured = true }
        context = opened
        // Said before the socket listens: a client that connects finds them in the log.
        for done in opened.recovered { log.info("recovered: \(done)") }
        for (name, note) in opened.olderThanTold.sorted(by: { $0.key < $1.key }) { log.warning("\(name) store: \(note)") }
        for (name, why) in opened.readOnly.sorted(by: { $0.key < $1.key }) { log.warning("\(name) store can only be read (\(why)); saves into it are refused") }
        do { loop = try EventLoop(clock: configuration.clock) } catch { throw BrokerError("cannot start the event loop: \(error)") }
        do { readers = try ReaderPool(threads: configuration.limits.readers, heavyThreads: max(1, configuration.limits.readers / 2),
                                     budget: configuration.limits.querySeconds) } catch {
            throw BrokerError("cannot start the reader threads: \(error)")
        }
        loop.spinSeconds = configuration.spinSeconds
        supervisor = Supervisor(loop: loop, log: log, socketPath: configuration.socketPath)
        migrations = MigrationCoordinator(context: opened, loop: loop, log: log, supervisor: supervisor,
                                          dataDirectory: configuration.dataDirectory, migrator: configuration.supervision.migrator)
        maintenance = MaintenanceRunner(context: opened, loop: loop, log: log, migrations: migrations,
                                        dataDirectory: configuration.dataDirectory)
        if let fd = configuration.listenDescriptor {
            listener = fd
            ownsSocketFile = false
            UnixSocket.setNonBlocking(fd, true)
        } else {
            do { listener = try UnixSocket.listen(path: configuration.socketPath) } catch {
                if error.errno == SystemError.addressInUse {
                    throw BrokerError("another seamd answers on \(configuration.socketPath); stop it first, or give this one "
                                      + "another --socket")
                }
                throw BrokerError("cannot listen on \(configuration.socketPath): \(error.message)")
            }
            ownsSocketFile = true
        }
    }

    deinit { scratch.deallocate() }

    /// The broker's clock (`Configuration.clock`).
    var clock: any Clock { loop.clock }

    /// What a connection may leave unread (`Limits`, unless a test made them smaller).
    var outboxLimits: BrokerLimits.OutboxLimits { configuration.limits.outbox }

    /// Serves until SIGTERM, SIGINT or SIGHUP (the terminal it runs in closed), then shuts
    /// down cleanly: roles stopped, socket removed.
    public func run() throws(BrokerError) {
        do {
            try loop.onSignals([Signals.terminate, Signals.interrupt, Signals.hangup, Signals.child]) { [unowned self] signo in
                if signo == Signals.child { return self.supervisor.reap() }
                self.log.info("signal \(signo): shutting down")
                self.shutdown()
            }
        } catch {
            throw BrokerError("cannot watch for signals: \(error)")
        }
        try start()
        // The loop answers everyone: let in promptly when a call or a reader's reply wakes it.
        Threads.requestShortSlices()
        loop.run()
    }

    /// Everything `run` does but taking the process's signals and turning the loop: listens,
    /// starts the roles and the migration at start, and returns. A caller that turns the loop
    /// itself (`turn`) serves clients from its own thread: a test's broker in its own process.
    public func start() throws(BrokerError) {
        do { try loop.watch(listener, .read) { [unowned self] _ in self.acceptAll() } } catch {
            throw BrokerError("cannot watch the socket: \(error)")
        }
        log.info("serving \(configuration.dataDirectory) on \(ownsSocketFile ? configuration.socketPath : "fd \(listener)") "
                 + "(stores \(context.storeNames.joined(separator: ", ")), sequence \(context.sequence))")
        // A store half swapped by a migration waits for a person to fix what stops the swap.
        let unfinishedSwap = storeDirectory.unfinishedSwap
        for (name, why) in context.closedStores.sorted(by: { $0.key < $1.key }) {
            if unfinishedSwap.contains(name) { log.error("\(name) store closed: \(why)") } else { log.warning("\(name) store closed: \(why)") }
        }
        // Between requests, the writer finishes what a checkpoint left, so the WAL starts over.
        loop.whenIdle({ [unowned self] in self.context.upkeepDue }, { [unowned self] in self.context.upkeep() })
        watchStoreFiles()
        takeTurns()
        do { offLoop.waker = try loop.waker { [unowned self] in takeReadOutcomes() } } catch {
            throw BrokerError("cannot watch the reader threads: \(error)")
        }
        // A store's checkpointer says, from its thread, when the writes it held may go on.
        do {
            let waker = try loop.waker { [unowned self] in resumeHeldWrites() }
            context.whenWritesResume = { waker.wake() }
        } catch {
            throw BrokerError("cannot watch the checkpoint threads: \(error)")
        }
        // A store that closes (a migration, a restore, damage) is let go of by every reader first.
        let readers = self.readers
        context.willCloseStore = { _, path, attachment in readers.release(path, attachment: attachment) }
        supervisor.host = self
        migrations.host = self
        maintenance.host = self
        supervisor.startAll(configuration.supervision)
        pruneBackups()
        if configuration.supervision.migratesAtStart { migrations.startAtStart() }
    }

    /// One turn of the loop (after `start`): whatever is ready is handled, waiting at most
    /// `maxWait` seconds for something to be (nil: until the next timer is due).
    public func turn(maxWait: Double? = nil) { loop.turn(maxWait: maxWait) }

    /// A client connected over a socket pair instead of the listening socket: the broker serves
    /// one end as it would an accepted connection (same checks, same limits); the caller gets
    /// the other, and the connection's number (0 if it was refused). For a client in the
    /// broker's own process, turning the loop itself. `sendBufferBytes` makes the kernel buffer
    /// less of what the broker sends it, so that its outbox fills sooner.
    public func connectPair(sendBufferBytes: Int? = nil) throws(BrokerError) -> (fd: Int32, connection: Int) {
        let (ours, theirs): (Int32, Int32)
        do { (ours, theirs) = try UnixSocket.pair() } catch { throw BrokerError("cannot make a socket pair: \(error)") }
        UnixSocket.setNonBlocking(ours, true)
        if let sendBufferBytes { UnixSocket.setSendBuffer(ours, bytes: sendBufferBytes) }
        admit(ours)
        return (theirs, connections[ours]?.id ?? 0)
    }

    // MARK: - Connections

    private func acceptAll() {
        while !stopping {
            let fd: Int32
            do {
                guard let accepted = try UnixSocket.accept(listener) else { return }
                fd = accepted
            } catch {
                log.error("accept failed: \(error)")
                return
            }
            admit(fd)
        }
    }

    private func admit(_ fd: Int32) {
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
        connection.handshakeTimer = loop.after(configuration.handshakeTimeout) { [unowned self] in
            if connection.calls == 0, !connection.closed {
                self.log.info("\(connection.label) sent nothing for \(self.configuration.handshakeTimeout) s; closing it")
                self.close(connection)
            }
        }
        log.debug("\(connection.label) connected")
    }

    /// Connections of clients that connected by themselves (not the roles seamd started).
    var clientConnections: Int { connections.values.lazy.filter { $0.supervisedAs == nil }.count }

    /// The connection to close for a new one when the cap is reached: the oldest that has sent
    /// nothing, else the oldest that has not said Hello; nil when every one is in use.
    func oldestIdleConnection(sparing spared: Connection? = nil) -> Connection? {
        var silent: Connection?
        var anonymous: Connection?
        for c in connections.values where c.supervisedAs == nil && c !== spared && !c.closed {
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
        nextConnectionID += 1
        let connection = Connection(fd: fd, id: nextConnectionID, peer: peer, now: clock.monotonic)
        connections[fd] = connection
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
            log.debug("\(c.label): \(error)")
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
            schedule(c)
            return true
        }
    }

    /// Handles the calls read from `c`, at most `budget` of them and none begun after `deadline`
    /// (`Broker+Turns` gives each connection a few a turn, and a few milliseconds), until one
    /// waits for a reader, the outbox is full, or the stores' checks hold a write back.
    func processFrames(_ c: Connection, budget: Int = .max, until deadline: Double = .infinity) {
        var handled = 0
        while !c.closed, c.parked == nil, !c.awaitingRead, handled < budget, handled == 0 || WallClock.monotonic() < deadline {
            handled += 1
            // A client that has not read what is queued for it waits for its next reply: the
            // calls it pipelined are read (a client blocked writing them must not wait on us)
            // but kept unhandled until `flush` has written everything queued.
            if c.pendingOutput > outboxLimits.pauseCallsBytes, !c.discardsOutput {
                perform(c.life.handle(.outboxPastPause), for: c)
                return
            }
            let frame: ArraySlice<UInt8>
            do {
                guard let f = try c.decoder.next() else { return }
                frame = f
            } catch {
                log.info("\(c.label): \(error); closing it")
                send(Reply(.invalidRequest("\(error); closing the connection"), id: nil), to: c)
                flush(c)
                close(c)
                return
            }
            c.calls += 1
            if let t = c.handshakeTimer {
                loop.cancel(t)
                c.handshakeTimer = nil
            }
            // A call that may write waits, with every call after it, while a store is being
            // checked at open (`collectChecks` handles them once the checks end).
            if mustWaitForChecks(frame) {
                c.parked = frame
                parkedForChecks.append(c)
                return
            }
            // A call that may write into a store holding its writes waits for it, likewise.
            if parkIfHeld(c, frame) { return }
            handleFrame(frame, from: c)
        }
    }

    /// Answers one call (a big frame that may be a save is read on a reader first, `readOffLoop`).
    func handleFrame(_ frame: ArraySlice<UInt8>, from c: Connection, readOffLoop: Bool = true) {
        if readOffLoop, frame.count >= Self.offLoopFrameBytes, c.hello != nil {
            return readBigSaveOffLoop(frame, from: c)
        }
        // The hottest calls, read straight from their bytes; anything they do not recognise
        // (errors included) takes the general path below.
        if let q = QuickFetch(frame) {
            send(frame: quickFetch(q, from: c), to: c)
            return
        }
        if let q = QuickSave(frame), let reply = quickSave(q, from: c) {
            send(frame: reply, to: c)
            return
        }
        let json: JSON
        do { json = try JSON.decode(frame, limits: JSONLimits(maxDepth: Limits.maxJSONDepth)) } catch {
            send(Reply(.invalidRequest("the message is not valid JSON: \(error)"), id: nil), to: c)
            return
        }
        let call: Call
        do { call = try Call(json) } catch {
            send(Reply(error, id: json["id"].flatMap { $0.isNull ? nil : $0 }), to: c)
            return
        }
        let reply = dispatch(call, from: c)
        if !call.oneway {
            send(frame: reply, to: c)
        } else if c.pendingOutput > 0 {
            flush(c)  // what it queued for others (an Unsubscribe's end, a narrowing Hello's errors)
        }
        if context.hasNotices { reportStoreNotices() }
    }

    func send(_ reply: Reply, to c: Connection) { send(frame: reply.frame(), to: c) }

    /// Sends a reply frame; an empty one means the call is answered later (see `Finished`).
    func send(frame: [UInt8], to c: Connection) {
        guard !frame.isEmpty, !c.discardsOutput else { return }
        if mustHoldOutput {  // group commit: nothing leaves before the saves are committed and on the disk
            if queue(frame: frame, to: c) { holdForSync(c) }
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
            log.warning("\(c.label) reads too slowly (\(c.pendingOutput) bytes queued); closing it")
            close(c)
            return false
        }
        return true
    }

    /// Writes what the socket takes. Once the client has read everything queued, the calls it
    /// sent meanwhile (paused, `Limits.pauseCallsBytes`) are handled, and then the resyncs its
    /// connection is owed follow, a batch at a time (`queueResyncs`), from this loop.
    func flush(_ c: Connection) {
        if mustHoldOutput { return holdForSync(c) }
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
        if actions.contains(.handleCalls) { processFrames(c) }
        if actions.contains(.resumeCallsNextTurn) { resumeCalls(c) }
        // All read: the resyncs still owed (the calls that waited went first).
        if actions.contains(.afterDrain) { if c.owesResync { startResync(c) } else { closeIfFinished(c) } }
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
            self.processFrames(c, budget: self.configuration.limits.callsPerTurn)
            self.schedule(c)
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
        log.debug("\(c.label) closed its end")
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
        log.debug("\(c.label) disconnected")
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
        log.debug("\(c.label): \(error)")
        guard error.errno == SystemError.brokenPipe || error.errno == SystemError.connectionReset else { return close(c) }
        perform(c.life.handle(.peerGone), for: c)
    }

    func close(_ c: Connection) {
        guard !c.closed else { return }
        _ = c.life.handle(.closed)
        runnable.remove(Int(c.fd))
        if let t = c.handshakeTimer { loop.cancel(t) }
        loop.forget(c.fd)
        Descriptors.close(c.fd)
        connections[c.fd] = nil
        for s in Array(c.subscriptions.values) { subscriptions.remove(s) }
    }

    // MARK: - Shutdown

    /// Stops accepting, tells clients, flushes what it can, removes the socket file, stops the loop.
    /// Every call is answered before the next is read, so no save is in flight here.
    public func shutdown() {
        guard !stopping else { return }
        stopping = true
        loop.forget(listener)
        Descriptors.close(listener)
        if ownsSocketFile { try? FileSystem.remove(configuration.socketPath) }
        for c in connections.values {
            for s in c.subscriptions.values where s.callID != nil { queue(frame: Reply(.shuttingDown, id: s.callID).frame(), to: c) }
            // Their calls are ended: the saves that roles still send while they stop (drained
            // below) must not reach them as diffs after it. A subscriber resumes elsewhere.
            for s in Array(c.subscriptions.values) { subscriptions.remove(s) }
            queue(frame: Reply(.shuttingDown, id: nil).frame(), to: c)
        }
        // Half a second, all told, for clients to take what is queued: one that does not read
        // must not hold the shutdown up.
        let deadline = WallClock.monotonic() + configuration.shutdownGrace
        context.syncCommits()  // what is held for it goes too
        heldForSync.removeAll()
        var waiting = Array(connections.values)
        while true {
            waiting = waiting.filter { c in !c.closed && ((try? c.flush()) ?? true) == false }
            let left = deadline - WallClock.monotonic()
            if waiting.isEmpty || left <= 0 { break }
            UnixSocket.waitWritable(waiting.map(\.fd), timeoutMilliseconds: Int32(max(1, left * 1000)))
        }
        supervisor.stopAll(grace: 2)
        readers.stop()
        for c in Array(connections.values) { close(c) }
        // Every store on the disk, then the open marker removed: a clean close.
        context.finish()
        lock.release()
        log.info("stopped at save sequence \(context.sequence)")
        loop.stop()
    }
}

/// A broker that cannot start: the message says why and what to do.
public struct BrokerError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
