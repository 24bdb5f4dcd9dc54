import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamStore
import SeamSystem

/// The daemon's core: it owns the context over both stores, accepts clients on a Unix socket,
/// and answers their varlink calls — one thread, one event loop, no locks.
public final class Broker {
    /// How seamd runs (`BrokerConfiguration`).
    public typealias Configuration = BrokerConfiguration

    public let configuration: Configuration
    let log: Logger
    let context: Context
    let loop: EventLoop
    let lock: FileLock
    let listener: Int32
    let ownsSocketFile: Bool
    let startedAt: Double
    /// What seamd counts of itself (`org.seam.Metrics.Get`).
    let metrics: BrokerMetrics
    /// `Status`, `org.seam.Metrics.Get`, and what is wrong while the broker rests (`BrokerReport`).
    let report: BrokerReport
    /// Every client and role connection, and their reading and writing (`ConnectionTable`).
    let connections: ConnectionTable
    let subscriptions = Subscriptions()
    /// `Subscribe`, `Unsubscribe`, each commit's diffs fanned out, results built off the loop (`Subscribers`).
    let subscribers: Subscribers
    /// The role processes seamd starts and keeps running (`Broker+Hosts`).
    let supervisor: Supervisor
    /// The migration running now, and how the last one ended (`MigrationCoordinator`).
    let migrations: MigrationCoordinator
    /// Stores that did not open again after a migration or a restore, tried again with backoff.
    let reopener: StoreReopener
    /// `org.seam.Sync`: the sync worker's side of the broker (`SyncBridge`).
    let sync: SyncBridge
    /// Rows by uuid as the wire encodes them; exact, because every save evicts what it touched.
    let rowCache = RowCache()
    /// `Fetch` by uuid, from the row cache (`UUIDFetch`).
    let uuidFetch: UUIDFetch
    /// Every save's way, and group commit (`SavePath`).
    let saves: SavePath
    var stopping = false
    /// The backup, check or restore running (`org.seam.Maintenance`).
    let maintenance: MaintenanceRunner
    /// The threads that run reads off the loop.
    let readers: ReaderPool
    /// What the readers and the committer hand back, each to what asked for it.
    let offLoop = OffLoopResults()
    /// Reads run on the readers, answered on the loop (`ReadsOffLoop`).
    let reads: ReadsOffLoop
    /// Which connection's calls are handled next (`TurnScheduler`).
    let turns: TurnScheduler
    /// Each call, from its frame to its reply (`CallHandler`).
    let calls: CallHandler
    /// Calls that may write, held while a store's check at open runs or a store holds its writes.
    let writeGate: WriteGate
    /// The big save written in steps, while one is (`SteppedSaves`).
    let steps: SteppedSaves
    /// Damaged, vanished, replaced store files, and the stores' checks at open (`StoreFileWatch`).
    let storeWatch: StoreFileWatch
    public private(set) var exitStatus: Int32 = 0

