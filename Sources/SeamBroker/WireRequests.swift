import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema

/// What a call's parameters ask of the stores, read against the schema — a fetch, a save — and
/// a save's error as the client is told it. Pure: no store, no connection, no loop; so a big save
/// is read off the loop (`CallHandler.readBigSaveOffLoop`), and each rule is tested without a broker.
enum WireRequests {
    /// The id of a call whose frame failed to decode for a number too large for a double (and
    /// for nothing else), when the id itself could be read: its error then reaches its caller.
    static func readableID(of frame: ArraySlice<UInt8>, after error: JSONError) -> JSON? {
        guard error.kind == .numberOutOfRange else { return nil }
        var lenient = JSONLimits(maxDepth: Limits.maxJSONDepth)
        lenient.outOfRangeNumbersAsNull = true
        switch (try? JSON.decode(frame, limits: lenient))?["id"] {
        case .integer(let n)?: return .integer(n)
        case .string(let s)?: return .string(s)
        default: return nil
        }
    }

    /// A fetch request from a call's parameters, for entity `e` as its store serves it. Without
    /// a limit, Fetch returns at most `Limits.maxFetchRows` (`defaultLimit`); a subscription has
    /// no limit unless it asks.
    static func fetch(_ p: JSONObject, entity e: Entity, schema: Schema, defaultLimit: Int? = Limits.maxFetchRows,
                      offset allowsOffset: Bool = true) -> Result<FetchRequest, VarlinkError> {
        var r = FetchRequest(e.name)
        switch p["predicate"] {
        case nil, .null?: break
        case .string(let s)?: r.predicate = s
        default: return .failure(.invalidParameter("predicate"))
        }
        switch p["parameters"] {
        case nil, .null?: break
        case .object(let o)?:
            for (k, v) in o {
                guard let value = WireValues.parameter(v) else { return .failure(.invalidParameter("parameters.\(k)")) }
                r.parameters[k] = value
            }
        default: return .failure(.invalidParameter("parameters"))
        }
        switch p["sort"] {
        case nil, .null?: break
        case .string(let s)?: r.sort = s
        default: return .failure(.invalidParameter("sort"))
        }
        // An integer out of range is a request that does not check (InvalidRequest naming it,
        // as PROTOCOL.md says); anything else, a parameter of the wrong type.
        switch p["limit"] {
        case nil, .null?: break
        case .integer(let n)? where n >= 0 && n <= Int64(Limits.maxFetchRows): r.limit = Int(n)
        case .integer(let n)?:
            return .failure(.invalidRequest("limit is 0 to \(Limits.maxFetchRows), not \(n)", field: "limit"))
        default: return .failure(.invalidParameter("limit"))
        }
        // Any offset: a result is paged through with it, so rows past 100,000 must be reachable.
        switch allowsOffset ? p["offset"] : nil {
        case nil, .null?: break
        case .integer(let n)? where n >= 0: r.offset = Int(n)
        case .integer(let n)?: return .failure(.invalidRequest("offset is 0 or more, not \(n)", field: "offset"))
        default: return .failure(.invalidParameter("offset"))
        }
        switch p["fields"] {
        case nil, .null?: break
        case .array(let a)?:
            var fields: [String] = []
            let known = schema.entity(r.entity)?.entity
            for f in a {
                guard let s = f.stringValue else { return .failure(.invalidParameter("fields")) }
                guard known?.attribute(s) != nil else {
                    return .failure(.invalidRequest("\(r.entity) has no attribute '\(s)'", field: "fields"))
                }
                // A name given twice is one field: a row object holds each key once.
                if !fields.contains(s) { fields.append(s) }
            }
            r.attributes = fields
        default: return .failure(.invalidParameter("fields"))
        }
        if r.limit == nil { r.limit = defaultLimit }
        return .success(r)
    }

    /// Save's parameters read into a request, against `schema`, with `types` giving an entity's
    /// attribute types: pure, so that a big one can be read off the loop (`CallHandler.readBigSaveOffLoop`).
    static func save(_ p: JSONObject, schema: Schema, types: (Entity) -> [String: AttributeType]) -> Result<SaveRequest, VarlinkError> {
        var request = SaveRequest()
        var entities = EntityTypes(schema: schema)
        for kind in SaveRequest.Kind.allCases {
            let key = kind.listName
            switch p[key] {
            case nil, .null?: continue
            case .array(let items)?:
                for (i, item) in items.enumerated() {
                    guard case .object(let o) = item, let entityName = o["entity"]?.stringValue else {
                        return .failure(.invalidParameter("\(key)[\(i)]"))
                    }
                    guard let (e, types) = entities.lookup(entityName, types: types) else {
                        return .failure(.invalidRequest("no entity named '\(entityName)'", field: "\(key)[\(i)].entity"))
                    }
                    let uuid = o["uuid"]?.stringValue
                    if kind.namesRow && uuid == nil { return .failure(.invalidParameter("\(key)[\(i)].uuid")) }
                    var values: [String: AttributeValue] = [:]
                    if kind.carriesValues {
                        guard case .object(let v)? = o["values"] else { return .failure(.invalidParameter("\(key)[\(i)].values")) }
                        values.reserveCapacity(v.count)
                        for (name, json) in v {
                            guard let type = types[name] else {
                                return .failure(.invalidRequest("\(e.name) has no attribute '\(name)'", field: "\(key)[\(i)].values.\(name)"))
                            }
                            switch WireValues.decode(json, as: type) {
                            case .success(let value): values[name] = value
                            case .failure(let why):
                                return .failure(.invalidRequest("\(e.name).\(name): \(why)", field: "\(key)[\(i)].values.\(name)"))
                            }
                        }
                    }
                    request.add(kind, e.name, uuid: uuid, values)
                }
            default:
                return .failure(.invalidParameter(key))
            }
        }
        request.valuesChecked = true
        switch p["unchangedSince"] {
        case nil, .null?: break
        case let value?:
            guard let since = value.int64Value, since >= 0 else { return .failure(.invalidParameter("unchangedSince")) }
            request.unchangedSince = since
        }
        switch p["reply"] {
        case nil, .null?: break
        case let value?:
            guard let text = value.stringValue, let reply = SaveRequest.Reply(rawValue: text) else {
                return .failure(.invalidRequest("reply is 'changes' (the default) or 'count'", field: "reply"))
            }
            request.reply = reply
        }
        return .success(request)
    }

