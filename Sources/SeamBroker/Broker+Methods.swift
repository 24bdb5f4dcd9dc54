import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamStore
import SeamSystem

extension Broker {
    /// Answers one call with its reply frame. Every error becomes a varlink error reply; nothing
    /// here throws. Fetch writes its rows straight into the frame; the rest build parameters.
    func dispatch(_ call: Call, from c: Connection) -> [UInt8] {
        // Only saves and reads join a group commit; anything else finds the group's saves committed.
        if !Self.joinsGroup(call) { commitGroupNow() }
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
                if let uuid = call.parameters["uuid"], !uuid.isNull { return fetchOne(call.parameters, uuid, id: call.id) }
                return readOnReader(call, c)
            case "Count": return readOnReader(call, c)
            case "Save": return save(call.parameters, c, id: call.id, answers: !call.oneway)
            case "Status": result = .success(status())
            case "Subscribe": return subscribe(call, c)
            case "Unsubscribe": result = unsubscribe(call.parameters, c)
            default: result = .failure(.methodNotFound(call.method))
            }
        case "org.seam.Migration":
            return migrations.call(call, c)
        case "org.seam.Sync":
            return sync.call(call, c)
        case "org.seam.Maintenance":
            return maintenance.call(call, c)
        default:
            guard let service = configuration.interfaces.first(where: { $0.name == call.interface }) else {
                result = .failure(.interfaceNotFound(call.interface))
                break
            }
            let serviceCall = ServiceCall(context: context, author: c.hello?.author, clock: clock,
                                          check: { [unowned self] request in c.hello?.deniedWrite(request) }) { [unowned self] request, author throws(ContextError) in
                try self.commit(request, author: author)
            }
            result = service.handler(call.member, call.parameters, serviceCall)
        }
        switch result {
        case .success(let parameters): return Reply(parameters: parameters, id: call.id).frame()
        case .failure(let error): return Reply(error, id: call.id).frame()
        }
    }

    // MARK: - Capabilities

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

    // MARK: - org.seam.Store

    /// `Hello`: the connection holds what `Connection.Hello.negotiate` settles, if there is room
    /// for one more client.
    func hello(_ p: JSONObject, _ c: Connection) -> Result<JSONObject, VarlinkError> {
        let supervised = c.supervisedAs != nil && c.hello != nil
        let hello: Connection.Hello
        switch Connection.Hello.negotiate(p, assigned: supervised ? c.hello : nil, known: { self.context.schema.entity($0) != nil }) {
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
        endSubscriptionsOutsideCapabilities(c)
        if !supervised { log.debug("\(c.label) said hello") }
        return .success(hello.reply(sequence: context.sequence))
    }

    func entity(_ p: JSONObject) -> Result<Entity, VarlinkError> {
        guard let name = p["entity"]?.stringValue else { return .failure(.invalidParameter("entity")) }
        do { return .success(try context.servedEntity(name)) } catch {
            return .failure(VarlinkError(error))
        }
    }

    /// A fetch request from a call's parameters, for the entity as its store serves it
    /// (`WireRequests.fetch`).
    func request(_ p: JSONObject, defaultLimit: Int? = Limits.maxFetchRows, offset: Bool = true) -> Result<FetchRequest, VarlinkError> {
        entity(p).flatMap { WireRequests.fetch(p, entity: $0, schema: context.schema, defaultLimit: defaultLimit, offset: offset) }
    }

    /// `Fetch(entity, uuid)`: the one row with that uuid (or none), by the primary key.
    func fetchOne(_ p: JSONObject, _ uuid: JSON, id: JSON?) -> [UInt8] {
        guard let u = uuid.stringValue else { return Reply(.invalidParameter("uuid"), id: id).frame() }
        for key in ["predicate", "parameters", "sort", "limit", "offset"] where p[key] != nil && p[key] != .null {
            return Reply(.invalidRequest("a Fetch by uuid takes no \(key): the uuid names the one row", field: key), id: id).frame()
        }
        let e: Entity
        switch entity(p) {
        case .success(let x): e = x
        case .failure(let err): return Reply(err, id: id).frame()
        }
        if let fields = p["fields"], fields != .null {
            // Some attributes only (checked as any Fetch checks them): from the store, not the
            // cache, which holds whole rows.
            let r: FetchRequest
            switch request(p) {
            case .success(let x): r = x
            case .failure(let err): return Reply(err, id: id).frame()
            }
            let order = [Entity.identity] + (r.attributes ?? []).filter { $0 != Entity.identity }
            let row: (attributes: [Attribute], values: [AttributeValue])?
            do { row = try context.rowValues(e.name, u) } catch { return Reply(VarlinkError(error), id: id).frame() }
            let encoded = row.map { row in
                var w = JSONStreamWriter(capacity: 256)
                WireValues.writeRow(order, Dictionary(uniqueKeysWithValues: zip(row.attributes.map(\.name), row.values)), into: &w)
                return w.finish()
            }
            return ReadJobs.rowReply(encoded, sequence: context.sequence, id: id)
        }
        return cachedRow(e, u, id: id)
    }

    /// A fetch by uuid recognised from its frame's bytes (see `QuickFetch`): what `dispatch`
    /// and `fetchOne` do for the same call, without a JSON tree.
    func quickFetch(_ q: QuickFetch, from c: Connection) -> [UInt8] {
        if let denied = c.hello?.deniedRead(member: "Fetch", entity: q.entity) { return Reply(denied, id: q.id).frame() }
        let e: Entity
        do { e = try context.servedEntity(q.entity) } catch { return Reply(VarlinkError(error), id: q.id).frame() }
        return cachedRow(e, q.uuid, id: q.id)
    }

    /// The reply to a fetch of one whole row by uuid, from the row cache (filled on a miss).
    private func cachedRow(_ e: Entity, _ u: String, id: JSON?) -> [UInt8] {
        var encoded = rowCache.row(e.name, u)
        if encoded == nil {
            let row: (attributes: [Attribute], values: [AttributeValue])?
            do { row = try context.rowValues(e.name, u) } catch { return Reply(VarlinkError(error), id: id).frame() }
            if let row {
                var w = JSONStreamWriter(capacity: 256)
                WireValues.writeRow(row.attributes, row.values, into: &w)
                let bytes = w.finish()
                rowCache.store(bytes, e.name, u)
                encoded = bytes
            }
        }
        return ReadJobs.rowReply(encoded, sequence: context.sequence, id: id)
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
        if c.hello?.role == "plugin", request.operations.count > configuration.limits.pluginSaveOperations {
            return Reply(.limitReached("a plugin's Save carries at most \(configuration.limits.pluginSaveOperations) operations "
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
        return Self.saveReply(set, id: id, shows: shows)
    }

    /// Save's reply, written straight to its frame (the JSON tree it used to build cost more
    /// than writing it): the sequence number (null when nothing changed), and per change its
    /// store, entity, uuid, kind and changed keys.
    static func saveReply(_ set: ChangeSet?, id: JSON?, shows: ((String) -> Bool)? = nil) -> [UInt8] {
        let all = set?.changes ?? []
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
            if isLastSaveOfRound {
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

    /// When the stores changed in a way no change set told (`Context.resultsInvalidated`): every
    /// channel fetches its result afresh and every subscription is owed it as a resync, sent
    /// when its connection has read what is queued.
    func refetchIfInvalidated() {
        guard context.takeResultsInvalidated() else { return }
        log.warning("the stores changed outside a change set (a save that committed in part); every subscription resyncs")
        rowCache.removeAll()
        endSubscriptions(of: subscriptions.refetchAll(context: context))
        for c in connections.values where !c.subscriptions.isEmpty {
            owedResyncs(c)
            connections.flush(c)
        }
    }

    func status() -> JSONObject {
        let stores = storesStatus()
        return ["product": .string(Interfaces.product), "version": .string(Interfaces.version),
                "pid": .integer(Int64(Environment.processID)), "uptime": .double(clock.monotonic - startedAt),
                "connections": .integer(Int64(connections.count)), "subscriptions": .integer(Int64(subscriptions.count)),
                "channels": .integer(Int64(subscriptions.channels.count)), "sequence": .integer(context.sequence),
                "rss": .integer(Int64(Descriptors.residentBytes())), "stores": .array(stores), "roles": supervisor.status(),
                "plugins": connections.pluginsStatus(), "migration": migrations.status(), "backups": backupsStatus(),
                "maintenance": maintenance.status(), "readers": readers.status(limits: configuration.limits), "saveInSteps": steps.status(),
                "configurationProblems": .array(configuration.supervision.problems.map(JSON.string))]
    }
}
