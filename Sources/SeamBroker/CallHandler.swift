import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamStore
import SeamSystem

/// A connection's calls, from the frames read to the replies queued: each routed by interface
/// and method, the hottest read straight from their bytes (`QuickFetch`, `QuickSave`), a big
/// frame that may be a save read on a reader first, a save in steps told to its caller when it
/// ends. Every error becomes a varlink error reply; nothing here throws.
final class CallHandler: WriteGateHost, SteppedSavesHost {
    static let fetchMethod = "org.seam.Store.Fetch"
    static let saveMethod = "org.seam.Store.Save"

    let configuration: BrokerConfiguration
    let context: Context
    let log: Logger
    let loop: EventLoop
    let metrics: BrokerMetrics
    let connections: ConnectionTable
    let subscribers: Subscribers
    let saves: SavePath
    let steps: SteppedSaves
    let uuidFetch: UUIDFetch
    let writeGate: WriteGate
    let reads: ReadsOffLoop
    let turns: TurnScheduler
    let storeWatch: StoreFileWatch
    let report: BrokerReport
    let migrations: MigrationCoordinator
    let sync: SyncBridge
    let maintenance: MaintenanceRunner

    init(configuration: BrokerConfiguration, context: Context, log: Logger, loop: EventLoop, metrics: BrokerMetrics,
         connections: ConnectionTable, subscribers: Subscribers, saves: SavePath, steps: SteppedSaves,
         uuidFetch: UUIDFetch, writeGate: WriteGate, reads: ReadsOffLoop, turns: TurnScheduler, storeWatch: StoreFileWatch,
         report: BrokerReport, migrations: MigrationCoordinator, sync: SyncBridge, maintenance: MaintenanceRunner) {
        self.configuration = configuration
        self.context = context
        self.log = log
        self.loop = loop
        self.metrics = metrics
        self.connections = connections
        self.subscribers = subscribers
        self.saves = saves
        self.steps = steps
        self.uuidFetch = uuidFetch
        self.writeGate = writeGate
        self.reads = reads
        self.turns = turns
        self.storeWatch = storeWatch
        self.report = report
        self.migrations = migrations
        self.sync = sync
        self.maintenance = maintenance
    }

    var clock: any Clock { loop.clock }

    /// What a connection may leave unread (`Limits`, unless a test made them smaller).
    var outboxLimits: BrokerLimits.OutboxLimits { connections.outboxLimits }

    // MARK: - Frames

    /// Handles the calls read from `c`, at most `budget` of them and none begun after `deadline`
    /// (`TurnScheduler` gives each connection a few a turn, and a few milliseconds), until one
    /// waits for a reader, the outbox is full, or the stores' checks hold a write back.
    func processFrames(_ c: Connection, budget: Int = .max, until deadline: Double = .infinity) {
        var handled = 0
        while !c.closed, c.parked == nil, !c.awaitingRead, handled < budget, handled == 0 || WallClock.monotonic() < deadline {
            handled += 1
            // A client that has not read what is queued for it waits for its next reply: the
            // calls it pipelined are read (a client blocked writing them must not wait on us)
            // but kept unhandled until `flush` has written everything queued.
            if c.pendingOutput > outboxLimits.pauseCallsBytes, !c.discardsOutput {
                connections.perform(c.life.handle(.outboxPastPause), for: c)
                return
            }
            let frame: ArraySlice<UInt8>
            do {
                guard let f = try c.decoder.next() else { return }
                frame = f
            } catch {
                log.info("\(c.label): \(error); closing it", .init(connection: c.label))
                connections.send(Reply(.invalidRequest("\(error); closing the connection"), id: nil), to: c)
                connections.flush(c)
                connections.close(c)
                return
            }
            c.calls += 1
            if let t = c.handshakeTimer {
                loop.cancel(t)
                c.handshakeTimer = nil
            }
            // A call that may write waits, with every call after it, while a store is being
            // checked at open (`collectChecks` handles them once the checks end).
            if writeGate.parkIfChecking(c, frame) { return }
            // A call that may write into a store holding its writes waits for it, likewise.
            if writeGate.parkIfHeld(c, frame) { return }
            handleFrame(frame, from: c)
        }
    }

