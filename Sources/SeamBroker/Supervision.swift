import SeamJSON
import SeamProtocol
import SeamStore
import SeamSystem

/// One process seamd keeps running: a built-in role (the ticker now; the migration and sync
/// workers later) or a plugin a person listed in `seamd.json`.
public struct RoleSpec: Sendable, Equatable {
    /// `ticker`, or `plugin:NAME`: how logs and `seam status` name it.
    public var name: String
    /// The role its connection holds: `ticker`, or `plugin`.
    public var role: String
    /// A plugin's name (nil for a built-in role).
    public var pluginName: String?
    /// The program (a bare name is looked for beside seamd, then on `$PATH`) and its arguments.
    public var command: [String]
    /// Added to the environment seamd passes on.
    public var environment: [String: String]
    /// Run once for a task (the migration worker), never restarted: its end is reported to
    /// whoever started it.
    public var oneShot = false

    /// What the broker records as the author of its saves (design.md: never claimed by the client).
    public var author: String { pluginName.map { "plugin:\($0)" } ?? role }

    public init(role: String, pluginName: String? = nil, command: [String], environment: [String: String] = [:],
                oneShot: Bool = false) {
        self.oneShot = oneShot
        self.role = role
        self.pluginName = pluginName
        self.name = pluginName.map { "plugin:\($0)" } ?? role
        self.command = command
        self.environment = environment
    }
}

/// What `$XDG_CONFIG_HOME/seam/seamd.json` asks seamd to run. Pure: it reads bytes and says what
/// is wrong with them, entry by entry, so one bad entry never stops the others.
///
///     {"roles": {"ticker": {"enabled": true, "command": ["seam-ticker"]},
///                "migrate": {"enabled": true, "command": ["seam-migrate"]},
///                "metrics": {"enabled": true, "port": 9464}},
///      "plugins": [{"name": "logger", "command": ["python3", "logger.py"], "environment": {"K": "V"}}],
///      "backups": {"keep": 10, "maxBytes": 1000000000}}
///
/// Every key is optional; a missing file means the defaults (every built-in role, as shipped).
public struct SupervisorConfiguration: Sendable, Equatable {
    public var roles: [RoleSpec]
    /// The migration worker, started for each migration (its command gets `--worker DIR
    /// --stores A,B`). `roles.migrate.enabled: false` only stops seamd migrating outdated
    /// stores on its own at start; `seam migrate` still runs it.
    public var migrator = SupervisorConfiguration.defaultMigrator
    public var migratesAtStart = true
    /// How many generations `backups/` keeps (by count, by bytes); none: every one.
    public var backupBound = Backups.Bound()
    /// What one client's call may cost (`limits`).
    public var limits = BrokerLimits()
    /// What was wrong with the file, one line each (logged at start, shown by `seam status`).
    public var problems: [String]

    /// The built-in roles and the programs that play them.
    public static let builtIn: [RoleSpec] = [RoleSpec(role: "ticker", command: ["seam-ticker"])]

    public static let defaultMigrator = RoleSpec(role: "migrate", command: ["seam-migrate"], oneShot: true)

    /// The roles that run only when `seamd.json` enables them: the metrics endpoint (`seam-metrics`,
    /// serving Prometheus's text on 127.0.0.1:`port`) and the web page of the timers (`seam-web`).
    public static let optIn: [RoleSpec] = [RoleSpec(role: metricsRole, command: ["seam-metrics"]),
                                           RoleSpec(role: webRole, command: ["seam-web"])]
    public static let metricsRole = "metrics"
    public static let webRole = "web"
    /// The port each opt-in role listens on unless told (the metrics' is the one Prometheus's
    /// registry of default ports lists for an OpenTelemetry exporter; the web page's, unlisted).
    public static let defaultPorts = [metricsRole: 9464, webRole: 8620]

    /// The sync worker for the sync configuration at `path` (written by `seam sync setup`).
    public static func syncWorker(configuration path: String) -> RoleSpec {
        RoleSpec(role: "sync", command: ["seam-sync", path])
    }

    public static let defaults = SupervisorConfiguration(roles: builtIn, problems: [])

    public init(roles: [RoleSpec], problems: [String]) {
        self.roles = roles
        self.problems = problems
    }

