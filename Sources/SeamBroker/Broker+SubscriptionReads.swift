import SeamContext
import SeamProtocol
import SeamQuery
import SeamSchema

/// A subscription's results, built off the loop: a new channel's first result (read by SQL on
/// a reader, then caught up through the change ring), a subscriber's first reply on a channel
/// that exists, and every resync (each written from a copy of the channel's window, which the
/// loop goes on editing). The loop keeps the matching, the diffs and the I/O.
extension Broker {
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
            failFirstReplies(of: channel, readError(failure))
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
        resumeAfterRead(c)
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
