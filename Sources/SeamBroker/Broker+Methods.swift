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
            case "GetInfo": result = .success(getInfo())
            case "GetInterfaceDescription": result = describe(call.parameters)
            default: result = .failure(.methodNotFound(call.method))
            }
        case "org.seam.Store":
            if let denied = deniedRead(c, call) { return Reply(denied, id: call.id).frame() }
            switch call.member {
            case "Hello": result = hello(call.parameters, c)
            case "Schema": result = .success(schemaInfo())
            case "Fetch":
                if let uuid = call.parameters["uuid"], !uuid.isNull { return fetch(call.parameters, id: call.id) }
                return fetchOnReader(call.parameters, id: call.id, c)
            case "Count": return countOnReader(call.parameters, id: call.id, c)
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
                                          check: { [unowned self] request in self.deniedWrite(c, request) }) { [unowned self] request, author throws(ContextError) in
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

    /// A Fetch, Count or Subscribe of an entity the connection did not declare it reads.
    func deniedRead(_ c: Connection, _ call: Call) -> VarlinkError? {
        deniedRead(c, member: call.member, entity: call.parameters["entity"]?.stringValue)
    }

    func deniedRead(_ c: Connection, member: String, entity: String?) -> VarlinkError? {
        guard let hello = c.hello, hello.capabilities.reads != nil else { return nil }
        switch member {
        case "Fetch", "Count", "Subscribe": break
        default: return nil
        }
        guard let entity, !hello.capabilities.mayRead(entity) else { return nil }
        return .permissionDenied("\(hello.author) may read \(Capabilities.describe(hello.capabilities.reads))"
                                 + (hello.declared ? " (declared in its Hello)" : " (a plugin reads only what its Hello declares)")
                                 + ", not \(entity); declare it in capabilities.reads")
    }

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

    /// A save that touches an entity the connection may not write.
    func deniedWrite(_ c: Connection, _ request: SaveRequest) -> VarlinkError? {
        guard let hello = c.hello else { return nil }
        for op in request.operations {
            let entity: String
            switch op {
            case .insert(let e, _), .update(let e, _, _), .delete(let e, _): entity = e
            }
            guard !hello.capabilities.mayWrite(entity) else { continue }
            let may = Capabilities.describe(hello.capabilities.writes)
            return .permissionDenied("\(hello.author) may write \(may)"
                                     + (hello.declared ? " (declared in its Hello)" : " (a plugin writes only what its Hello declares)")
                                     + ", not \(entity); declare it in capabilities.writes")
        }
        return nil
    }

    // MARK: - org.varlink.service

    /// Every interface served: the broker's own and the application's.
    var interfaceDescriptions: [String: String] {
        var all = Interfaces.all
        for i in configuration.interfaces { all[i.name] = i.description }
        return all
    }

    func getInfo() -> JSONObject {
        ["vendor": .string(Interfaces.vendor), "product": .string(Interfaces.product), "version": .string(Interfaces.version),
         "url": .string(Interfaces.url), "interfaces": .array(interfaceDescriptions.keys.sorted().map(JSON.string))]
    }

    func describe(_ p: JSONObject) -> Result<JSONObject, VarlinkError> {
        guard let name = p["interface"]?.stringValue else { return .failure(.invalidParameter("interface")) }
        guard let text = interfaceDescriptions[name] else { return .failure(.interfaceNotFound(name)) }
        return .success(["description": .string(text)])
    }

    // MARK: - org.seam.Store

    /// Roles only the connections seamd hands to the processes it starts may hold.
    static let builtInRoles: Set<String> = ["ticker", "migrate", "sync"]

    func hello(_ p: JSONObject, _ c: Connection) -> Result<JSONObject, VarlinkError> {
        guard let version = p["version"]?.int64Value else { return .failure(.invalidParameter("version")) }
        guard Interfaces.protocolVersions.contains(Int(version)) else {
            return .failure(.unsupportedVersion(Interfaces.protocolVersions))
        }
        var declared: Capabilities?
        if let json = p["capabilities"], !json.isNull {
            switch Capabilities.parse(json, known: { self.context.schema.entity($0) != nil }) {
            case .success(let caps): declared = caps
            case .failure(let e): return .failure(e)
            }
        }
        if c.supervisedAs != nil, var assigned = c.hello {
            // seamd handed this connection to a process it started: the role is already known
            // and is not the client's to change; Hello settles the version and may narrow what
            // it touches.
            assigned.version = Int(version)
            if let declared {
                assigned.capabilities = declared
                assigned.declared = true
            }
            c.hello = assigned
            endSubscriptionsOutsideCapabilities(c)
            return .success(["version": .integer(version), "role": .string(assigned.role), "author": .string(assigned.author),
                             "product": .string("\(Interfaces.product) \(Interfaces.version)"), "sequence": .integer(context.sequence)])
        }
        let role: String
        switch p["role"] {
        case nil, .null?: role = "cli"
        case .string(let r)?: role = r
        default: return .failure(.invalidParameter("role"))
        }
        let name: String?
        switch p["name"] {
        case nil, .null?: name = nil
        case .string(let n)?: name = n
        default: return .failure(.invalidParameter("name"))
        }
        if let name, !Self.isValidName(name) {
            return .failure(.invalidRequest("a client name is 1 to 64 letters, digits, '-', '_' or '.'", field: "name"))
        }
        let author: String
        switch role {
        case "cli": author = "cli"
        case "plugin":
            guard let name else { return .failure(.invalidRequest("a plugin says its name", field: "name")) }
            author = "plugin:\(name)"
        case _ where Self.builtInRoles.contains(role):
            return .failure(.permissionDenied("the role '\(role)' belongs to a process seamd starts; a client that connects by "
                                              + "itself is 'cli' or 'plugin'"))
        default:
            return .failure(.invalidRequest("unknown role '\(role)': use 'cli' or 'plugin'", field: "role"))
        }
        // Let in on the reserve past the cap (`Limits.reservedConnections`): a person's `seam`
        // stays; anyone else takes the place of an idle connection, or is turned away.
        if role != "cli", connections.clientConnections > Limits.maxConnectionsPerUID {
            if let idle = connections.oldestIdleConnection(sparing: c) {
                log.info("closing \(idle.label), the oldest idle connection, for \(c.label)")
                connections.close(idle)
            } else {
                _ = loop.after(0) { [unowned self] in connections.close(c) }
                return .failure(.limitReached("this user holds \(Limits.maxConnectionsPerUID) connections, each of them in use; "
                                              + "close some (seam status lists them) and connect again"))
            }
        }
        c.hello = Connection.Hello(version: Int(version), role: role, name: name, author: author,
                                   capabilities: declared ?? (role == "plugin" ? .nothing : .everything), declared: declared != nil)
        endSubscriptionsOutsideCapabilities(c)
        log.debug("\(c.label) said hello")
        return .success(["version": .integer(version), "role": .string(role), "author": .string(author),
                         "product": .string("\(Interfaces.product) \(Interfaces.version)"), "sequence": .integer(context.sequence)])
    }

    static func isValidName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && s.utf8.allSatisfy { b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 45 || b == 95 || b == 46
        }
    }

    func schemaInfo() -> JSONObject {
        let models: [JSON] = context.schema.models.map { m in
            let v = m.current
            let entities: [JSON] = v.entities.map { e in
                .object(["name": .string(e.name), "configuration": .string(v.configuration(of: e.name) ?? ""),
                         "attributes": .array(e.attributes.map { a in
                             .object(["name": .string(a.name), "type": .string(a.type.rawValue), "optional": .bool(a.isOptional)])
                         }),
                         "links": .array(e.links.map { l in
                             .object(["attribute": .string(l.attribute), "target": .string(l.target),
                                      "deleteRule": .string(l.deleteRule.rawValue)])
                         })])
            }
            return .object(["name": .string(m.name), "version": .integer(Int64(v.version)), "hash": .string(v.hashes.model),
                            "configurations": .object(JSONObject(uniqueKeysWithValues: v.hashes.configurations.sorted { $0.key < $1.key }
                                .map { ($0.key, JSON.string($0.value)) })),
                            "entities": .array(entities)])
        }
        return ["models": .array(models)]
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

    /// `Fetch`: the rows are written from the store straight into the reply's bytes.
    func fetch(_ p: JSONObject, id: JSON?) -> [UInt8] {
        if let uuid = p["uuid"], !uuid.isNull { return fetchOne(p, uuid, id: id) }
        let r: FetchRequest
        switch request(p) {
        case .success(let x): r = x
        case .failure(let e): return Reply(e, id: id).frame()
        }
        let rows: [Row]
        do { rows = try context.fetch(r) } catch { return Reply(VarlinkError(error), id: id).frame() }
        let order = r.attributes.map { [Entity.identity] + $0.filter { $0 != Entity.identity } }
            ?? context.schema.entity(r.entity)!.entity.attributes.map(\.name)
        let sequence = context.sequence
        return Reply.frame(id: id, capacity: 256 + rows.count * 64 * order.count) { w in
            w.key("rows")
            w.beginArray()
            for row in rows {
                w.beginObject()
                for name in order {
                    guard let v = row.values[name] else { continue }
                    w.key(name)
                    WireValues.write(v, into: &w)
                }
                w.endObject()
            }
            w.endArray()
            w.key("sequence")
            w.integer(sequence)
        }
    }

    /// `Fetch(entity, uuid)`: the one row with that uuid (or none), by the primary key.
    private func fetchOne(_ p: JSONObject, _ uuid: JSON, id: JSON?) -> [UInt8] {
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
            let sequence = context.sequence
            return Reply.frame(id: id) { w in
                w.key("rows")
                w.beginArray()
                if let row { WireValues.writeRow(order, Dictionary(uniqueKeysWithValues: zip(row.attributes.map(\.name), row.values)), into: &w) }
                w.endArray()
                w.key("sequence")
                w.integer(sequence)
            }
        }
        return cachedRow(e, u, id: id)
    }

    /// A fetch by uuid recognised from its frame's bytes (see `QuickFetch`): what `dispatch`
    /// and `fetchOne` do for the same call, without a JSON tree.
    func quickFetch(_ q: QuickFetch, from c: Connection) -> [UInt8] {
        if let denied = deniedRead(c, member: "Fetch", entity: q.entity) { return Reply(denied, id: q.id).frame() }
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
        let sequence = context.sequence
        return Reply.frame(id: id, capacity: 96 + (encoded?.count ?? 0)) { w in
            w.key("rows")
            w.beginArray()
            if let encoded { w.encoded(encoded[...]) }
            w.endArray()
            w.key("sequence")
            w.integer(sequence)
        }
    }

    func count(_ p: JSONObject) -> Result<JSONObject, VarlinkError> {
        var r: FetchRequest
        // Count takes no sort, limit, offset or fields; like any parameter a method does not know,
        // they are ignored (not checked, and no ORDER BY for a count).
        var p = p
        for ignored in ["sort", "limit", "offset", "fields"] { p[ignored] = nil }
        switch request(p) {
        case .success(let x): r = x
        case .failure(let e): return .failure(e)
        }
        r.limit = nil
        do {
            return .success(["count": .integer(Int64(try context.count(r))), "sequence": .integer(context.sequence)])
        } catch {
            return .failure(VarlinkError(error))
        }
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
        if let denied = deniedWrite(c, request) { return Reply(denied, id: id).frame() }
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
                "plugins": pluginsStatus(), "migration": migrations.status(), "backups": backupsStatus(),
                "maintenance": maintenance.status(), "readers": readersStatus(), "saveInSteps": steps.status(),
                "configurationProblems": .array(configuration.supervision.problems.map(JSON.string))]
    }

    /// The reader threads: jobs waiting and running in each lane, and the limits they run under.
    func readersStatus() -> JSON {
        let load = readers.load
        let limits = configuration.limits
        return .object([
            "light": .object(["threads": .integer(Int64(readers.threads.light)), "waiting": .integer(Int64(load.light.waiting)),
                              "running": .integer(Int64(load.light.running))]),
            "heavy": .object(["threads": .integer(Int64(readers.threads.heavy)), "waiting": .integer(Int64(load.heavy.waiting)),
                              "running": .integer(Int64(load.heavy.running))]),
            "limits": .object(["predicateCost": .integer(Int64(limits.predicateCost)), "querySeconds": .double(limits.querySeconds),
                               "callsPerTurn": .integer(Int64(limits.callsPerTurn)),
                               "pluginSaveOperations": .integer(Int64(limits.pluginSaveOperations)),
                               "checkpointFrames": .integer(Int64(limits.checkpointFrames))]),
        ])
    }

    /// The plugins connected now, with what they may read and write (null: every entity).
    func pluginsStatus() -> JSON {
        let plugins = connections.values.filter { $0.hello?.role == "plugin" }.sorted { $0.id < $1.id }
        return .array(plugins.map { c in
            var o: JSONObject = ["name": .string(c.hello?.name ?? ""), "author": .string(c.hello?.author ?? ""),
                                 "pid": .integer(Int64(c.peer.pid)), "supervised": .bool(c.supervisedAs != nil),
                                 "declared": .bool(c.hello?.declared ?? false)]
            for (k, v) in (c.hello?.capabilities ?? .everything).json { o[k] = v }
            return .object(o)
        })
    }
}