    /// Reads a configuration file's bytes; `path` names it in the problems.
    public static func parse(_ bytes: [UInt8], path: String) -> SupervisorConfiguration {
        let top: JSONObject
        do {
            guard let object = try JSON.decode(bytes, limits: JSONLimits(maxDepth: 16)).objectValue else {
                return SupervisorConfiguration(roles: builtIn, problems: ["\(path) is not a JSON object; using the defaults"])
            }
            top = object
        } catch {
            return SupervisorConfiguration(roles: builtIn, problems: ["\(path) is not valid JSON (\(error)); using the defaults"])
        }
        var problems: [String] = []
        for key in top.keys where !["roles", "plugins", "backups", "limits"].contains(key) {
            problems.append("\(path): unknown key '\(key)' ignored (the keys are 'roles', 'plugins', 'backups' and 'limits')")
        }
        let backupBound = Self.backupBound(top["backups"], path: path, problems: &problems)
        let limits = BrokerLimits.parse(top["limits"], path: path, problems: &problems)
        var roles: [RoleSpec] = []
        let configured = top["roles"]?.objectValue ?? [:]
        if let r = top["roles"], r.objectValue == nil { problems.append("\(path): 'roles' is not an object; using the defaults") }
        let known = builtIn.map(\.role) + [defaultMigrator.role] + optIn.map(\.role)
        for key in configured.keys where !known.contains(key) {
            problems.append("\(path): unknown role '\(key)' ignored (the roles are \(known.joined(separator: ", ")))")
        }
        var migrator = defaultMigrator
        var migratesAtStart = true
        if let entry = configured[migrator.role] {
            let context = "\(path): roles.\(migrator.role)"
            if let object = entry.objectValue {
                if let e = object["enabled"] {
                    if let b = e.boolValue { migratesAtStart = b } else { problems.append("\(context).enabled is not true or false") }
                }
                if let c = object["command"] {
                    if let command = Self.command(c) { migrator.command = command } else {
                        problems.append("\(context).command is not a non-empty array of strings; using the default")
                    }
                }
                if let env = object["environment"] {
                    if let e = Self.environment(env) { migrator.environment = e } else {
                        problems.append("\(context).environment is not an object of strings; ignored")
                    }
                }
            } else {
                problems.append("\(context) is not an object; using the default")
            }
        }
        for var spec in builtIn + optIn {
            let optedIn = optIn.contains(spec)
            guard let entry = configured[spec.role] else {
                if !optedIn { roles.append(spec) }
                continue
            }
            let context = "\(path): roles.\(spec.role)"
            guard let object = entry.objectValue else {
                problems.append("\(context) is not an object; using the default")
                if !optedIn { roles.append(spec) }
                continue
            }
            if let e = object["enabled"], e.boolValue == nil { problems.append("\(context).enabled is not true or false") }
            if object["enabled"]?.boolValue == false { continue }
            let defaultPort = defaultPorts[spec.role]
            for key in object.keys where !["enabled", "command", "environment"].contains(key) && !(defaultPort != nil && key == "port") {
                problems.append("\(context).\(key) is not a setting; ignored")
            }
            var portArguments: [String] = []
            if let defaultPort {
                var port = defaultPort
                if let p = object["port"] {
                    if let n = p.int64Value, (1...65_535).contains(n) { port = Int(n) } else {
                        problems.append("\(context).port is not a port number from 1 to 65535; using \(defaultPort)")
                    }
                }
                portArguments = ["--port", String(port)]
            }
            // An opt-in role runs when enabled is true, not merely when it is mentioned.
            if optedIn, object["enabled"]?.boolValue != true { continue }
            if let c = object["command"] {
                if let command = Self.command(c) { spec.command = command } else {
                    problems.append("\(context).command is not a non-empty array of strings; using the default")
                }
            }
            if let env = object["environment"] {
                if let e = Self.environment(env) { spec.environment = e } else {
                    problems.append("\(context).environment is not an object of strings; ignored")
                }
            }
            // The port goes after the command, whichever program it names.
            spec.command += portArguments
            roles.append(spec)
        }
        if let p = top["plugins"], p.arrayValue == nil { problems.append("\(path): 'plugins' is not an array; no plugins started") }
        var names: Set<String> = []
        for (i, entry) in (top["plugins"]?.arrayValue ?? []).enumerated() {
            let context = "\(path): plugins[\(i)]"
            guard let object = entry.objectValue else {
                problems.append("\(context) is not an object; skipped")
                continue
            }
            guard let name = object["name"]?.stringValue, Connection.Hello.isValidName(name) else {
                problems.append("\(context) needs a name of 1 to 64 letters, digits, '-', '_' or '.'; skipped")
                continue
            }
            guard names.insert(name).inserted else {
                problems.append("\(context): a second plugin named '\(name)'; skipped")
                continue
            }
            guard let c = object["command"], let command = Self.command(c) else {
                problems.append("\(context) ('\(name)') needs a command: a non-empty array of strings; skipped")
                continue
            }
            var environment: [String: String] = [:]
            if let env = object["environment"] {
                guard let e = Self.environment(env) else {
                    problems.append("\(context) ('\(name)'): environment is not an object of strings; skipped")
                    continue
                }
                environment = e
            }
            if object["enabled"]?.boolValue == false { continue }
            roles.append(RoleSpec(role: "plugin", pluginName: name, command: command, environment: environment))
        }
        var out = SupervisorConfiguration(roles: roles, problems: problems)
        out.migrator = migrator
        out.migratesAtStart = migratesAtStart
        out.backupBound = backupBound
        out.limits = limits
        return out
    }

