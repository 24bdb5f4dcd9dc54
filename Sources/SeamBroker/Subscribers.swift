import SeamContext
import SeamJSON
import SeamProtocol
import SeamQuery
import SeamSchema

/// What the subscribers ask of the broker that hosts them: reads run off the loop, and a
/// connection that waited for one going on with its calls.
protocol SubscribersHost: AnyObject {
    /// Runs `work` on a reader for `c`; `then` gets its outcome on the loop.
    func onReader(for c: Connection?, lane: ReaderPool.Lane?, _ work: @escaping ReadJobs.Job, then: @escaping (ReadOutcome) -> Void)
    /// A connection whose read was answered goes on with its calls.
    func resumeAfterRead(_ c: Connection)
}

/// The subscriptions' side of the broker: `Subscribe` and `Unsubscribe`, each commit's diffs
/// fanned out to the channels it touched (`publish`), and the results built off the loop — a
/// new channel's first result (read by SQL on a reader, then caught up through the change
/// ring), a subscriber's first reply on a channel that exists, every resync (each written from a
/// copy of the channel's window, which the loop goes on editing). `Subscriptions` holds the
/// channels and their windows; `SubscriptionFlow` decides each reply; this type performs them.
/// One thread: the loop's.
final class Subscribers {
    weak var host: (any SubscribersHost)?
    let subscriptions: Subscriptions
    private let context: Context
    private let connections: ConnectionTable
    private let log: Logger
    /// The most a subscription's predicate may cost per row (`BrokerLimits.predicateCost`).
    private let predicateCost: Int
    /// Where resyncs are counted.
    private let metrics: BrokerMetrics

    init(subscriptions: Subscriptions, context: Context, connections: ConnectionTable, log: Logger, predicateCost: Int,
         metrics: BrokerMetrics = BrokerMetrics(enabled: false)) {
        self.metrics = metrics
        self.subscriptions = subscriptions
        self.context = context
        self.connections = connections
        self.log = log
        self.predicateCost = predicateCost
    }

    /// What a connection may leave unread.
    private var outboxLimits: BrokerLimits.OutboxLimits { connections.outboxLimits }

    /// Runs `work` on a reader (`SubscribersHost.onReader`).
    private func onReader(for c: Connection?, _ work: @escaping ReadJobs.Job, then: @escaping (ReadOutcome) -> Void) {
        host?.onReader(for: c, lane: nil, work, then: then)
    }

    // MARK: - Subscribe and Unsubscribe

    /// `Subscribe`: registers a live query. Its first reply (the whole result, or with `since`
    /// the diff from then) is built off the loop (below); the connection's
    /// later calls wait for it. Later replies come from `publish`.
    func subscribe(_ call: Call, _ c: Connection) -> [UInt8] {
        let id = call.id
        guard call.more, !call.oneway else { return Reply(.expectedMore, id: id).frame() }
        let query: Subscriptions.Query
        switch subscriptionQuery(call.parameters) {
        case .success(let q): query = q
        case .failure(let e): return Reply(e, id: id).frame()
        }
        // Without ids, varlink streams one call per connection: a second subscription's replies
        // could not be told from the first's by a plain client, so it is refused (with an error
        // of its own: a LimitReached without an id would read as the first one's end).
        if id == nil, c.subscriptions.values.contains(where: { $0.callID == nil }) {
            return Reply(.invalidRequest("this connection already holds a subscription without an id: give each call an id "
                                         + "(PROTOCOL.md, the id extension) or subscribe on another connection", field: "id"), id: nil).frame()
        }
        guard c.subscriptions.count < Limits.maxSubscriptionsPerConnection else {
            return Reply(.limitReached("a connection holds at most \(Limits.maxSubscriptionsPerConnection) subscriptions"), id: id).frame()
        }
        guard subscriptions.subscriptionCount(uid: c.peer.uid) < Limits.maxSubscriptionsPerUID else {
            return Reply(.limitReached("a user holds at most \(Limits.maxSubscriptionsPerUID) subscriptions"), id: id).frame()
        }
        let sequence = context.sequence
        if let since = query.since, since > sequence {
            return Reply(.sequenceAhead(since: since, sequence: sequence), id: id).frame()
        }
        // Matched in memory against every commit of its entity: a predicate that costs too much
        // a row is refused here, as a Fetch's is.
        if let refused = ReadJobs.tooCostly(query.predicate, limit: predicateCost) { return Reply(refused, id: id).frame() }
        if let channel = subscriptions.existing(query) {
            let s = subscriptions.add(channel, connection: c, callID: id, sequence: sequence, flow: SubscriptionFlow(loadingAt: sequence))
            s.since = query.since
            log.debug("\(c.label) subscribed (\(s.id)) to channel \(channel.id)", .init(connection: c.label, method: "org.seam.Store.Subscribe"))
            c.awaitingRead = true
            // A channel still loading answers all who wait when it has; a loaded one's result is
            // written from a copy of its window.
            if channel.isLoaded { buildFirstReply(s) }
            return []
        }
        let channel: Channel
        do { channel = try subscriptions.makeChannel(for: query) } catch { return Reply(error, id: id).frame() }
        let s = subscriptions.add(channel, connection: c, callID: id, sequence: sequence, flow: SubscriptionFlow(loadingAt: sequence))
        s.since = query.since
        log.debug("\(c.label) subscribed (\(s.id)) to channel \(channel.id): \(channel.entity) \(channel.request.predicate ?? "")", .init(connection: c.label, method: "org.seam.Store.Subscribe"))
        c.awaitingRead = true
        loadChannel(channel, query: query, for: c)
        return []
    }

