import SeamContext
import SeamJSON
import SeamProtocol
import SeamQuery
import SeamSchema

/// One live query, shared by every subscription that asked for exactly the same thing: it is
/// matched and diffed once per commit, and the diff is fanned out to all of them.
final class Channel {
    let id: Int
    let key: String
    /// The query as SQL runs it, for the first result and for refetches (limit as subscribed).
    let request: FetchRequest
    /// The fields as subscribed (nil: every attribute, whatever the entity's version).
    let fields: [String]?
    /// Its result; empty until `isLoaded`.
    var window: ResultWindow
    /// Whether `window` is the result now. A new channel's first result is read off the loop
    /// (`Broker.loadChannel`): until it is caught up, commits pass the channel by.
    var isLoaded: Bool
    /// The stores changed outside any change set while it loaded: its result is fetched again
    /// once the load ends.
    var loadInvalidated = false
    /// About how many bytes its whole result takes on the wire (the last one built): a
    /// subscriber's backlog of diffs may grow to this before a resync is cheaper.
    var resultBytes = 0
    var subscriptions: [Int: Subscription] = [:]

    init(id: Int, key: String, request: FetchRequest, fields: [String]?, window: ResultWindow, isLoaded: Bool) {
        self.id = id
        self.key = key
        self.request = request
        self.fields = fields
        self.window = window
        self.isLoaded = isLoaded
    }

    var entity: String { request.entity }

    /// The backlog of diffs a subscriber may have queued before it is owed a resync instead: a
    /// whole result's worth (a resync would cost as much), at least `subscriberBacklogBytes`, and
    /// at most a quarter of the outbox limit (a connection's subscriptions share its outbox).
    func backlogBudget(_ limits: BrokerLimits.OutboxLimits) -> Int {
        min(max(limits.subscriberBacklogBytes, resultBytes), limits.maxOutboxBytes / 4)
    }
}

/// One `Subscribe` call: a connection listening to a channel.
final class Subscription {
    let id: Int
    /// Held strongly: a fan-out that closes a connection (it read too slowly) may go on to
    /// another subscription of the same connection, which must still find it (closed) rather
    /// than a freed object. The cycle with `Connection.subscriptions` ends when the subscription
    /// is removed, which closing a connection does for all of its subscriptions.
    let connection: Connection
    /// The `id` of the Subscribe call, echoed on every reply (nil for a plain varlink client).
    let callID: JSON?
    /// Its channel; a new one when the channel is rebuilt (its store returned from a migration).
    var channel: Channel
    /// The sequence number the subscriber's copy of the result reflects (as far as we sent).
    var lastSequence: Int64
    /// Where its replies stand: its first result pending, live, behind, resyncing.
    var flow: SubscriptionFlow
    /// What its first reply is, while it is pending: a "result", or with `since` the diff from
    /// then (a "resync" when that cannot be told).
    var since: Int64?

    init(id: Int, connection: Connection, callID: JSON?, channel: Channel, sequence: Int64, flow: SubscriptionFlow) {
        self.id = id
        self.connection = connection
        self.callID = callID
        self.channel = channel
        self.flow = flow
        lastSequence = sequence
    }

    /// The sequence from which the subscriber missed diffs, while it is owed a resync.
    var missedFrom: Int64? { flow.missedFrom }

    /// Whether it is still subscribed (not removed, its connection open).
    var isCurrent: Bool { !connection.closed && connection.subscriptions[id] === self }
}

/// The subscriptions of a broker: channels by query, a channel index per entity, fan-out of
/// diffs, backpressure. Runs on the broker's one thread; never blocks.
final class Subscriptions {
    private(set) var channels: [String: Channel] = [:]
    private var channelsByID: [Int: Channel] = [:]
    private var indexes: [String: ChannelIndex<Int>] = [:]
    private(set) var count = 0
    private var perUID: [UInt32: Int] = [:]
    private var nextID = 0
    private var nextChannelID = 0