    /// `backups`: `{"keep": N}` (N ≥ 1 generations) and/or `{"maxBytes": B}` (B ≥ 0).
    private static func backupBound(_ json: JSON?, path: String, problems: inout [String]) -> Backups.Bound {
        guard let json else { return Backups.Bound() }
        guard let object = json.objectValue else {
            problems.append("\(path): 'backups' is not an object; every backup is kept")
            return Backups.Bound()
        }
        var bound = Backups.Bound()
        for key in object.keys where key != "keep" && key != "maxBytes" {
            problems.append("\(path): backups.\(key) is not a setting (they are 'keep' and 'maxBytes'); ignored")
        }
        if let k = object["keep"] {
            if let n = k.int64Value, n >= 1, n <= 1_000_000 { bound.keep = Int(n) } else {
                problems.append("\(path): backups.keep is not a whole number from 1 to 1000000; no bound by count")
            }
        }
        if let b = object["maxBytes"] {
            if let n = b.int64Value, n >= 0 { bound.maxBytes = n } else {
                problems.append("\(path): backups.maxBytes is not a whole number of bytes; no bound by size")
            }
        }
        return bound
    }

    private static func command(_ json: JSON) -> [String]? {
        guard let items = json.arrayValue, !items.isEmpty else { return nil }
        let strings = items.compactMap(\.stringValue)
        guard strings.count == items.count, !strings[0].isEmpty else { return nil }
        return strings
    }

    private static func environment(_ json: JSON) -> [String: String]? {
        guard let object = json.objectValue else { return nil }
        var out: [String: String] = [:]
        for (k, v) in object {
            guard let s = v.stringValue, !k.isEmpty, !k.contains("=") else { return nil }
            out[k] = s
        }
        return out
    }
}

/// When to restart a process that died: 1 s, doubling to 60 s, back to 1 s once it has run
/// healthily for a minute. Pure, so the policy is tested without waiting.
public struct Backoff: Sendable, Equatable {
    public static let first = 1.0
    public static let limit = 60.0
    /// Seconds of running that count as healthy.
    public static let healthy = 60.0

    public private(set) var next = Backoff.first

    public init() {}

    /// The delay before the next start of a process that ran for `uptime` seconds and died.
    public mutating func delay(afterRunning uptime: Double) -> Double {
        if uptime >= Self.healthy { next = Self.first }
        let d = next
        next = min(next * 2, Self.limit)
        return d
    }
}