    private func subscriptionQuery(_ p: JSONObject) -> Result<Subscriptions.Query, VarlinkError> {
        if p["offset"] != nil { return .failure(.invalidRequest("a subscription has no offset; use sort and limit", field: "offset")) }
        let request: FetchRequest
        switch context.fetchRequest(p, defaultLimit: nil, offset: false) {
        case .success(let r): request = r
        case .failure(let e): return .failure(e)
        }
        let entity: Entity
        do { entity = try context.servedEntity(request.entity) } catch { return .failure(VarlinkError(error)) }
        var since: Int64?
        switch p["since"] {
        case nil, .null?: break
        case .integer(let n)? where n >= 0: since = n
        default: return .failure(.invalidParameter("since"))
        }
        do { return .success(try Subscriptions.Query(request: request, fields: request.attributes, since: since, entity: entity)) } catch {
            return .failure(error)
        }
    }

    /// `Unsubscribe`: the subscription's call gets its last reply ("end"), then this call its own.
    func unsubscribe(_ p: JSONObject, _ c: Connection) -> Result<JSONObject, VarlinkError> {
        guard let n = p["subscription"]?.int64Value else { return .failure(.invalidParameter("subscription")) }
        guard let s = c.subscriptions[Int(n)] else {
            return .failure(.invalidRequest("this connection has no subscription \(n)", field: "subscription"))
        }
        subscriptions.remove(s)
        // The save its result reflects: where it stopped hearing, if it fell behind (a resume
        // from there gets what it missed), else the latest.
        connections.queue(frame: Subscriptions.frame(s, Subscriptions.endBody(sequence: s.missedFrom ?? context.sequence), continues: false), to: c)
        return .success([:])
    }

    /// Tells every channel a commit touched what changed, each diff written once and queued to
    /// every subscriber of the channel (`SubscriptionFlow` decides: sent, held while a result is
    /// built, or dropped for a resync); then each connection is flushed once. Never waits.
    /// With full durability the diffs are worked out while the commit is on its way to the disk,
    /// and nothing is written to any socket before it is there: the flushes hold the
    /// connections until the round's one sync (`SavePath`).
    func publish(_ set: ChangeSet) {
        var touched: [ObjectIdentifier: Connection] = [:]
        let (diffs, failed) = subscriptions.diffs(for: set, context: context)
        for c in endSubscriptions(of: failed, flushing: false) { touched[ObjectIdentifier(c)] = c }
        for (channel, diff) in diffs {
            var body: ArraySlice<UInt8>?
            let budget = channel.backlogBudget(outboxLimits)
            for s in channel.subscriptions.values {
                let c = s.connection
                guard !c.closed else { continue }
                let wasBehind = s.flow.isBehind
                let actions = s.flow.diff({
                    if body == nil { body = Subscriptions.diffBody(sequence: set.sequence, diff, fields: channel.window.fields) }
                    return Subscriptions.frame(s, body!)
                }, sequence: set.sequence, lastSent: s.lastSequence, queued: c.pendingOutput, budget: budget, room: outboxRoom(c))
                if s.flow.isBehind, !wasBehind { fellBehind(s) }
                if perform(actions, for: s) { touched[ObjectIdentifier(c)] = c }
            }
        }
        for c in touched.values { connections.flush(c) }
    }