    /// Subscribe's parameters, checked.
    struct Query {
        var request: FetchRequest
        var predicate: CheckedPredicate
        var sorting: Sorting
        var fields: [String]?
        var since: Int64?

        init(request: FetchRequest, predicate: CheckedPredicate, sorting: Sorting, fields: [String]?, since: Int64?) {
            self.request = request
            self.predicate = predicate
            self.sorting = sorting
            self.fields = fields
            self.since = since
        }

        /// The query of `request` checked against `entity`: predicate, sort and fields.
        init(request: FetchRequest, fields: [String]?, since: Int64? = nil, entity: Entity) throws(VarlinkError) {
            if let fields, let bad = fields.first(where: { entity.attribute($0) == nil }) {
                throw .invalidRequest("\(entity.name) has no attribute '\(bad)'", field: "fields")
            }
            var predicate = CheckedPredicate.all(entity)
            if let text = request.predicate {
                do { predicate = try CheckedPredicate(text, entity: entity, parameters: request.parameters) } catch {
                    throw .invalidRequest(error.description, field: "predicate")
                }
            }
            do { sorting = try Sorting(request.sort ?? "", entity: entity) } catch {
                throw .invalidRequest(error.description, field: "sort")
            }
            self.request = request
            self.predicate = predicate
            self.fields = fields
            self.since = since
        }

        /// Equal exactly when the queries are: every part a JSON string in one array, so that no
        /// text in a predicate, a parameter's name or its value can pass for a separator (two
        /// different queries shared a channel, and one heard the other's results).
        var key: String {
            let parameters: [JSON] = request.parameters.sorted { $0.key < $1.key }.map {
                [.string($0.key), .string($0.value.type?.rawValue ?? "nil"), .string(String(reflecting: $0.value))]
            }
            let parts: [JSON] = [.string(request.entity), request.predicate.map(JSON.string) ?? .null, .array(parameters),
                                 request.sort.map(JSON.string) ?? .null, request.limit.map { .integer(Int64($0)) } ?? .null,
                                 fields.map { .array($0.map(JSON.string)) } ?? .null]
            return String(decoding: JSON.array(parts).encoded(), as: UTF8.self)
        }
    }

    func subscriptionCount(uid: UInt32) -> Int { perUID[uid] ?? 0 }

    static func tooManyRows(_ cap: Int) -> VarlinkError {
        .limitReached("this query matches more than \(cap) rows; subscribe with a limit of at most \(cap)")
    }

    /// The broker keeps every row of a channel's result to diff it: one that grows past the cap
    /// after it was opened ends its subscriptions, as one that started past it is refused.
    static func grewPastCap(_ cap: Int) -> VarlinkError {
        .limitReached("this query's result grew past \(cap) rows; subscribe again with a limit of at most \(cap)")
    }

    /// The channel of `query` that exists, if any (shared, it holds at most the cap: one that
    /// grows past it ends, `diffs`).
    func existing(_ query: Query) -> Channel? { channels[query.key] }

    /// The request a channel runs: whole rows (the window keeps the sort keys too, whatever the
    /// fields), in the order the window keeps them — with no sort that is uuid order
    /// (`Sorting("")`), which SQL gives only when asked (else the order of whatever index it
    /// walks, where the window's binary searches find no changed row).
    static func channelRequest(_ query: Query) -> FetchRequest {
        var base = query.request
        base.attributes = nil
        base.sort = base.sort ?? ""
        return base
    }

    /// A new channel for `query`, registered but not loaded (its window empty): its first
    /// result is read off the loop and handed to `loaded`.
    func makeChannel(for query: Query) throws(VarlinkError) -> Channel {
        nextChannelID += 1
        let window = ResultWindow(predicate: query.predicate, sorting: query.sorting, limit: query.request.limit, fields: query.fields, rows: [])
        let channel = Channel(id: nextChannelID, key: query.key, request: Self.channelRequest(query), fields: query.fields,
                              window: window, isLoaded: false)
        do {
            try indexes[query.request.entity, default: ChannelIndex(entity: query.predicate.entity)].register(channel.id, query.predicate)
        } catch {
            throw .invalidRequest(error.description, field: "predicate")
        }
        channels[channel.key] = channel
        channelsByID[channel.id] = channel
        return channel
    }

