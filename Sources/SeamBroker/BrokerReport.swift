import SeamContext
import SeamJSON
import SeamMetrics
import SeamProtocol
import SeamStore
import SeamSystem

/// What seamd says of itself: `Status`, `org.seam.Metrics.Get` (what `BrokerMetrics` counted,
/// and gauges read now; PROTOCOL.md, "Metrics", lists the families, and a name once published
/// keeps its meaning), and what is wrong with its connections while it rests (the simulation's
/// invariants). It reads the broker's parts and changes nothing.
final class BrokerReport {
    let configuration: BrokerConfiguration
    let context: Context
    let loop: EventLoop
    let startedAt: Double
    let metrics: BrokerMetrics
    let connections: ConnectionTable
    let subscriptions: Subscriptions
    let supervisor: Supervisor
    let migrations: MigrationCoordinator
    let sync: SyncBridge
    let maintenance: MaintenanceRunner
    let readers: ReaderPool
    let steps: SteppedSaves

    init(configuration: BrokerConfiguration, context: Context, loop: EventLoop, startedAt: Double, metrics: BrokerMetrics,
         connections: ConnectionTable, subscriptions: Subscriptions, supervisor: Supervisor, migrations: MigrationCoordinator,
         sync: SyncBridge, maintenance: MaintenanceRunner, readers: ReaderPool, steps: SteppedSaves) {
        self.configuration = configuration
        self.context = context
        self.loop = loop
        self.startedAt = startedAt
        self.metrics = metrics
        self.connections = connections
        self.subscriptions = subscriptions
        self.supervisor = supervisor
        self.migrations = migrations
        self.sync = sync
        self.maintenance = maintenance
        self.readers = readers
        self.steps = steps
    }

    var clock: any Clock { loop.clock }

    /// `org.seam.Store.Status`.
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

    /// `org.seam.Metrics.Get` (to a connection that said Hello).
    func metricsCall(_ call: Call, _ c: Connection) -> [UInt8] {
        guard call.member == "Get" else { return Reply(.methodNotFound(call.method), id: call.id).frame() }
        guard c.hello != nil else { return Reply(.permissionDenied("say Hello first"), id: call.id).frame() }
        return Reply(parameters: MetricsWire.json(metricFamilies()), id: call.id).frame()
    }