    /// Answers one call (a big frame that may be a save is read on a reader first, `readOffLoop`).
    func handleFrame(_ frame: ArraySlice<UInt8>, from c: Connection, readOffLoop: Bool = true) {
        if readOffLoop, frame.count >= Self.offLoopFrameBytes, c.hello != nil {
            return readBigSaveOffLoop(frame, from: c)
        }
        let started = metrics.start()
        // The hottest calls, read straight from their bytes; anything they do not recognise
        // (errors included) takes the general path below.
        if let q = QuickFetch(frame) {
            let reply = c.hello?.deniedRead(member: "Fetch", entity: q.entity).map { Reply($0, id: q.id).frame() } ?? uuidFetch.reply(q)
            connections.send(frame: reply, to: c)
            metrics.answered(Self.fetchMethod, reply: reply, started: started)
            return
        }
        if let q = QuickSave(frame), let reply = saves.quickSave(q, from: c) {
            connections.send(frame: reply, to: c)
            metrics.answered(Self.saveMethod, reply: reply, started: started)
            return
        }
        let json: JSON
        do { json = try JSON.decode(frame, limits: JSONLimits(maxDepth: Limits.maxJSONDepth)) } catch {
            connections.send(Reply(.invalidRequest("the message is not valid JSON: \(error)"), id: WireRequests.readableID(of: frame, after: error)),
                             to: c)
            return
        }
        let call: Call
        do { call = try Call(json) } catch {
            connections.send(Reply(error, id: json["id"].flatMap { $0.isNull ? nil : $0 }), to: c)
            return
        }
        let reply = dispatch(call, from: c)
        // A Fetch or Count sent to a reader is counted when it is answered (`answerLater`); a
        // Subscribe whose first result is read there, or a save in steps, when it is taken on.
        if !reply.isEmpty || !c.awaitingRead || (call.member != "Fetch" && call.member != "Count") {
            metrics.answered(call.method, reply: reply, started: started)
        }
        if !call.oneway {
            connections.send(frame: reply, to: c)
        } else if c.pendingOutput > 0 {
            connections.flush(c)  // what it queued for others (an Unsubscribe's end, a narrowing Hello's errors)
        }
        if context.hasNotices { storeWatch.reportNotices() }
    }

    // MARK: - Routing

    /// Answers one call with its reply frame. Every error becomes a varlink error reply; nothing
    /// here throws. Fetch writes its rows straight into the frame; the rest build parameters.
    func dispatch(_ call: Call, from c: Connection) -> [UInt8] {
        // Only saves and reads join a group commit; anything else finds the group's saves committed.
        if !SavePath.joinsGroup(call) { saves.commitGroupNow() }
        let result: Result<JSONObject, VarlinkError>
        switch call.interface {
        case "org.varlink.service":
            switch call.member {
            case "GetInfo": result = .success(Introspection.info(serving: configuration.interfaces))
            case "GetInterfaceDescription": result = Introspection.describe(call.parameters, serving: configuration.interfaces)
            default: result = .failure(.methodNotFound(call.method))
            }
        case "org.seam.Store":
            if let denied = c.hello?.deniedRead(member: call.member, entity: call.parameters["entity"]?.stringValue) { return Reply(denied, id: call.id).frame() }
            switch call.member {
            case "Hello": result = hello(call.parameters, c)
            case "Schema": result = .success(Introspection.schema(context.schema))
            case "Fetch":
                if let uuid = call.parameters["uuid"], !uuid.isNull { return uuidFetch.reply(call.parameters, uuid, id: call.id) }
                return reads.readOnReader(call, c)
            case "Count": return reads.readOnReader(call, c)
            case "Save": return saves.save(call.parameters, c, id: call.id, answers: !call.oneway)
            case "Status": result = .success(report.status())
            case "Subscribe": return subscribers.subscribe(call, c)
            case "Unsubscribe": result = subscribers.unsubscribe(call.parameters, c)
            default: result = .failure(.methodNotFound(call.method))
            }
        case "org.seam.Migration":
            return migrations.call(call, c)
        case "org.seam.Sync":
            return sync.call(call, c)
        case "org.seam.Maintenance":
            return maintenance.call(call, c)
        case "org.seam.Metrics":
            return report.metricsCall(call, c)
        default:
            guard let service = configuration.interfaces.first(where: { $0.name == call.interface }) else {
                result = .failure(.interfaceNotFound(call.interface))
                break
            }
            let serviceCall = ServiceCall(context: context, author: c.hello?.author, clock: clock,
                                          check: { request in c.hello?.deniedWrite(request) }) { [unowned self] request, author throws(ContextError) in
                try self.saves.commit(request, author: author)
            }
            result = service.handler(call.member, call.parameters, serviceCall)
        }
        switch result {
        case .success(let parameters): return Reply(parameters: parameters, id: call.id).frame()
        case .failure(let error): return Reply(error, id: call.id).frame()
        }
    }