    /// The channel for `query`, created with its first result fetched here (on the loop: used
    /// only when channels are rebuilt after their store came back).
    func channel(for query: Query, context: Context) throws(VarlinkError) -> Channel {
        if let existing = channels[query.key] { return existing }
        let rows = try Self.fetchWithinCap(Self.channelRequest(query), context: context, past: Self.tooManyRows(Limits.maxSubscriptionRows))
        let channel = try makeChannel(for: query)
        channel.window = ResultWindow(predicate: query.predicate, sorting: query.sorting, limit: query.request.limit,
                                      fields: query.fields, rows: rows.map(\.values))
        channel.isLoaded = true
        return channel
    }

    /// Whether `channel` is still one of these (a channel goes with its last subscription).
    func isRegistered(_ channel: Channel) -> Bool { channelsByID[channel.id] === channel }

    /// A loading channel's first result, read as of `sequence`, caught up to `context`'s now
    /// through its change ring: returns the diffs of the commits since, each with its sequence,
    /// for the subscribers that waited. When the ring no longer reaches back (or a limited
    /// window lost a row it cannot replace from memory), the result is fetched afresh here and
    /// the rest is one diff.
    func loaded(_ channel: Channel, window: ResultWindow, sequence: Int64, context: Context) throws(VarlinkError) -> [(Int64, QueryDiff)] {
        channel.window = window
        channel.isLoaded = true
        var out: [(Int64, QueryDiff)] = []
        if !channel.loadInvalidated, let sets = context.changes(since: sequence) {
            for set in sets {
                let changes = set.changes.filter { $0.entity == channel.entity }.map { (old: $0.old, new: $0.new) }
                if changes.isEmpty { continue }
                switch channel.window.apply(changes) {
                case .diff(let d):
                    if !d.isEmpty { out.append((set.sequence, d)) }
                    continue
                case .refetch:
                    break
                }
                out.append((context.sequence, try refetch(channel, context: context)))
                break
            }
        } else {
            out.append((context.sequence, try refetch(channel, context: context)))
        }
        channel.loadInvalidated = false
        guard channel.window.rows.count <= Limits.maxSubscriptionRows else { throw Self.grewPastCap(Limits.maxSubscriptionRows) }
        return out.filter { !$0.1.isEmpty }
    }

    func add(_ channel: Channel, connection: Connection, callID: JSON?, sequence: Int64, flow: SubscriptionFlow) -> Subscription {
        nextID += 1
        let s = Subscription(id: nextID, connection: connection, callID: callID, channel: channel, sequence: sequence, flow: flow)
        channel.subscriptions[s.id] = s
        connection.subscriptions[s.id] = s
        count += 1
        perUID[connection.peer.uid, default: 0] += 1
        return s
    }

    /// Removes a subscription; its channel goes when its last subscription does.
    func remove(_ s: Subscription) {
        guard s.channel.subscriptions.removeValue(forKey: s.id) != nil else { return }
        s.connection.subscriptions[s.id] = nil
        count -= 1
        perUID[s.connection.peer.uid, default: 1] -= 1
        if perUID[s.connection.peer.uid] == 0 { perUID[s.connection.peer.uid] = nil }
        let channel = s.channel
        if channel.subscriptions.isEmpty {
            channels[channel.key] = nil
            channelsByID[channel.id] = nil
            indexes[channel.entity]?.unregister(channel.id)
            if indexes[channel.entity]?.count == 0 { indexes[channel.entity] = nil }
        }
    }

