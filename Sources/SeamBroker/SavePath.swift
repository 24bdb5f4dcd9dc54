import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema

/// What the save path asks of the broker that hosts it.
protocol SavePathHost: AnyObject {
    /// Whether the save being handled is the last the round's group can take (`TurnScheduler`).
    var isLastSaveOfRound: Bool { get }
}

/// Every save's way through the broker, from a call read on either path (`QuickSave`, or a
/// parsed `Save`) or a service method's commit: the limits and capabilities that refuse it, a
/// big one handed to `SteppedSaves`, the commit, subscribers and the sync worker told, cached
/// rows forgotten, the reply written; and group commit, below. One thread: the loop's.
///
/// Group commit (full durability): the saves of one round of turns — from as many connections as
/// had one queued — are applied in one transaction per store file and committed together at the
/// round's end (`Context+Group`), each with its own sequence number, change set and reply; the
/// loop then syncs them once, at the end of its round, before it waits again.
///
/// Nothing leaves seamd about a save before it is committed and, at full durability, on the
/// disk: a reply or a diff sent meanwhile (to the saver, a subscriber, or a reader who could see
/// the new rows) is queued on its connection and the connection held (`heldForSync`) — `send`
/// and `flush` do so whenever `mustHoldOutput` says — until `releaseHeld` has synced. Each
/// connection's frames stay in the order they were queued, so subscribers see commits in order.
///
/// Should the group's commit fail (a full disk, an I/O error), what was held is false: the
/// connections holding it are closed without it (as if seamd had crashed: none of the group's
/// saves is certain to be there), and every subscription resyncs.
final class SavePath {
    weak var host: (any SavePathHost)?
    private let context: Context
    private let connections: ConnectionTable
    private let subscribers: Subscribers
    private let steps: SteppedSaves
    private let sync: SyncBridge
    private let log: Logger
    /// Rows by uuid as the wire encodes them, for `Fetch` by uuid; every save evicts what it touched.
    let rowCache: RowCache
    /// The most operations a plugin's save may carry (`BrokerLimits.pluginSaveOperations`).
    private let pluginSaveOperations: Int
    /// Where commit sizes are counted.
    private let metrics: BrokerMetrics
    /// Each entity's attribute types by name (`attributeTypes`).
    private var attributeTypesByEntity: [String: [String: AttributeType]] = [:]
    /// Connections with replies or diffs held until the saves of this round are on the disk.
    private(set) var heldForSync: [ObjectIdentifier: Connection] = [:]

    init(context: Context, connections: ConnectionTable, subscribers: Subscribers, steps: SteppedSaves, sync: SyncBridge,
         log: Logger, rowCache: RowCache, pluginSaveOperations: Int, metrics: BrokerMetrics = BrokerMetrics(enabled: false)) {
        self.metrics = metrics
        self.context = context
        self.connections = connections
        self.subscribers = subscribers
        self.steps = steps
        self.sync = sync
        self.log = log
        self.rowCache = rowCache
        self.pluginSaveOperations = pluginSaveOperations
    }

    /// A Save read by the general path: its reply frame.
    func save(_ p: JSONObject, _ c: Connection, id: JSON?, answers: Bool = true) -> [UInt8] {
        switch saveRequest(p, c) {
        case .success(let (request, author)): return save(request, author: author, c, id: id, answers: answers)
        case .failure(let error): return Reply(error, id: id).frame()
        }
    }

    /// Save's parameters read into a request, with the author that saves it.
    private func saveRequest(_ p: JSONObject, _ c: Connection) -> Result<(SaveRequest, String), VarlinkError> {
        guard let hello = c.hello else {
            return .failure(.permissionDenied("this connection is read-only: call org.seam.Store.Hello before saving"))
        }
        return WireRequests.save(p, schema: context.schema, types: attributeTypes).map { ($0, hello.author) }
    }

    /// A save recognised from its frame's bytes (see `QuickSave`): the reply `dispatch` would
    /// give the same call, or nil when the general path must read it (no Hello yet, an entity,
    /// attribute or value it refuses: its errors are written in one place).
    func quickSave(_ q: QuickSave, from c: Connection) -> [UInt8]? {
        guard let hello = c.hello, let request = WireRequests.save(q, schema: context.schema, types: attributeTypes) else { return nil }
        return save(request, author: hello.author, c, id: q.id)
    }