    // MARK: - org.seam.Store

    /// The sync worker's own entities: those of the models that are never synced themselves
    /// (`Context.Options.unsyncedModels`: `SyncMetadata`), which only its role writes.
    var workerOwned: Set<String> {
        Set(context.schema.models.filter { context.options.unsyncedModels.contains($0.name) }.flatMap { $0.current.entities.map(\.name) })
    }

    /// `Hello`: the connection holds what `Connection.Hello.negotiate` settles, if there is room
    /// for one more client.
    func hello(_ p: JSONObject, _ c: Connection) -> Result<JSONObject, VarlinkError> {
        let supervised = c.supervisedAs != nil && c.hello != nil
        let hello: Connection.Hello
        switch Connection.Hello.negotiate(p, assigned: supervised ? c.hello : nil, known: { self.context.schema.entity($0) != nil },
                                          workerOwned: workerOwned) {
        case .success(let h): hello = h
        case .failure(let e): return .failure(e)
        }
        // Let in on the reserve past the cap (`Limits.reservedConnections`): a person's `seam`
        // stays; anyone else takes the place of an idle connection, or is turned away.
        if !supervised, hello.role != "cli", connections.clientConnections > Limits.maxConnectionsPerUID {
            if let idle = connections.oldestIdleConnection(sparing: c) {
                log.info("closing \(idle.label), the oldest idle connection, for \(c.label)")
                connections.close(idle)
            } else {
                _ = loop.after(0) { [unowned self] in connections.close(c) }
                return .failure(.limitReached("this user holds \(Limits.maxConnectionsPerUID) connections, each of them in use; "
                                              + "close some (seam status lists them) and connect again"))
            }
        }
        c.hello = hello
        subscribers.endSubscriptionsOutsideCapabilities(c)
        if !supervised { log.debug("\(c.label) said hello", .init(connection: c.label, method: "org.seam.Store.Hello")) }
        return .success(hello.reply(sequence: context.sequence))
    }

    // MARK: - Held writes

    /// A call parked by the `WriteGate` is handled when its store lets it.
    func resume(_ c: Connection, _ frame: ArraySlice<UInt8>, laterCalls: WriteGate.LaterCalls) {
        handleFrame(frame, from: c)
        if laterCalls == .now { processFrames(c) }
        connections.flush(c)
        if laterCalls == .inTurns { turns.schedule(c) }  // with everyone else's
        connections.closeIfFinished(c)
    }

    // MARK: - Big saves

    func charge(_ c: Connection, seconds: Double) { turns.charge(c, seconds: seconds) }