/// What one client's call may cost seamd (`seamd.json`'s `limits`; see PROTOCOL.md, Limits).
public struct BrokerLimits: Sendable, Equatable {
    /// The most a predicate may cost per row (`PredicateCost`), for Fetch, Count and Subscribe.
    public var predicateCost = 2_000
    /// The longest a query may run on a reader before it is stopped, in seconds.
    public var querySeconds = 1.0
    /// Reader threads (the default: one per CPU, at least two).
    public var readers = max(2, Threads.processorCount)
    /// Calls handled for one connection before the others get their turn.
    public var callsPerTurn = 16
    /// The most operations a plugin's Save may carry (a person's and the roles' may carry
    /// `Limits.maxSaveOperations`): a save holds every other writer of its store while it runs.
    public var pluginSaveOperations = 1_000
    /// WAL frames (pages) after which a store's checkpoint thread copies them back; past eight
    /// times as many (at most 8,000 unless this is above 4,000), the store holds its writes while
    /// its WAL is drained (PROTOCOL.md, "Writes that wait for their store").
    public var checkpointFrames = 4_000
    /// What a connection may leave unread (not in seamd.json: PROTOCOL.md's limits hold for
    /// every seamd; a test makes them small, to reach what lies behind them in a few steps).
    public var outbox = OutboxLimits()

    public init() {}

    /// `Limits`' outbox figures, as values.
    public struct OutboxLimits: Sendable, Equatable {
        /// Queued past this, a connection's next calls wait until it has read (`Limits.pauseCallsBytes`).
        public var pauseCallsBytes = Limits.pauseCallsBytes
        /// Queued past this (or a result's worth), its subscriptions stop queueing diffs (`Limits.subscriberBacklogBytes`).
        public var subscriberBacklogBytes = Limits.subscriberBacklogBytes
        /// Queued past this, it is closed for reading too slowly (`Limits.maxOutboxBytes`).
        public var maxOutboxBytes = Limits.maxOutboxBytes
        /// Calls read past this while its calls wait, it is closed (`Limits.maxWaitingCallBytes`).
        public var maxWaitingCallBytes = Limits.maxWaitingCallBytes
        public init() {}
    }

    static func parse(_ json: JSON?, path: String, problems: inout [String]) -> BrokerLimits {
        var limits = BrokerLimits()
        guard let json else { return limits }
        guard let object = json.objectValue else {
            problems.append("\(path): 'limits' is not an object; the defaults apply")
            return limits
        }
        for key in object.keys where !["predicateCost", "querySeconds", "readers", "callsPerTurn", "pluginSaveOperations",
                                        "checkpointFrames"].contains(key) {
            problems.append("\(path): limits.\(key) is not a limit (they are predicateCost, querySeconds, readers, callsPerTurn, "
                            + "pluginSaveOperations and checkpointFrames); ignored")
        }
        func integer(_ key: String, in range: ClosedRange<Int64>) -> Int? {
            guard let v = object[key] else { return nil }
            guard let n = v.int64Value, range.contains(n) else {
                problems.append("\(path): limits.\(key) is not a whole number from \(range.lowerBound) to \(range.upperBound); the default applies")
                return nil
            }
            return Int(n)
        }
        if let n = integer("predicateCost", in: 1...1_000_000) { limits.predicateCost = n }
        if let n = integer("readers", in: 1...64) { limits.readers = n }
        if let n = integer("callsPerTurn", in: 1...10_000) { limits.callsPerTurn = n }
        if let n = integer("pluginSaveOperations", in: 1...10_000) { limits.pluginSaveOperations = n }
        if let n = integer("checkpointFrames", in: 10...1_000_000) { limits.checkpointFrames = n }
        if let v = object["querySeconds"] {
            if let d = v.doubleValue ?? v.int64Value.map(Double.init), d >= 0.01, d <= 3600 { limits.querySeconds = d } else {
                problems.append("\(path): limits.querySeconds is not a number of seconds from 0.01 to 3600; the default applies")
            }
        }
        return limits
    }
}
extension SupervisorConfiguration {
    /// The file at `path`: the defaults when it does not exist; its problems otherwise. With a
    /// sync configuration beside it (`sync.json`), the sync worker too.
    public static func load(path: String) -> SupervisorConfiguration {
        var c: SupervisorConfiguration
        if !FileSystem.exists(path) {
            c = .defaults
        } else {
            do { c = parse(try FileSystem.read(path), path: path) } catch {
                c = SupervisorConfiguration(roles: builtIn, problems: ["cannot read \(path): \(error.message); using the defaults"])
            }
        }
        let sync = syncPath(besides: path)
        if FileSystem.exists(sync) { c.roles.append(syncWorker(configuration: sync)) }
        return c
    }

    /// Where `seam sync setup` writes the sync configuration: beside seamd.json.
    public static func syncPath(besides path: String) -> String {
        FileSystem.join(FileSystem.parentDirectory(path), "sync.json")
    }
}