    /// Rebuilds every channel on `entities` from its request, against the entities as the
    /// context serves them now, keeping its subscriptions (and their numbers). Returns each
    /// subscription moved, with the error that ended it when its query no longer checks.
    func rebuild(entities: Set<String>, context: Context) -> [(Subscription, VarlinkError?)] {
        var out: [(Subscription, VarlinkError?)] = []
        // Every old channel on these entities goes first, and their entities' channel indexes
        // with them: an index holds its entity as it was, and a fresh channel (checked against
        // the entity as now served) registers in a fresh one.
        let olds = channels.values.filter { entities.contains($0.entity) }.sorted { $0.id < $1.id }
        for old in olds {
            channels[old.key] = nil
            channelsByID[old.id] = nil
        }
        for entity in entities { indexes[entity] = nil }
        for old in olds {
            let members = old.subscriptions.values.sorted { $0.id < $1.id }
            old.subscriptions = [:]
            do throws(VarlinkError) {
                let entity: Entity
                do { entity = try context.servedEntity(old.entity) } catch { throw VarlinkError(error) }
                let fresh = try channel(for: try Query(request: old.request, fields: old.fields, entity: entity), context: context)
                for s in members {
                    s.channel = fresh
                    fresh.subscriptions[s.id] = s
                    out.append((s, nil))
                }
            } catch {
                let reason = error
                for s in members {
                    s.connection.subscriptions[s.id] = nil
                    count -= 1
                    perUID[s.connection.peer.uid, default: 1] -= 1
                    if perUID[s.connection.peer.uid] == 0 { perUID[s.connection.peer.uid] = nil }
                    out.append((s, reason))
                }
            }
        }
        return out
    }

    // MARK: - Commits

    /// The diff each affected channel gets from one committed change set, in the order the
    /// channels were first touched. Costs the channels the changes touch (through the channel
    /// index), not all channels; a limited window that lost a row is refetched. A channel whose
    /// refetch fails (the store could not be read) cannot say what changed, and one whose result
    /// grew past `Limits.maxSubscriptionRows` holds too much: each is in `failed`, with the
    /// error, for its subscriptions to be ended with it (never left silently stale).
    func diffs(for set: ChangeSet, context: Context) -> (diffs: [(Channel, QueryDiff)], failed: [(Channel, VarlinkError)]) {
        var touched: [Int: [(old: [String: AttributeValue]?, new: [String: AttributeValue]?)]] = [:]
        var order: [Int] = []
        let changes = set.changes
        for i in changes.indices {
            // By index: a change is copied only when a channel's index may want it.
            guard let index = indexes[changes[i].entity] else { continue }
            let change = changes[i]
            for match in index.affected(old: change.old, new: change.new) {
                if touched[match.id] == nil { order.append(match.id) }
                touched[match.id, default: []].append((change.old, change.new))
            }
        }
        var out: [(Channel, QueryDiff)] = []
        var failed: [(Channel, VarlinkError)] = []
        for id in order {
            // A channel still loading is caught up through the change ring once it has loaded.
            guard let channel = channelsByID[id], channel.isLoaded, let changes = touched[id] else { continue }
            let diff: QueryDiff
            switch channel.window.apply(changes) {
            case .diff(let d): diff = d
            case .refetch:
                do { diff = try refetch(channel, context: context) } catch {
                    failed.append((channel, error))
                    continue
                }
            }
            guard channel.window.rows.count <= Limits.maxSubscriptionRows else {
                failed.append((channel, Self.grewPastCap(Limits.maxSubscriptionRows)))
                continue
            }
            if !diff.isEmpty { out.append((channel, diff)) }
        }
        return (out, failed)
    }

    /// Every channel's window fetched afresh (after the stores changed outside any change set);
    /// the channels that could not be, with the error.
    func refetchAll(context: Context) -> [(Channel, VarlinkError)] {
        var failed: [(Channel, VarlinkError)] = []
        for channel in channels.values.sorted(by: { $0.id < $1.id }) {
            guard channel.isLoaded else {
                channel.loadInvalidated = true  // the change ring cannot catch it up
                continue
            }
            do { _ = try refetch(channel, context: context) } catch {
                failed.append((channel, error))
            }
        }
        return failed
    }