    /// Tells subscribers, and the caller, how the save in steps ended. Its reply — a thousand
    /// changes took the loop 0.75 ms to write — is built on a reader; its caller waits for it.
    func stepsEnded(_ running: SteppedSaves.Stepping, _ result: Result<ChangeSet?, ContextError>) {
        let c = running.connection
        if case .success(let set?) = result {
            saves.publish(set)
            sync.noteCommit(set)
        }
        if context.hasNotices { storeWatch.reportNotices() }
        if !c.closed {
            let id = running.id
            switch result {
            case .success(let set) where running.answers:
                // Only the changes to entities its caller may read, when it said which.
                let capabilities = c.hello.flatMap { $0.capabilities.reads == nil ? nil : $0.capabilities }
                let shape = running.request.reply
                reads.answerLater(c, id: id) { _ in
                    .frame(SavePath.reply(set, id: id, shows: capabilities.map { caps in { caps.mayRead($0) } }, as: shape))
                }
            case .failure(let error) where running.answers:
                connections.send(Reply(WireRequests.error(error, in: running.request), id: id), to: c)
                reads.resumeAfterRead(c)
            default:
                reads.resumeAfterRead(c)
            }
        }
        writeGate.resumeHeldWrites()
    }

    // MARK: - Reading a big save off the loop

    /// Frames from this size are read on a reader when they may be a save: reading a 1,000-row
    /// save's frame took the loop 1.6–2.7 ms, the longest piece of such a save left on it.
    static let offLoopFrameBytes = 32 * 1024

    /// Reads `frame` of `c` — big, and perhaps a save — on a reader: its request comes back to
    /// the loop, which saves it as if it had read it itself (a frame that is not a plain save, or
    /// is not valid, is read on the loop as any other). The connection's later calls wait.
    func readBigSaveOffLoop(_ frame: ArraySlice<UInt8>, from c: Connection) {
        let schema = context.schema
        c.awaitingRead = true
        let started = metrics.start()
        reads.onReader(for: c, { _ in
            let types: (Entity) -> [String: AttributeType] = { $0.attributeTypes }
            if let q = QuickSave(frame), let request = WireRequests.save(q, schema: schema, types: types) {
                return .readSave(.success(request), id: q.id, answers: true)
            }
            guard let json = try? JSON.decode(frame, limits: JSONLimits(maxDepth: Limits.maxJSONDepth)), let call = try? Call(json),
                  call.method == "org.seam.Store.Save"
            else { return .readSave(nil, id: nil, answers: true) }
            return .readSave(WireRequests.save(call.parameters, schema: schema, types: types), id: call.id, answers: !call.oneway)
        }, then: { [unowned self] outcome in
            c.awaitingRead = false
            guard !c.closed else { return }
            guard case .readSave(let read?, let id, let answers) = outcome, let hello = c.hello else {
                handleFrame(frame, from: c, readOffLoop: false)
                connections.flush(c)
                return reads.resumeAfterRead(c)
            }
            // A store it writes may have begun to hold its writes meanwhile: it waits, as read.
            if writeGate.parkIfHeld(c, frame) { return }
            // Counted as the loop takes it on (a save in steps, when it begins), from the frame's arrival.
            switch read {
            case .success(let request):
                let reply = saves.save(request, author: hello.author, c, id: id, answers: answers)
                metrics.answered(Self.saveMethod, reply: reply, started: started)
                if answers { connections.send(frame: reply, to: c) }
            case .failure(let error):
                let reply = Reply(error, id: id).frame()
                metrics.answered(Self.saveMethod, reply: reply, started: started)
                if answers { connections.send(frame: reply, to: c) }
            }
            if context.hasNotices { storeWatch.reportNotices() }
            connections.flush(c)
            if !c.awaitingRead { reads.resumeAfterRead(c) }  // else it began a save in steps
        })
    }

    /// When the stores changed in a way no change set told (`SavePath.refetchIfInvalidated`).
    func refetchIfInvalidated() { saves.refetchIfInvalidated() }
}
