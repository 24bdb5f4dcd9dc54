import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamSystem

/// The broker's side of sync (`org.seam.Sync`): the sync worker, which seamd starts once sync is
/// configured, reads the Cloud store's persistent history through `History`, says how far it
/// has exported with `Acknowledge` (the broker then forgets that history), hears of new local
/// commits through `Listen`, and reports its state for `seam sync status`. Its saves carry the
/// author `sync`, set here from the connection, so that imported changes are never exported
/// again.
final class SyncBridge {
    /// The worker's `Listen` calls, and its last `Report`.
    private var listeners: [(connection: Connection, callID: JSON?)] = []
    private var report: JSONObject?
    weak var sink: (any ReplySink)?
    private let context: Context
    private let supervisor: Supervisor
    /// Where `seam sync setup` writes the sync configuration (nil: seamd runs without roles).
    private let configurationPath: String?

    init(context: Context, supervisor: Supervisor, configurationPath: String?) {
        self.context = context
        self.supervisor = supervisor
        self.configurationPath = configurationPath
    }

    func call(_ call: Call, _ c: Connection) -> [UInt8] {
        let result: Result<JSONObject, VarlinkError>
        switch call.member {
        case "Status": result = .success(status())
        case "Now":
            guard c.hello != nil else { return Reply(.permissionDenied("say Hello first"), id: call.id).frame() }
            guard hasSyncWorker else {
                return Reply(.syncNotConfigured("sync is not configured: run `seam sync setup URL`"), id: call.id).frame()
            }
            tell(event: "now")
            result = .success([:])
        case "Reload":
            guard c.hello?.role == "cli" else { return Reply(.permissionDenied("Reload takes a client that said Hello as cli"), id: call.id).frame() }
            result = reloadSync()
        case "Served": result = .success(served())
        case "History", "Acknowledge", "Listen", "Report":
            guard c.hello?.role == "sync", c.supervisedAs != nil else {
                result = .failure(.permissionDenied("only the sync worker seamd started may call \(call.member)"))
                break
            }
            switch call.member {
            case "History": result = history(call.parameters)
            case "Acknowledge": result = acknowledge(call.parameters)
            case "Listen":
                guard call.more else { return Reply(.expectedMore, id: call.id).frame() }
                listeners.append((c, call.id))
                c.repliesOwed += 1  // a stream for as long as the connection lasts
                return Reply(parameters: ["event": .string("listening"), "sequence": .integer(context.sequence)],
                             continues: true, id: call.id).frame()
            default:
                report = call.parameters
                result = .success([:])
            }
        default: result = .failure(.methodNotFound(call.method))
        }
        switch result {
        case .success(let parameters): return Reply(parameters: parameters, id: call.id).frame()
        case .failure(let error): return Reply(error, id: call.id).frame()
        }
    }