    /// A plain save's request, or nil when the general path must read it (see `quickSave`): pure.
    static func save(_ q: QuickSave, schema: Schema, types: (Entity) -> [String: AttributeType]) -> SaveRequest? {
        var request = SaveRequest()
        var entities = EntityTypes(schema: schema)
        for (kind, items) in [(SaveRequest.Kind.insert, q.inserts), (.update, q.updates), (.delete, q.deletes)] {
            for item in items {
                guard let (e, types) = entities.lookup(item.entity, types: types) else { return nil }
                var values: [String: AttributeValue] = [:]
                values.reserveCapacity(item.values.count)
                for v in item.values {
                    guard let type = types[v.name] else { return nil }
                    switch v.content {
                    case .scalar(let json):
                        guard case .success(let value) = WireValues.decode(json, as: type) else { return nil }
                        values[v.name] = value
                    case .container(let text):
                        // What `WireValues.decode` makes of the same value read as a tree: its text.
                        guard type == .json else { return nil }
                        values[v.name] = .json(text)
                    }
                }
                guard request.add(kind, e.name, uuid: item.uuid, values) else { return nil }
            }
        }
        request.valuesChecked = true
        request.unchangedSince = q.unchangedSince
        if let text = q.reply {
            guard let reply = SaveRequest.Reply(rawValue: text) else { return nil }
            request.reply = reply
        }
        return request
    }

    /// A save's error as the varlink error a client receives, a value's naming its place in
    /// the call (`inserts[2].values.name`): the request holds the call's inserts, updates and
    /// deletes in that order.
    static func error(_ error: ContextError, in request: SaveRequest) -> VarlinkError {
        let attribute: String
        switch error.kind {
        case .unknownAttribute(_, let a), .wrongType(_, let a, _, _), .missingValue(_, let a), .valueTooLarge(_, let a, _, _),
             .recordTooLarge(_, let a, _, _), .invalidValue(_, let a, _):
            attribute = a
        default:
            return VarlinkError(error)
        }
        guard let i = error.operation, request.operations.indices.contains(i) else { return VarlinkError(error) }
        let kind = request.operations[i].kind
        let place = request.operations[..<i].filter { $0.kind == kind }.count
        let field = "\(kind.listName)[\(place)]" + (kind.carriesValues ? ".values.\(attribute)" : "")
        if let limit = error.byteLimit { return .valueTooLarge(error.description, field: field, limit: limit) }
        return .invalidRequest(error.description, field: field)
    }
}

extension VarlinkError {
    /// A context error as the varlink error a client receives.
    public init(_ error: ContextError) {
        self = switch error.kind {
        case .notFound(let e, let u): .notFound(entity: e, uuid: u)
        case .duplicate, .constraint, .deleteDenied, .changedSince, .historyForgotten: .conflict(error.description)
        case .sequenceAhead(let since, let sequence): .sequenceAhead(since: since, sequence: sequence)
        case .unknownAttribute(_, let a): .invalidRequest(error.description, field: a)
        case .valueTooLarge(_, let a, _, let limit), .recordTooLarge(_, let a, _, let limit):
            .valueTooLarge(error.description, field: a, limit: limit)
        case .wrongType(_, let a, _, _), .missingValue(_, let a), .invalidValue(_, let a, _):
            .invalidRequest(error.description, field: a)
        case .unknownEntity: .invalidRequest(error.description, field: "entity")
        case .query(let q, let field): .invalidRequest(q.description, field: field)
        case .snapshotUnsupported: .invalidRequest(error.description)
        case .storeUnavailable(let store, _, _): .storeUnavailable(store: store, error.description)
        case .storeReadOnly(let store, let path, _): .storeReadOnly(store: store, path: path, error.description)
        case .store, .database: .storeFailure(error.description)
        }
    }
}

/// An entity of a save's operations and its attribute types, looked up once for a run of
/// operations on one entity (a 1,000-row save names one entity a thousand times).
struct EntityTypes {
    let schema: Schema
    private var last: (name: String, entity: Entity, types: [String: AttributeType])?

    init(schema: Schema) { self.schema = schema }

    /// Entity `name` and its attribute types (from `types`), nil when the schema has none so named.
    mutating func lookup(_ name: String, types: (Entity) -> [String: AttributeType]) -> (Entity, [String: AttributeType])? {
        if let last, last.name == name { return (last.entity, last.types) }
        guard let e = schema.entity(name)?.entity else { return nil }
        let found = (name: name, entity: e, types: types(e))
        last = found
        return (found.entity, found.types)
    }
}