    /// `e`'s attribute types by name, made once per entity: a save looks up every value's.
    func attributeTypes(_ e: Entity) -> [String: AttributeType] {
        if let known = attributeTypesByEntity[e.name] { return known }
        let made = e.attributeTypes
        attributeTypesByEntity[e.name] = made
        return made
    }

    /// What both paths do with a save read from its call: limits, capabilities, the commit, the
    /// reply frame.
    func save(_ request: SaveRequest, author: String, _ c: Connection, id: JSON?, answers: Bool = true) -> [UInt8] {
        guard request.operations.count <= Limits.maxSaveOperations else {
            return Reply(.invalidRequest("a save holds at most \(Limits.maxSaveOperations) operations"), id: id).frame()
        }
        // A plugin's save holds the loop, and every other writer of its store, for as long as it
        // takes: it is held to fewer operations than a person's or a role's.
        if c.hello?.role == "plugin", request.operations.count > pluginSaveOperations {
            return Reply(.limitReached("a plugin's Save carries at most \(pluginSaveOperations) operations "
                                       + "(limits.pluginSaveOperations), this one \(request.operations.count); split it into several "
                                       + "saves, each of which is atomic"), id: id).frame()
        }
        if let denied = c.hello?.deniedWrite(request) { return Reply(denied, id: id).frame() }
        // A big one is written in steps, between everyone else's calls (`SteppedSaves`).
        if let begun = steps.begin(request, author: author, c, id: id, answers: answers) { return begun }
        let set: ChangeSet?
        do { set = try commit(request, author: author) } catch { return Reply(WireRequests.error(error, in: request), id: id).frame() }
        // Link rules may change rows of entities the caller may not read (the broker's doing,
        // as PROTOCOL.md says); the reply lists only those it may.
        let shows = c.hello.flatMap { $0.capabilities.reads == nil ? nil : $0.capabilities.mayRead }
        return Self.reply(set, id: id, shows: shows, as: request.reply)
    }

    /// Save's reply, written straight to its frame (the JSON tree it used to build cost more
    /// than writing it): the sequence number (null when nothing changed), and per change its
    /// store, entity, uuid, kind and changed keys — or, when the caller asked for `count`, how
    /// many changes there were (`changed`) instead of the list.
    static func reply(_ set: ChangeSet?, id: JSON?, shows: ((String) -> Bool)? = nil, as shape: SaveRequest.Reply = .changes) -> [UInt8] {
        let all = set?.changes ?? []
        if shape == .count {
            let changed = shows.map { shows in all.lazy.filter { shows($0.entity) }.count } ?? all.count
            return Reply.frame(id: id, capacity: 64) { w in
                w.key("sequence")
                if let set { w.integer(set.sequence) } else { w.null() }
                w.key("changed")
                w.integer(Int64(changed))
            }
        }
        let changes = shows.map { shows in all.filter { shows($0.entity) } } ?? all
        return Reply.frame(id: id, capacity: 96 + changes.reduce(0) { $0 + 128 + 16 * $1.changedKeys.count }) { w in
            w.key("sequence")
            if let set { w.integer(set.sequence) } else { w.null() }
            w.key("changes")
            w.beginArray()
            for change in changes {
                w.beginObject()
                w.key("store"); w.string(change.store)
                w.key("entity"); w.string(change.entity)
                w.key("uuid"); w.string(change.uuid)
                w.key("kind"); w.string(change.kind.rawValue)
                w.key("changedKeys")
                w.beginArray()
                for key in change.changedKeys { w.string(key) }
                w.endArray()
                w.endObject()
            }
            w.endArray()
        }
    }