    /// A subscription stopped being sent diffs: its connection is owed a resync once it has read
    /// what is queued.
    func fellBehind(_ s: Subscription) {
        let c = s.connection
        if !c.owesResync {
            log.info("\(c.label) fell behind (\(c.pendingOutput) bytes queued); its subscriptions will resync once it has read them", .init(connection: c.label))
        }
        c.owesResync = true
    }

    /// How large a frame `c`'s outbox takes before `queue` would close it for reading too
    /// slowly: any while little is queued, else up to the outbox limit.
    func outboxRoom(_ c: Connection) -> Int {
        c.pendingOutput <= outboxLimits.pauseCallsBytes ? .max : max(0, outboxLimits.maxOutboxBytes - c.pendingOutput)
    }

    /// Queues what a subscription's flow says to send. False when nothing was queued, or the
    /// connection closed.
    @discardableResult
    func perform(_ actions: [SubscriptionFlow.Action], for s: Subscription) -> Bool {
        var queued = false
        for action in actions {
            switch action {
            case .send(let frame, let sequence):
                s.lastSequence = sequence
                guard connections.queue(frame: frame, to: s.connection) else { return false }
                queued = true
            case .build:
                break  // the caller plans it (`startResync`)
            }
        }
        return queued
    }

    /// Ends every subscription of channels whose result could not be fetched again, or grew past
    /// `Limits.maxSubscriptionRows`: the window no longer says what the result is (or would hold
    /// too much), so each ends with the error (its last reply) and the subscriber may subscribe
    /// again. Returns the connections written to (flushed unless asked not to).
    @discardableResult
    func endSubscriptions(of failed: [(Channel, VarlinkError)], flushing: Bool = true) -> [Connection] {
        var touched: [ObjectIdentifier: Connection] = [:]
        for (channel, error) in failed {
            let why = error.parameters["message"]?.stringValue ?? error.name
            log.warning("channel \(channel.id) (\(channel.entity)) ends its subscriptions: \(why)")
            for s in channel.subscriptions.values.sorted(by: { $0.id < $1.id }) {
                subscriptions.remove(s)
                if connections.queue(frame: Reply(error, id: s.callID).frame(), to: s.connection) {
                    touched[ObjectIdentifier(s.connection)] = s.connection
                }
            }
        }
        if flushing { for c in touched.values { connections.flush(c) } }
        return Array(touched.values)
    }

    // MARK: - What a Hello narrowed

    /// After a Hello that changed what the connection may read: its subscriptions on entities it
    /// may no longer read end, each with PermissionDenied (its last reply).
    func endSubscriptionsOutsideCapabilities(_ c: Connection) {
        guard let hello = c.hello else { return }
        for s in c.subscriptions.values.sorted(by: { $0.id < $1.id }) where !hello.capabilities.mayRead(s.channel.entity) {
            subscriptions.remove(s)
            connections.queue(frame: Reply(.permissionDenied("\(hello.author) may no longer read \(s.channel.entity) (its last Hello); "
                                                 + "subscription \(s.id) ended"), id: s.callID).frame(), to: c)
        }
    }

    // MARK: - Channels on a store that returns

    /// Every channel on the stores that came back is rebuilt against their entities as now
    /// held (a migration may have added attributes) and its subscribers get a fresh result,
    /// marked as a resync from where they were; a channel that no longer checks ends with the error.
    func resumeChannels(in stores: [String]) {
        var entities = Set<String>()
        for model in context.schema.models { for name in stores { for e in model.current.entities(in: name) { entities.insert(e.name) } } }
        // Subscribers waiting for a channel still loading: that load is dropped with its
        // channel, and their first reply is built from the rebuilt one.
        let stranded = Set(subscriptions.channels.values.filter { !$0.isLoaded && entities.contains($0.entity) }
            .flatMap { $0.subscriptions.keys })
        var touched: [ObjectIdentifier: Connection] = [:]
        for (s, error) in subscriptions.rebuild(entities: entities, context: context) {
            let c = s.connection
            guard !c.closed else { continue }
            if let error {
                if connections.queue(frame: Reply(error, id: s.callID).frame(), to: c) { touched[ObjectIdentifier(c)] = c }
                if stranded.contains(s.id) { firstReplyDone(c) }
            } else if stranded.contains(s.id) {
                s.flow = SubscriptionFlow(loadingAt: context.sequence)
                buildFirstReply(s)
            } else {
                // Owed a resync from where it was, sent once its connection has read what is queued.
                s.flow.fallBehind(from: s.lastSequence)
                c.owesResync = true
                touched[ObjectIdentifier(c)] = c
            }
        }
        for c in touched.values { connections.flush(c) }
    }

