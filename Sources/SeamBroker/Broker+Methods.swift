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
                return readOnReader(call, c)
            case "Count": return readOnReader(call, c)
            case "Save": return saves.save(call.parameters, c, id: call.id, answers: !call.oneway)
            case "Status": result = .success(status())
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
            return metricsCall(call, c)
        default:
            guard let service = configuration.interfaces.first(where: { $0.name == call.interface }) else {
                result = .failure(.interfaceNotFound(call.interface))
                break
            }
            let serviceCall = ServiceCall(context: context, author: c.hello?.author, clock: clock,
                                          check: { request in c.hello?.deniedWrite(request) }) { [unowned self] request, author throws(ContextError) in
                try self.commit(request, author: author)
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

    func status() -> JSONObject {
        let stores = StoreReport.stores(context, dataDirectory: configuration.dataDirectory, isMigrating: migrations.isMigrating)
        return ["product": .string(Interfaces.product), "version": .string(Interfaces.version),
                "pid": .integer(Int64(Environment.processID)), "uptime": .double(clock.monotonic - startedAt),
                "connections": .integer(Int64(connections.count)), "subscriptions": .integer(Int64(subscriptions.count)),
                "channels": .integer(Int64(subscriptions.channels.count)), "sequence": .integer(context.sequence),
                "rss": .integer(Int64(Descriptors.residentBytes())), "stores": .array(stores), "roles": supervisor.status(),
                "plugins": connections.pluginsStatus(), "migration": migrations.status(), "backups": StoreReport.backups(dataDirectory: configuration.dataDirectory),
                "maintenance": maintenance.status(), "readers": readers.status(limits: configuration.limits), "saveInSteps": steps.status(),
                "configurationProblems": .array(configuration.supervision.problems.map(JSON.string))]
    }
}