    /// `org.seam.Metrics.Get`'s families.
    func metricFamilies() -> [MetricFamily] {
        var out: [MetricFamily] = []
        func add(_ name: String, _ kind: MetricKind, _ help: String, _ samples: [MetricSample]) {
            out.append(MetricFamily(name, kind, help, samples))
        }
        func gauge(_ name: String, _ help: String, _ value: Double) { add(name, .gauge, help, [MetricSample(value)]) }

        gauge("seam_up", "1 while seamd serves (a scrape that reaches it says so)", 1)
        gauge("seam_uptime_seconds", "seconds since seamd started", clock.monotonic - startedAt)
        gauge("seam_resident_bytes", "seamd's resident memory", Double(Descriptors.residentBytes()))
        gauge("seam_save_sequence", "the sequence number of the last commit", Double(context.sequence))
        add("seam_loop_events_total", .counter, "descriptor events seamd's loop handled (growing while nothing is asked: a spin)",
            [MetricSample(Double(loop.eventsHandled))])

        // Calls.
        let methods = metrics.methods.sorted { $0.key < $1.key }
        add("seam_requests_total", .counter, "calls answered, by method and outcome (ok, or the varlink error's name)",
            methods.flatMap { method, stats in
                [MetricSample([("method", method), ("outcome", "ok")], Double(stats.ok))]
                    + stats.errors.sorted { $0.key < $1.key }.map { MetricSample([("method", method), ("outcome", $0.key)], Double($0.value)) }
            })
        add("seam_request_seconds", .histogram,
            "seconds from a call's frame read to its reply queued (a save's wait for its group's fsync is not in it)",
            methods.map { MetricSample([("method", $0.key)], .histogram($0.value.seconds)) })
        add("seam_commit_rows", .histogram, "rows each commit changed", [MetricSample(.histogram(metrics.commitRows))])

        // Connections, subscriptions, backpressure.
        let all = Array(connections.values)
        gauge("seam_connections", "connections open now", Double(all.count))
        add("seam_connections_total", .counter, "connections served since seamd started", [MetricSample(Double(connections.served))])
        gauge("seam_connections_held_back", "connections whose calls wait until they read what is queued for them",
              Double(all.lazy.filter(\.callsPaused).count))
        add("seam_connections_closed_slow_total", .counter, "connections closed for leaving more than the outbox's bound unread",
            [MetricSample(Double(connections.closedForSlowReading))])
        gauge("seam_outbox_bytes", "bytes queued for clients, not yet read, all connections together",
              Double(all.reduce(0) { $0 + $1.pendingOutput }))
        gauge("seam_outbox_bytes_max", "the most bytes queued for one connection now", Double(all.map(\.pendingOutput).max() ?? 0))
        gauge("seam_subscriptions", "subscriptions now", Double(subscriptions.count))
        gauge("seam_channels", "query channels now (identical queries share one)", Double(subscriptions.channels.count))
        add("seam_resyncs_total", .counter, "subscriptions sent a resync instead of a diff", [MetricSample(Double(metrics.resyncs))])

        // Roles.
        let roles = supervisor.processes
        add("seam_role_up", .gauge, "1 while a supervised role's process runs", roles.map {
            MetricSample([("role", $0.spec.name)], $0.pid == nil ? 0 : 1)
        })
        add("seam_role_restarts_total", .counter, "restarts of each supervised role since seamd started", roles.map {
            MetricSample([("role", $0.spec.name)], Double($0.life.restarts))
        })

        // Migration.
        let migration = migrations.status()
        gauge("seam_migration_running", "1 while a migration runs", migration["running"]?.boolValue == true ? 1 : 0)
        gauge("seam_migration_progress_ratio", "how far the running migration is, 0 to 1 (0 when none runs)",
              migration["progress"]?["fraction"]?.doubleValue ?? 0)

        // Sync (reported by the worker; absent until it has reported).
        let s = sync.status()
        gauge("seam_sync_configured", "1 when sync is configured", s["configured"]?.boolValue == true ? 1 : 0)
        gauge("seam_sync_running", "1 while the sync worker runs", s["running"]?.boolValue == true ? 1 : 0)
        if let pending = s["pending"]?.doubleValue {
            gauge("seam_sync_pending_changes", "local changes not yet sent to the sync server (how far behind sync is)", pending)
            add("seam_sync_pushed_total", .counter, "records the worker sent, as it last reported", [MetricSample(s["pushed"]?.doubleValue ?? 0)])
            add("seam_sync_pulled_total", .counter, "records the worker received, as it last reported", [MetricSample(s["pulled"]?.doubleValue ?? 0)])
            gauge("seam_sync_set_aside_records", "records sync passes over (too big, refused by the server, …)",
                  Double(s["setAside"]?.arrayValue?.count ?? 0))
            for (key, name) in [("lastPush", "seam_sync_last_push_timestamp_seconds"), ("lastPull", "seam_sync_last_pull_timestamp_seconds")] {
                if let t = s[key]?.doubleValue { gauge(name, "when the worker last \(key == "lastPush" ? "sent" : "received") (Unix time)", t) }
            }
        }

        // Stores.
        let layout = StoreLayout(directory: configuration.dataDirectory)
        let names = context.schema.configurations
        add("seam_store_bytes", .gauge, "each store file's size", names.map {
            MetricSample([("store", $0)], Double(FileSystem.size(layout.store($0)) ?? 0))
        })
        add("seam_store_wal_bytes", .gauge, "each store's write-ahead log's size", names.map {
            MetricSample([("store", $0)], Double(FileSystem.size(layout.store($0) + "-wal") ?? 0))
        })
        add("seam_store_open", .gauge, "1 while a store is served", names.map {
            MetricSample([("store", $0)], context.servedVersions[$0] == nil ? 0 : 1)
        })
        let checkpointers = names.compactMap { name in context.checkpointer(of: name).map { (name, $0) } }
        add("seam_checkpoint_seconds", .histogram, "how long each checkpoint of a store's WAL took", checkpointers.map {
            MetricSample([("store", $0.0)], .histogram($0.1.checkpointSeconds))
        })
        add("seam_store_write_holds_total", .counter, "times a store held its writes while its WAL was drained", checkpointers.map {
            MetricSample([("store", $0.0)], Double($0.1.holds))
        })
        return out
    }

    /// What is wrong with the broker's connections while it rests (`isResting`), and with how
    /// it files them: empty when every one is where it may rest.
    func restingProblems() -> [String] {
        var problems: [String] = []
        for (fd, c) in connections.byDescriptor {
            if c.fd != fd { problems.append("\(c.label) filed under fd \(fd)") }
            problems += c.restingProblems(limits: connections.outboxLimits)
            if c.calls == 0, clock.monotonic - c.connectedAt > configuration.handshakeTimeout + 1 {
                problems.append("\(c.label) has sent nothing for \(clock.monotonic - c.connectedAt) s, past the handshake timeout")
            }
            if c.subscriptions.count > Limits.maxSubscriptionsPerConnection { problems.append("\(c.label) holds \(c.subscriptions.count) subscriptions") }
        }
        let held = connections.values.reduce(0) { $0 + $1.subscriptions.count }
        if held != subscriptions.count { problems.append("\(held) subscriptions held by connections, \(subscriptions.count) registered") }
        return problems
    }
}