    // MARK: - A new channel

    /// Reads a new channel's result on a reader; every subscription that waits for it is
    /// answered when it is back (`channelLoaded`).
    func loadChannel(_ channel: Channel, query: Subscriptions.Query, for c: Connection) {
        let cap = Limits.maxSubscriptionRows
        var request = channel.request
        request.limit = min(request.limit ?? cap + 1, cap + 1)
        let plan: ReadPlan
        do { plan = try context.readPlan(request, kind: .rows) } catch {
            return failFirstReplies(of: channel, VarlinkError(error))
        }
        let (predicate, sorting, limit, fields) = (query.predicate, query.sorting, query.request.limit, query.fields)
        onReader(for: c, { connections in
            let result: ReadPlan.Result
            do throws(ReaderPool.ReadFailure) { result = try connections.run(plan) } catch { return .failed(error) }
            if result.rows.count > cap { return .tooManyRows }
            let names = plan.attributes.map(\.name)
            let window = ResultWindow(predicate: predicate, sorting: sorting, limit: limit, fields: fields,
                                      rows: result.rows.map { Dictionary(uniqueKeysWithValues: zip(names, $0)) })
            let rows = Subscriptions.rowsJSON(result, attributes: plan.attributes, fields: window.fields)
            return .channelLoaded(window, rows: rows, sequence: result.sequence)
        }, then: { [unowned self] outcome in channelLoaded(channel, outcome) })
    }

    /// A channel's first result is back: it is caught up to now, and each subscription that
    /// waited gets the result as read, then the diffs since.
    private func channelLoaded(_ channel: Channel, _ outcome: ReadOutcome) {
        // Gone (its subscribers left, or its store came back and it was rebuilt): nothing to do.
        guard subscriptions.isRegistered(channel), !channel.isLoaded else { return }
        switch outcome {
        case .channelLoaded(let window, let rows, let sequence):
            let catchUp: [(Int64, QueryDiff)]
            do { catchUp = try subscriptions.loaded(channel, window: window, sequence: sequence, context: context) } catch {
                return failFirstReplies(of: channel, error)
            }
            channel.resultBytes = rows.count
            for s in waitingForFirstReply(channel) {
                if s.since != nil {
                    // A resume: the diff from its `since`, now that the window is current.
                    s.flow = SubscriptionFlow(loadingAt: context.sequence)
                    buildFirstReply(s)
                    continue
                }
                let c = s.connection
                perform(s.flow.built(Subscriptions.resultFrame(s, kind: "result", sequence: sequence, from: nil, rows: rows), sequence: sequence), for: s)
                for (at, diff) in catchUp {
                    let wasBehind = s.flow.isBehind
                    perform(s.flow.diff({ Subscriptions.frame(s, Subscriptions.diffBody(sequence: at, diff, fields: channel.window.fields)) },
                                        sequence: at, lastSent: s.lastSequence, queued: c.pendingOutput, budget: channel.backlogBudget(outboxLimits), room: outboxRoom(c)), for: s)
                    if s.flow.isBehind, !wasBehind { fellBehind(s) }
                }
                connections.flush(c)
                firstReplyDone(c)
            }
        case .tooManyRows:
            failFirstReplies(of: channel, Subscriptions.tooManyRows(Limits.maxSubscriptionRows))
        case .failed(let failure):
            failFirstReplies(of: channel, context.readError(failure))
        case .frame, .built, .readSave, .ran:
            break
        }
    }

    /// The subscriptions of `channel` whose first reply is pending, in the order they came.
    private func waitingForFirstReply(_ channel: Channel) -> [Subscription] {
        channel.subscriptions.values.filter { s in
            if case .loading = s.flow.state { return true } else { return false }
        }.sorted { $0.id < $1.id }
    }

    /// Every subscription waiting for `channel`'s first result is refused with `error` (the
    /// Subscribe call's reply), and the channel goes with them.
    private func failFirstReplies(of channel: Channel, _ error: VarlinkError) {
        for s in waitingForFirstReply(channel) {
            subscriptions.remove(s)
            connections.send(Reply(error, id: s.callID), to: s.connection)
            firstReplyDone(s.connection)
        }
    }