    /// Whether the Cloud store has synced before: it holds the worker's export token (or the
    /// one a change of server keeps), so the history after it is what a later setup sends.
    static func hasSyncedBefore(_ context: Context) -> Bool {
        let exported = FetchRequest("SyncToken", where: #"name IN {"exported", "unexported"}"#)
        return ((try? context.count(exported)) ?? 0) > 0
    }

    /// Starts, restarts or stops the sync worker as the sync configuration now says.
    private func reloadSync() -> Result<JSONObject, VarlinkError> {
        guard let path = configurationPath else {
            return .failure(.syncNotConfigured("this seamd runs without roles (--no-roles): restart it with them to sync"))
        }
        let existing = supervisor.active(role: "sync")
        let configured = FileSystem.exists(path)
        // History waits for the worker to export it while sync is set up, or while a store that
        // synced before may sync again (sync off, or seamd without roles): a setup later sends
        // the edits made meanwhile from it. Forgotten by age only in a store that never synced.
        context.syncConfigured = configured || Self.hasSyncedBefore(context)
        switch (configured, existing) {
        case (true, nil):
            // A worker retired before and ended is forgotten; one still ending is left to end.
            supervisor.launch(SupervisedProcess(spec: SupervisorConfiguration.syncWorker(configuration: path)))
            return .success(["action": .string("started")])
        case (true, let p?):
            // It comes back with the new configuration at once (once it has ended, if it runs).
            supervisor.restartNow(p)
            return .success(["action": .string("restarted")])
        case (false, let p?):
            supervisor.retire(p)
            report = nil
            return .success(["action": .string("stopped")])
        case (false, nil):
            return .success(["action": .string("none")])
        }
    }

    private var hasSyncWorker: Bool { supervisor.active(role: "sync") != nil }

    /// The history after `since`, oldest first: one entry per changed row, its row as the wire
    /// encodes rows (null for a delete). `limit` bounds the rows, not the saves (one save may
    /// change thousands): whole saves are taken until it is reached, and at least one.
    private func history(_ p: JSONObject) -> Result<JSONObject, VarlinkError> {
        guard let since = p["since"]?.int64Value, since >= 0 else { return .failure(.invalidParameter("since")) }
        let limit = Int(p["limit"]?.int64Value ?? 1000)
        guard (1...10_000).contains(limit) else { return .failure(.invalidParameter("limit")) }
        var changes: [JSON] = []
        var last = since
        read: while true {
            let sets: [ChangeSet]
            do { sets = try context.history(since: last, limit: 64) } catch { return .failure(VarlinkError(error)) }
            if sets.isEmpty { break }
            for set in sets {
                if !changes.isEmpty && changes.count + set.changes.count > limit { break read }
                for change in set.changes {
                    let order = context.schema.entity(change.entity)?.entity.attributes.map(\.name) ?? []
                    changes.append(.object([
                        "sequence": .integer(set.sequence), "author": .string(set.author), "time": .double(set.time),
                        "entity": .string(change.entity), "uuid": .string(change.uuid), "kind": .string(change.kind.rawValue),
                        "changedKeys": .array(change.changedKeys.map(JSON.string)),
                        "row": change.new.map { WireValues.encode($0, order: order) } ?? .null,
                    ]))
                }
                last = set.sequence
                if changes.count >= limit { break read }
            }
        }
        return .success(["changes": .array(changes), "last": .integer(last), "sequence": .integer(context.sequence)])
    }

    private func acknowledge(_ p: JSONObject) -> Result<JSONObject, VarlinkError> {
        guard let through = p["through"]?.int64Value, through >= 0 else { return .failure(.invalidParameter("through")) }
        do { try context.purgeHistory(through: min(through, context.sequence)) } catch { return .failure(VarlinkError(error)) }
        return .success([:])
    }

    /// The entities of the synced configuration as their store holds them now (an older
    /// version while it awaits migration; none while it is closed), with their models.
    private func served() -> JSONObject {
        let synced = context.options.historyConfiguration
        var entities: [JSON] = []
        for model in context.schema.models {
            for e in model.current.entities(in: synced) {
                guard let served = try? context.servedEntity(e.name) else { continue }
                entities.append(.object(["name": .string(e.name), "model": .string(model.name),
                                         "attributes": .array(served.attributes.map { .string($0.name) }),
                                         "encrypted": .array(encrypted(e, served: served))]))
            }
        }
        return ["entities": .array(entities)]
    }

    /// The attributes of `served` the worker seals: those this build's model marks `encrypted`
    /// (a store still at an older version seals them too: the marks say what must not leave the
    /// machine in clear, whatever version the file is at).
    private func encrypted(_ current: Entity, served: Entity) -> [JSON] {
        let marked = Set(current.attributes.filter { $0.transformer == .encrypted }.map(\.name))
        return served.attributes.filter { marked.contains($0.name) }.map { .string($0.name) }
    }

    /// Tells the sync worker something happened: a local commit it has to export, or a
    /// person asking for a sync now.
    func tell(event: String) {
        guard !listeners.isEmpty else { return }
        listeners.removeAll { $0.connection.closed }
        let frame = Reply(parameters: ["event": .string(event), "sequence": .integer(context.sequence)], continues: true, id: nil)
        for (c, id) in listeners {
            var r = frame
            r.id = id
            sink?.deliver(r.frame(), to: c)
        }
    }

    /// After a commit: the sync worker hears of it unless the worker made it, or it touched
    /// nothing that syncs.
    func noteCommit(_ set: ChangeSet) {
        guard !listeners.isEmpty, set.author != "sync" else { return }
        let synced = context.options.historyConfiguration
        guard set.changes.contains(where: { $0.store == synced }) else { return }
        tell(event: "commit")
    }

    func status() -> JSONObject {
        let worker = supervisor.active(role: "sync")
        var o: JSONObject = ["configured": .bool(worker != nil), "running": .bool(worker?.pid != nil)]
        if let report { for (k, v) in report { o[k] = v } }
        // A worker that is not running says nothing itself: how it last ended does.
        if let worker, worker.pid == nil, let e = worker.lastError { o["lastError"] = .string(e) }
        return o
    }
}
