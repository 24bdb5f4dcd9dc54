import SeamContext
import SeamJSON
import SeamProtocol
import SeamQuery
import SeamSchema

extension Broker {
    /// `Subscribe`: registers a live query. Its first reply (the whole result, or with `since`
    /// the diff from then) is built off the loop (`Broker+SubscriptionReads`); the connection's
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
        if let refused = refusedAsTooCostly(query.predicate) { return Reply(refused, id: id).frame() }
        if let channel = subscriptions.existing(query) {
            let s = subscriptions.add(channel, connection: c, callID: id, sequence: sequence, flow: SubscriptionFlow(loadingAt: sequence))
            s.since = query.since
            log.debug("\(c.label) subscribed (\(s.id)) to channel \(channel.id)")
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
        log.debug("\(c.label) subscribed (\(s.id)) to channel \(channel.id): \(channel.entity) \(channel.request.predicate ?? "")")
        c.awaitingRead = true
        loadChannel(channel, query: query, for: c)
        return []
    }

    private func subscriptionQuery(_ p: JSONObject) -> Result<Subscriptions.Query, VarlinkError> {
        if p["offset"] != nil { return .failure(.invalidRequest("a subscription has no offset; use sort and limit", field: "offset")) }
        let request: FetchRequest
        switch self.request(p, defaultLimit: nil, offset: false) {
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
    /// connections until the round's one sync (`Broker+GroupCommit`).
    func publish(_ set: ChangeSet) {
        rowCache.evict(set)
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
            log.info("\(c.label) fell behind (\(c.pendingOutput) bytes queued); its subscriptions will resync once it has read them")
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

}