    /// Takes the store directory's lock, opens (creating or migrating) the stores, and listens.
    public init(configuration: Configuration, schema: Schema, log: Logger) throws(BrokerError) {
        self.configuration = configuration
        self.log = log
        startedAt = configuration.clock.monotonic
        metrics = BrokerMetrics(enabled: configuration.countsMetrics)
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
        let options = configuration.contextOptions
        let opened: Context
        do { opened = try Context(directory: configuration.dataDirectory, schema: schema, options: options) } catch {
            throw BrokerError("cannot open the stores: \(error)")
        }
        // And while a store that synced before may sync again (see `reloadSync`).
        if !options.syncConfigured, SyncBridge.hasSyncedBefore(opened) { opened.syncConfigured = true }
        context = opened
        uuidFetch = UUIDFetch(context: opened, rowCache: rowCache)
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
        steps = SteppedSaves(context: opened, loop: loop, offLoop: offLoop)
        writeGate = WriteGate(context: opened, interfaces: configuration.interfaces)
        connections = ConnectionTable(loop: loop, log: log, handshakeTimeout: configuration.handshakeTimeout, limits: configuration.limits)
        reopener = StoreReopener(context: opened, loop: loop, log: log)
        subscribers = Subscribers(subscriptions: subscriptions, context: opened, connections: connections, log: log,
                                  predicateCost: configuration.limits.predicateCost, metrics: metrics)
        supervisor = Supervisor(loop: loop, log: log, socketPath: configuration.socketPath)
        migrations = MigrationCoordinator(context: opened, loop: loop, log: log, supervisor: supervisor,
                                          dataDirectory: configuration.dataDirectory, migrator: configuration.supervision.migrator)
        sync = SyncBridge(context: opened, supervisor: supervisor, configurationPath: configuration.syncConfigurationPath)
        saves = SavePath(context: opened, connections: connections, subscribers: subscribers, steps: steps, sync: sync, log: log,
                         rowCache: rowCache, pluginSaveOperations: configuration.limits.pluginSaveOperations,
                         metrics: metrics)
        maintenance = MaintenanceRunner(context: opened, loop: loop, log: log, migrations: migrations,
                                        dataDirectory: configuration.dataDirectory)
        storeWatch = StoreFileWatch(context: opened, loop: loop, log: log, writeGate: writeGate, migrations: migrations)
        report = BrokerReport(configuration: configuration, context: opened, loop: loop, startedAt: startedAt, metrics: metrics,
                              connections: connections, subscriptions: subscriptions, supervisor: supervisor, migrations: migrations,
                              sync: sync, maintenance: maintenance, readers: readers, steps: steps)
        turns = TurnScheduler(loop: loop, connections: connections, steps: steps, saves: saves, callsPerTurn: configuration.limits.callsPerTurn)
        reads = ReadsOffLoop(context: opened, connections: connections, readers: readers, offLoop: offLoop, steps: steps, metrics: metrics,
                             turns: turns, predicateCost: configuration.limits.predicateCost)
        calls = CallHandler(configuration: configuration, context: opened, log: log, loop: loop, metrics: metrics, connections: connections,
                            subscribers: subscribers, saves: saves, steps: steps, uuidFetch: uuidFetch,
                            writeGate: writeGate, reads: reads, turns: turns, storeWatch: storeWatch, report: report, migrations: migrations,
                            sync: sync, maintenance: maintenance)
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
        storeWatch.isStopping = { [unowned self] in stopping }
        storeWatch.start()
        turns.process = { [unowned calls] c, budget, deadline in calls.processFrames(c, budget: budget, until: deadline) }
        reads.processFrames = { [unowned calls] c in calls.processFrames(c) }
        turns.start()
        do { offLoop.waker = try loop.waker { [unowned reads] in reads.takeReadOutcomes() } } catch {
            throw BrokerError("cannot watch the reader threads: \(error)")
        }
        // A store's checkpointer says, from its thread, when the writes it held may go on.
        do {
            let waker = try loop.waker { [unowned self] in writeGate.resumeHeldWrites() }
            context.whenWritesResume = { waker.wake() }
        } catch {
            throw BrokerError("cannot watch the checkpoint threads: \(error)")
        }
        // A store that closes (a migration, a restore, damage) is let go of by every reader first.
        let readers = self.readers
        context.willCloseStore = { _, path, attachment in readers.release(path, attachment: attachment) }
        connections.host = self
        subscribers.host = reads
        saves.host = turns
        reopener.isStopping = { [unowned self] in stopping }
        reopener.isLeftClosed = { [unowned self] in migrations.isMigrating($0) || storeDirectory.unfinishedSwap.contains($0) }
        reopener.reopened = { [unowned self] in resumeChannels(in: $0) }
        writeGate.host = calls
        steps.host = calls
        supervisor.host = self
        migrations.host = self
        maintenance.host = self
        sync.sink = self
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
        connections.admit(ours)
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
            connections.admit(fd)
        }
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
            for s in c.subscriptions.values where s.callID != nil { connections.queue(frame: Reply(.shuttingDown, id: s.callID).frame(), to: c) }
            // Their calls are ended: the saves that roles still send while they stop (drained
            // below) must not reach them as diffs after it. A subscriber resumes elsewhere.
            for s in Array(c.subscriptions.values) { subscriptions.remove(s) }
            connections.queue(frame: Reply(.shuttingDown, id: nil).frame(), to: c)
        }
        // Half a second, all told, for clients to take what is queued: one that does not read
        // must not hold the shutdown up.
        let deadline = WallClock.monotonic() + configuration.shutdownGrace
        context.syncCommits()  // what is held for it goes too
        saves.dropHeld()
        var waiting = Array(connections.values)
        while true {
            waiting = waiting.filter { c in !c.closed && ((try? c.flush()) ?? true) == false }
            let left = deadline - WallClock.monotonic()
            if waiting.isEmpty || left <= 0 { break }
            UnixSocket.waitWritable(waiting.map(\.fd), timeoutMilliseconds: Int32(max(1, left * 1000)))
        }
        supervisor.stopAll(grace: 2)
        readers.stop()
        for c in Array(connections.values) { connections.close(c) }
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

/// How seamd runs: its stores, its socket, its durability, its roles and limits, its clock.
public struct BrokerConfiguration: Sendable {
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
    /// Whether seamd counts its calls for `org.seam.Metrics.Get` (on by default; `SEAM_METRICS=0`
    /// turns it off, for the benchmark that measures what counting costs a save).
    public var countsMetrics = true
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

extension BrokerConfiguration {
    /// The context's options for a broker so configured.
    var contextOptions: Context.Options {
        var options = Context.Options()
        options.durability = durability
        // Outdated stores are served as they are until the worker has migrated them; a newer
        // or unreadable store stays closed while the other serves.
        options.servesOutdated = true
        // History is kept until the sync worker has exported it, however old.
        options.syncConfigured = supervision.roles.contains { $0.role == "sync" }
        options.historyIgnoresAuthors = ["sync"]
        // Synced, a save's diffs are worked out while the disk takes its commit (`publish`), and
        // the saves of one round of the loop are synced together (`SavePath`).
        options.defersSync = true
        // Each store is checked as it opens, off this thread; writes wait for the check.
        options.checksAtOpen = true
        options.verifiesFilesBeforeWrites = verifiesFiles
        options.checkpointFrames = limits.checkpointFrames
        return options
    }
}