    // MARK: - A subscriber's first reply on a loaded channel

    /// Builds `s`'s first reply from a copy of its channel's window as it is now: the result,
    /// or with `since` the diff from then (a resync when the change ring no longer reaches
    /// back). Commits meanwhile are held by its flow and follow the reply.
    func buildFirstReply(_ s: Subscription) {
        let channel = s.channel
        let now = context.sequence
        let window = channel.window
        let (id, callID) = (s.id, s.callID)
        let work: @Sendable (ReaderPool.Connections) -> ReadOutcome
        if let since = s.since {
            if let basis = subscriptions.resumeBasis(for: channel, since: since, context: context) {
                if basis.before.isEmpty {
                    // Nothing it sees changed since: the empty diff, at once.
                    let frame = Subscriptions.frame(s, Subscriptions.diffBody(sequence: now, QueryDiff(), fields: window.fields))
                    perform(s.flow.built(frame, sequence: now), for: s)
                    connections.flush(s.connection)
                    return firstReplyDone(s.connection)
                }
                work = { _ in
                    let diff = Subscriptions.resumeDiff(window, basis)
                    return .built(Subscriptions.frame(subscription: id, callID: callID, Subscriptions.diffBody(sequence: now, diff, fields: window.fields)),
                                  sequence: now)
                }
            } else {
                metrics.resynced()
                work = { _ in
                    .built(Subscriptions.resultFrame(subscription: id, callID: callID, kind: "resync", sequence: now, from: since, window), sequence: now)
                }
            }
        } else {
            work = { _ in
                .built(Subscriptions.resultFrame(subscription: id, callID: callID, kind: "result", sequence: now, from: nil, window), sequence: now)
            }
        }
        onReader(for: s.connection, work) { [unowned self] outcome in
            let c = s.connection
            if s.isCurrent, case .built(let frame, let sequence) = outcome {
                if s.since == nil { s.channel.resultBytes = frame.count }
                perform(s.flow.built(frame, sequence: sequence), for: s)
                if s.flow.isBehind { fellBehind(s) }
                connections.flush(c)
            }
            firstReplyDone(c)
        }
    }

    /// The call that waited for a first reply is answered: the connection goes on with its calls.
    func firstReplyDone(_ c: Connection) {
        guard c.awaitingRead else { return }
        c.awaitingRead = false
        guard !c.closed else { return }
        host?.resumeAfterRead(c)
    }

    // MARK: - Resyncs

    /// The connection has read everything queued: the first of its subscriptions owed a resync
    /// has it built, off the loop, from a copy of its channel's window; the next is started when
    /// that one is read in turn. One at a time: a connection owed many large results never holds
    /// them all at once.
    func startResync(_ c: Connection) {
        guard !c.resyncInFlight, !c.closed, !c.discardsOutput else { return }
        guard let s = c.subscriptions.values.filter(\.flow.isBehind).min(by: { $0.id < $1.id }) else {
            c.owesResync = false
            return connections.closeIfFinished(c)
        }
        let now = context.sequence
        guard case .build(let from)? = s.flow.drained(now: now).first else { return }
        let window = s.channel.window
        let (id, callID) = (s.id, s.callID)
        c.resyncInFlight = true
        metrics.resynced()
        onReader(for: c, { _ in
            .built(Subscriptions.resultFrame(subscription: id, callID: callID, kind: "resync", sequence: now, from: from, window), sequence: now)
        }, then: { [unowned self] outcome in
            c.resyncInFlight = false
            guard s.isCurrent, case .built(let frame, let sequence) = outcome else { return }
            s.channel.resultBytes = frame.count
            // Its other subscriptions' diffs filled the outbox meanwhile: built again once that
            // is read, rather than the connection closed for a result it was owed.
            if frame.count > outboxRoom(c) {
                s.flow.resyncFailed()
                return
            }
            perform(s.flow.built(frame, sequence: sequence), for: s)
            if s.flow.isBehind { fellBehind(s) }
            connections.flush(c)
        })
    }

    /// Every subscription of `c` is owed a resync from where it stands (the stores changed in a
    /// way no change set told, or came back from a migration): sent once the connection has read
    /// what is queued.
    func owedResyncs(_ c: Connection) {
        for s in c.subscriptions.values { s.flow.fallBehind(from: s.lastSequence) }
        c.owesResync = true
    }
}
