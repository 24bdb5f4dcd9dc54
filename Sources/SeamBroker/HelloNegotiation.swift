import SeamContext
import SeamJSON
import SeamProtocol

/// `org.seam.Store.Hello` and what it grants, with no connection and no I/O: the parameters
/// read and checked into the `Connection.Hello` a client then holds, and what that Hello lets
/// it read and write. (Whether there is room for one more client is the broker's to say.)
extension Connection.Hello {
    /// Roles only the connections seamd hands to the processes it starts may hold.
    static let builtInRoles: Set<String> = ["ticker", "migrate", "sync", SupervisorConfiguration.metricsRole, SupervisorConfiguration.webRole]
    /// The roles that may write the sync worker's own entities (`workerOwned`): what it records
    /// of the server is its alone, and a plugin or a person's script writing it would corrupt
    /// sync (Protocol/sync.md); a migration copies it.
    static let writesWorkerState: Set<String> = ["sync", "migrate"]

    /// The Hello a client gets for parameters `p`. `assigned` is the Hello of a connection seamd
    /// handed to a process it started: its role is already known and is not the client's to
    /// change; Hello settles the version and may narrow what it touches. `known` says whether
    /// an entity of that name is served; `workerOwned` are the sync worker's own entities, which
    /// no client may declare it writes.
    static func negotiate(_ p: JSONObject, assigned: Connection.Hello?, known: (String) -> Bool,
                          workerOwned: Set<String> = []) -> Result<Connection.Hello, VarlinkError> {
        guard let version = p["version"]?.int64Value else { return .failure(.invalidParameter("version")) }
        guard Interfaces.protocolVersions.contains(Int(version)) else {
            return .failure(.unsupportedVersion(Interfaces.protocolVersions))
        }
        var declared: Capabilities?
        if let json = p["capabilities"], !json.isNull {
            switch Capabilities.parse(json, known: known, reserved: workerOwned) {
            case .success(let caps): declared = caps
            case .failure(let e): return .failure(e)
            }
        }
        if var assigned {
            assigned.version = Int(version)
            if let declared {
                assigned.capabilities = declared
                assigned.declared = true
            }
            return .success(assigned)
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
        if let name, !isValidName(name) {
            return .failure(.invalidRequest("a client name is 1 to 64 letters, digits, '-', '_' or '.'", field: "name"))
        }
        let author: String
        switch role {
        case "cli": author = "cli"
        case "plugin":
            guard let name else { return .failure(.invalidRequest("a plugin says its name", field: "name")) }
            author = "plugin:\(name)"
        case _ where builtInRoles.contains(role):
            return .failure(.permissionDenied("the role '\(role)' belongs to a process seamd starts; a client that connects by "
                                              + "itself is 'cli' or 'plugin'"))
        default:
            return .failure(.invalidRequest("unknown role '\(role)': use 'cli' or 'plugin'", field: "role"))
        }
        return .success(Connection.Hello(version: Int(version), role: role, name: name, author: author,
                                         capabilities: declared ?? (role == "plugin" ? .nothing : .everything),
                                         declared: declared != nil, workerOwned: workerOwned))
    }

    /// A plugin's or client's name: 1 to 64 ASCII letters, digits, '-', '_' or '.'.
    static func isValidName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && s.utf8.allSatisfy { b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 45 || b == 95 || b == 46
        }
    }

    /// Hello's reply: what the broker settled, and the save sequence it stands at.
    func reply(sequence: Int64) -> JSONObject {
        ["version": .integer(Int64(version)), "role": .string(role), "author": .string(author),
         "product": .string("\(Interfaces.product) \(Interfaces.version)"), "sequence": .integer(sequence)]
    }

    /// Why a `member` call (Fetch, Count or Subscribe) of `entity` is refused: an entity this
    /// client did not declare it reads. Nil when it may; other methods are not reads.
    func deniedRead(member: String, entity: String?) -> VarlinkError? {
        guard capabilities.reads != nil else { return nil }
        switch member {
        case "Fetch", "Count", "Subscribe": break
        default: return nil
        }
        guard let entity, !capabilities.mayRead(entity) else { return nil }
        return .permissionDenied("\(author) may read \(Capabilities.describe(capabilities.reads))"
                                 + (declared ? " (declared in its Hello)" : " (a plugin reads only what its Hello declares)")
                                 + ", not \(entity); declare it in capabilities.reads")
    }

    /// Why a save is refused: it touches an entity this client may not write. Nil when it may.
    func deniedWrite(_ request: SaveRequest) -> VarlinkError? {
        if !Self.writesWorkerState.contains(role), let op = request.operations.first(where: { workerOwned.contains($0.entity) }) {
            return .permissionDenied("\(op.entity) is the sync worker's own record of the sync server: only seamd's sync role "
                                     + "writes it (\(author) may read it)")
        }
        for op in request.operations where !capabilities.mayWrite(op.entity) {
            return .permissionDenied("\(author) may write \(Capabilities.describe(capabilities.writes))"
                                     + (declared ? " (declared in its Hello)" : " (a plugin writes only what its Hello declares)")
                                     + ", not \(op.entity); declare it in capabilities.writes")
        }
        return nil
    }
}