    /// The channel's result fetched afresh into its window: at most the cap and one row more are
    /// read, and past the cap the window is left as it was.
    private func refetch(_ channel: Channel, context: Context) throws(VarlinkError) -> QueryDiff {
        let rows = try Self.fetchWithinCap(channel.request, context: context, past: Self.grewPastCap(Limits.maxSubscriptionRows))
        return channel.window.replace(with: rows.map(\.values))
    }

    /// A channel's rows: at most the cap and one row more are read; more than the cap throws `past`.
    private static func fetchWithinCap(_ request: FetchRequest, context: Context, past: VarlinkError) throws(VarlinkError) -> [Row] {
        let cap = Limits.maxSubscriptionRows
        var capped = request
        capped.limit = min(request.limit ?? cap + 1, cap + 1)
        let rows: [Row]
        do { rows = try context.fetch(capped) } catch { throw VarlinkError(error) }
        guard rows.count <= cap else { throw past }
        return rows
    }

    /// What the diff from `since` to a channel's result now needs, gathered on the loop: each
    /// row the commits since changed, as it was before them, and — for a limited window, which
    /// holds only its own rows — the query's rows now, up to the limit and one more per change
    /// (fetched here, bounded by the limit). Nil when the change ring no longer reaches back.
    func resumeBasis(for channel: Channel, since: Int64, context: Context) -> ResumeBasis? {
        guard let sets = context.changes(since: since) else { return nil }
        var before: [String: [String: AttributeValue]?] = [:]
        for set in sets {
            for change in set.changes where change.entity == channel.entity && before[change.uuid] == nil {
                before[change.uuid] = .some(change.old)
            }
        }
        var basis = ResumeBasis(before: before, current: nil)
        guard !before.isEmpty, let limit = channel.request.limit else { return basis }
        var request = channel.request
        request.limit = limit + before.count
        guard let current = try? context.fetch(request) else { return nil }
        basis.current = current.map(\.values)
        return basis
    }

    struct ResumeBasis: Sendable {
        var before: [String: [String: AttributeValue]?]
        /// The query's rows now (a limited window); nil: the window's own rows are the result.
        var current: [[String: AttributeValue]]?
    }

    /// The diff from the result a subscriber had at the basis's `since` to `window` (pure: runs
    /// on a reader, over a copy of the window).
    static func resumeDiff(_ window: ResultWindow, _ basis: ResumeBasis) -> QueryDiff {
        if basis.before.isEmpty { return QueryDiff() }
        let earlier = window.reconstructed(before: basis.before, current: basis.current ?? window.rows)
        return QueryDiff.between(earlier, window.rows, fields: window.fields, sortKeys: window.sorting.keys.map(\.attribute))
    }

    // MARK: - Wire

    /// The members of a "result" or "resync" reply (after `subscription`).
    static func resultBody(kind: String, sequence: Int64, from: Int64? = nil, _ window: ResultWindow) -> ArraySlice<UInt8> {
        body { w in
            w.key("kind"); w.string(kind)
            w.key("sequence"); w.integer(sequence)
            if let from { w.key("from"); w.integer(from) }
            w.key("rows")
            w.beginArray()
            for row in window.rows { WireValues.writeRow(window.fields, row, into: &w) }
            w.endArray()
        }
    }

    /// A subscriber's whole "result" or "resync" frame over `window` (on a reader: the window is
    /// a copy, and the loop goes on).
    static func resultFrame(subscription: Int, callID: JSON?, kind: String, sequence: Int64, from: Int64?, _ window: ResultWindow) -> [UInt8] {
        let body = resultBody(kind: kind, sequence: sequence, from: from, window)
        return frame(subscription: subscription, callID: callID, body)
    }