    /// Every save goes through here: the context commits, subscribers hear of it, cached rows it
    /// touched are forgotten. A save that fails forgets every cached row (a two-file save may
    /// have committed one file before failing).
    @discardableResult
    func commit(_ request: SaveRequest, author: String) throws(ContextError) -> ChangeSet? {
        do throws(ContextError) {
            // A save that committed in part is finished first; the results it changes are then
            // fetched afresh, before this save's change set is applied to them.
            try context.finishUnfinished()
            refetchIfInvalidated()
            guard let set = try context.save(request, author: author) else { return nil }
            // The round's last save commits at once, so that the disk takes it while its diffs
            // are worked out (a lone save waits no longer than it did before groups).
            if host?.isLastSaveOfRound == true {
                do throws(ContextError) { try context.commitGroup() } catch {
                    groupFailed(error)
                    throw error
                }
            }
            publish(set)
            sync.noteCommit(set)
            return set
        } catch {
            context.syncCommits()  // a save that failed after committing: still on the disk before its error is told
            rowCache.removeAll()
            refetchIfInvalidated()  // it committed in part: no change set tells what changed
            throw error
        }
    }

    /// Tells the subscribers of what a commit changed (`Subscribers.publish`); cached rows it
    /// touched are forgotten first.
    func publish(_ set: ChangeSet) {
        metrics.committed(rows: set.changes.count)
        rowCache.evict(set)
        subscribers.publish(set)
    }

    /// When the stores changed in a way no change set told (`Context.resultsInvalidated`): every
    /// channel fetches its result afresh and every subscription is owed it as a resync, sent
    /// when its connection has read what is queued.
    func refetchIfInvalidated() {
        guard context.takeResultsInvalidated() else { return }
        log.warning("the stores changed outside a change set (a save that committed in part); every subscription resyncs")
        rowCache.removeAll()
        subscribers.endSubscriptions(of: subscribers.subscriptions.refetchAll(context: context))
        for c in connections.values where !c.subscriptions.isEmpty {
            subscribers.owedResyncs(c)
            connections.flush(c)
        }
    }

    // MARK: - Group commit

    /// Whether output must wait: saves applied and not committed, or committed and not yet on the disk.
    var mustHoldOutput: Bool { context.groupHoldsSaves || context.syncPending }

    /// The calls that may run inside a group: saves, and reads, which see its saves.
    static func joinsGroup(_ call: Call) -> Bool {
        switch call.interface {
        case "org.varlink.service": return true
        case "org.seam.Store": return ["Save", "Fetch", "Count", "Subscribe", "Unsubscribe", "Hello", "Schema", "Status"].contains(call.member)
        default: return false
        }
    }

    /// Opens the round's group — with full durability only. There a save's reply waits for a
    /// sync anyway, and the round's saves share it; with normal durability a reply goes as soon
    /// as its save commits, and holding it for the rest of the round cost the ticker's alarms
    /// (lateness p99 0.6 → 1.2–2.2 ms with no other writer) more than the shared pages saved.
    func beginGroup() {
        if context.options.durability == .full { context.beginGroup() }
    }

    /// Commits the round's group (at its end).
    func endGroup() {
        do throws(ContextError) { try context.endGroup() } catch { groupFailed(error) }
    }

    /// Commits what the group holds now, before a call that does not join it.
    func commitGroupNow() {
        do throws(ContextError) { try context.commitGroup() } catch { groupFailed(error) }
    }

    func groupFailed(_ error: ContextError) {
        let held = Array(heldForSync.values)
        log.error("saves committed together failed: \(error); closing the \(held.count) connection(s) holding replies or diffs "
                  + "about them (none of those saves is certain to be there; their clients reconnect and look), and every "
                  + "subscription resyncs")
        heldForSync.removeAll()
        for c in held where !c.closed { connections.close(c) }
        rowCache.removeAll()
        refetchIfInvalidated()
    }

    /// Holds `c`'s queued output until the round's saves are committed and on the disk.
    func holdForSync(_ c: Connection) {
        heldForSync[ObjectIdentifier(c)] = c
    }

    /// At the end of each round of the loop: syncs the round's saves (one flush of each store's
    /// WAL for all of them), then sends what waited for it.
    func releaseHeld() {
        guard context.syncPending || !heldForSync.isEmpty else { return }
        if context.groupHoldsSaves { endGroup() }  // a group left open outside turns: committed first
        context.syncCommits()
        let held = heldForSync.values
        heldForSync.removeAll(keepingCapacity: true)
        for c in held where !c.closed { connections.flush(c) }
    }

    /// Forgets every connection held for a sync (at shutdown, once the stores are synced).
    func dropHeld() { heldForSync.removeAll() }
}