    /// The rows of a result as the wire writes them, `[{…},…]`: the `fields` of each row of a
    /// plan's result (on a reader).
    static func rowsJSON(_ result: ReadPlan.Result, attributes: [Attribute], fields: [String]) -> ArraySlice<UInt8> {
        let positions = fields.compactMap { name in attributes.firstIndex { $0.name == name } }
        var w = JSONStreamWriter(capacity: 256 + result.rows.count * 48 * max(1, positions.count))
        w.beginArray()
        for row in result.rows {
            w.beginObject()
            for i in positions {
                w.key(attributes[i].name)
                WireValues.write(row[i], into: &w)
            }
            w.endObject()
        }
        w.endArray()
        return w.finish()[...]
    }

    /// A subscriber's "result" or "resync" frame around rows already written (`rowsJSON`).
    static func resultFrame(_ s: Subscription, kind: String, sequence: Int64, from: Int64?, rows: ArraySlice<UInt8>) -> [UInt8] {
        Reply.frame(id: s.callID, continues: true, capacity: rows.count + 160) { w in
            w.key("subscription"); w.integer(Int64(s.id))
            w.key("kind"); w.string(kind)
            w.key("sequence"); w.integer(sequence)
            if let from { w.key("from"); w.integer(from) }
            w.key("rows"); w.encoded(rows)
        }
    }

    /// The members of a "diff" reply.
    static func diffBody(sequence: Int64, _ diff: QueryDiff, fields: [String]) -> ArraySlice<UInt8> {
        body { w in
            w.key("kind"); w.string("diff")
            w.key("sequence"); w.integer(sequence)
            objects("deleted", diff.deleted, &w) { d, w in
                w.key("uuid"); w.string(d.uuid)
                w.key("index"); w.integer(Int64(d.index))
            }
            objects("inserted", diff.inserted, &w) { i, w in
                w.key("uuid"); w.string(i.uuid)
                w.key("index"); w.integer(Int64(i.index))
                w.key("row"); WireValues.writeRow(fields, i.row, into: &w)
            }
            objects("updated", diff.updated, &w) { u, w in
                w.key("uuid"); w.string(u.uuid)
                w.key("index"); w.integer(Int64(u.index))
                w.key("changedKeys")
                w.beginArray()
                for k in u.changedKeys { w.string(k) }
                w.endArray()
                w.key("row"); WireValues.writeRow(fields, u.row, into: &w)
            }
            objects("moved", diff.moved, &w) { m, w in
                w.key("uuid"); w.string(m.uuid)
                w.key("from"); w.integer(Int64(m.from))
                w.key("to"); w.integer(Int64(m.to))
            }
        }
    }

    /// `"key":[{…},…]`, one object per item, its members written by `members`.
    private static func objects<T>(_ key: String, _ items: [T], _ w: inout JSONStreamWriter,
                                   _ members: (T, inout JSONStreamWriter) -> Void) {
        w.key(key)
        w.beginArray()
        for item in items {
            w.beginObject()
            members(item, &w)
            w.endObject()
        }
        w.endArray()
    }

    static func endBody(sequence: Int64) -> ArraySlice<UInt8> {
        body { w in
            w.key("kind"); w.string("end")
            w.key("sequence"); w.integer(sequence)
        }
    }

    /// One subscriber's frame: its subscription number, then the shared members.
    static func frame(_ s: Subscription, _ body: ArraySlice<UInt8>, continues: Bool = true) -> [UInt8] {
        frame(subscription: s.id, callID: s.callID, body, continues: continues)
    }

    static func frame(subscription: Int, callID: JSON?, _ body: ArraySlice<UInt8>, continues: Bool = true) -> [UInt8] {
        Reply.frame(id: callID, continues: continues, capacity: body.count + 64) { w in
            w.key("subscription"); w.integer(Int64(subscription))
            w.members(body)
        }
    }

    private static func body(_ write: (inout JSONStreamWriter) -> Void) -> ArraySlice<UInt8> {
        var w = JSONStreamWriter()
        w.beginObject()
        write(&w)
        w.endObject()
        let bytes = w.finish()
        return bytes[1..<(bytes.count - 1)]
    }
}
