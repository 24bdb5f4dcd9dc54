import SeamClient
import SeamJSON
import SeamPostgres
import SeamProtocol
import SeamSchema
import SeamSyncSetup
import SeamSystem

/// The sync worker: mirrors the Cloud store's synced entities to a PostgreSQL server and back.
///
/// A cycle exports first (the broker's history since the exported token, coalesced per record,
/// written as upserts and tombstones in one server transaction), then imports (the server's
/// records since the server token, applied through the broker in one save whose author the
/// broker makes `sync`). Its tokens and per-record change tags live in the `SyncMetadata`
/// entities of the Cloud store, written in the same saves as the data they describe. See
/// `Protocol/sync.md` for the rules.
///
/// This type is the loop: it connects, waits for a commit, a notification or the poll, runs a
/// cycle and reports. A cycle's work is `SyncExport` (writing to the zone through `ZoneWriter`)
/// and `SyncImport`; what they share and keep in the store is `SyncState`; what each record
/// comes to is `SyncPlanner`'s to decide.
public final class SyncWorker {
    /// What the worker knows and keeps in the Cloud store, shared with its export and import.
    let shared: SyncState
    let configuration: SyncConfiguration
    let url: SyncURL
    var pg: PostgresConnection?
    /// The server role this worker connects as: its zone.
    var zone = ""
    /// The zone's notification channel on the server, which only the zone can read (`seam.channel()`).
    var channel = ""
    var checkedKeptFields = false
    /// Whether `Reseal` has looked at every record of the zone since the worker connected or
    /// the store was migrated; after that, the import finds what arrives in clear (another
    /// machine on an older build, or a hand on the server) and it is sealed after the import.
    var resealedAll = false

    struct Report {
        /// What the worker does or waits on: "starting", "syncing", "idle", "waiting for the
        /// server", "waiting for this zone's lock", "waiting for the Cloud store", "error".
        var state = "starting"
        var lastPush: Double?
        var lastPull: Double?
        var pending = 0
        var pushed = 0
        var pulled = 0
        var lastError: String?
        /// While the worker waits out a pause (for the Cloud store, for the server): when it
        /// tries again, Unix seconds (sooner on `seam sync now`).
        var nextTry: Double?
    }

    /// False only to measure what sealing costs (`SEAM_SYNC_SEAL=0`, scripts/bench sync): the
    /// worker seals nothing and takes no key, as if the model encrypted nothing.
    let seals = Environment.value("SEAM_SYNC_SEAL") != "0"

    public init(broker: SeamConnection, configuration: SyncConfiguration, log: @escaping (String) -> Void) throws {
        shared = SyncState(broker: broker, log: log)
        shared.sealsFields = seals
        self.configuration = configuration
        self.url = try SyncURL.parse(configuration.url)
        try shared.loadSchema()
    }

    /// Reads what the worker keeps in the Cloud store — its tokens, this machine's name, the
    /// server it synced with — waiting while that store is closed (a migration, a swap that
    /// stopped part way), 1 s and then longer up to a minute: a worker that exited instead would
    /// only be started again and again.
    private func prepare(_ listen: JSON) throws {
        var pause = 1.0
        while true {
            do {
                try shared.loadTokens()
                try loadDevice()
                try checkServer()
                shared.report.lastError = nil
                shared.report.nextTry = nil
                shared.report.state = "starting"
                return
            } catch let e as ClientError where e.remoteName == "org.seam.Store.StoreUnavailable" {
                let message = "waiting for the Cloud store: \(e)"
                if shared.report.lastError != message { shared.log(message) }
                shared.report.lastError = message
                shared.report.state = "waiting for the Cloud store"
                shared.report.nextTry = WallClock.now() + pause
                sendReport()
                waitForBroker(listen, seconds: pause)
                pause = min(pause * 2, 60)
            }
        }
    }

    /// The server this store syncs with, as `sync.json` names it (the `serverURL` token). A store
    /// set up again with another server, or another role on it (another zone), starts over
    /// there: its tokens and its records' tags belong to the old one, and with them the new
    /// server would get none of the records already here, nor this machine the new one's older
    /// records. (A store that synced before this token existed keeps its tokens.)
    private func checkServer() throws {
        let known = try shared.broker.fetch("SyncToken", where: "name == 'serverURL'").first
        let was = known?["value"]?.stringValue
        if was == configuration.url { return }
        var save = SaveBuilder()
        if let was, let uuid = known?["uuid"]?.stringValue {
            shared.log("set up with \(configuration.url), not \(was) as before: syncing from the start")
            while true {
                let records = try shared.broker.fetch("SyncRecord", limit: SyncState.batch, fields: ["uuid"]).compactMap { $0["uuid"]?.stringValue }
                if records.isEmpty { break }
                var forget = SaveBuilder()
                for record in records { forget.delete("SyncRecord", record) }
                try forget.send(shared.broker)
            }
            // Edits made for the old server and never sent (it was unreachable, sync was off)
            // have history after its `exported` token: the first export to the new server sends
            // them again with their real times, after every row as it stands (whose fields lose
            // to any versioned edit). Kept as a token, so that a crash before that export keeps it.
            let unexported = shared.tokens["exported"]?.value ?? shared.tokens["unexported"]?.value
            for (_, token) in shared.tokens { save.delete("SyncToken", token.uuid) }
            if let covered = shared.covered { save.delete("SyncToken", covered.uuid) }
            if let list = shared.setAside.uuid { save.delete("SyncToken", list) }
            shared.setAside = SetAsideList()
            save.update("SyncToken", uuid, ["value": .string(configuration.url)])
            shared.tokens = [:]
            shared.covered = nil
            if let unexported { shared.tokenChange("unexported", unexported, into: &save) }
        } else {
            save.insert("SyncToken", ["name": "serverURL", "value": .string(configuration.url)])
        }
        try save.send(shared.broker)
    }

    private func loadDevice() throws {
        if let known = try shared.broker.fetch("SyncToken", where: "name == 'device'").first?["value"]?.stringValue {
            shared.device = known
            return
        }
        shared.device = String(UUIDText.random().prefix(8))
        try shared.broker.call("org.seam.Store.Save", ["inserts": .array([.object([
            "entity": "SyncToken", "values": .object(["name": "device", "value": .string(shared.device)]),
        ])])])
    }

    // MARK: - The loop

    /// Syncs until seamd goes away: on every local commit and every server notification, and
    /// every `pollInterval` seconds; reconnects to the server with backoff when it is away.
    /// Returns once seamd has closed the connection (it stopped, or stopped sync).
    public func run() throws {
        let listen = try shared.broker.start("org.seam.Sync.Listen")
        try prepare(listen)
        var backoff = 0.5
        var wanted = true
        while !brokerGone {
            if pg == nil {
                do {
                    try connectServer()
                    shared.report.nextTry = nil
                    backoff = 0.5
                    wanted = true
                } catch let e as SyncFailure where e.permanent {
                    fail(e.description, tryingAgainIn: 60)
                    waitForBroker(listen, seconds: 60)  // or at once on `seam sync now`
                    continue
                } catch {
                    fail("cannot reach the server: \(error)", state: "waiting for the server", tryingAgainIn: backoff)
                    waitForBroker(listen, seconds: backoff)
                    backoff = min(backoff * 2, 30)
                    continue
                }
            }
            if wanted {
                do {
                    try cycle()
                    shared.report.lastError = nil
                    shared.report.state = "idle"
                } catch let e as PostgresError where e.isConnectionLoss {
                    fail("lost the server: \(e)", state: "waiting for the server")
                    pg = nil
                    try? shared.loadTokens()
                    continue
                } catch let e as SyncFailure where e.permanent {
                    // A newer server schema: connecting again says so, and waits a minute each time.
                    fail(e.description)
                    pg = nil
                    continue
                } catch {
                    fail(Self.state(after: error) == "waiting for this zone's lock"
                         ? "another session of this zone held its lock past 15 s (another machine writing a great deal?): \(error)"
                         : "\(error)", state: Self.state(after: error))
                    if let pg, !pg.isConnected { self.pg = nil }
                    try? shared.loadTokens()
                }
                sendReport()
            }
            wanted = wait(listen)
        }
    }

    /// Whether seamd has closed the connection: `run` returns.
    private var brokerGone = false

    /// Waits for a local commit, a server notification, or the poll interval; true when a
    /// cycle is due.
    private func wait(_ listen: JSON) -> Bool {
        guard let pg else { return true }
        // Events that arrived while a call waited for its reply are read already: seamd's, and
        // the server's notifications libpq took in with a query's answer (those sent while the
        // import's transaction was open arrive with its COMMIT).
        if brokerEvents(listen) { return true }
        if let pending = try? zoneNotifications(pg), pending { return true }
        let ready = UnixSocket.waitReadable([shared.broker.descriptor, pg.socket],
                                            timeoutMilliseconds: Int32(configuration.pollInterval * 1000))
        var due = !ready.contains(true)
        if ready[0] { due = brokerEvents(listen) || due }
        if ready[1] {
            do { due = try zoneNotifications(pg) || due } catch {
                fail("lost the server: \(error)")
                self.pg = nil
                return true
            }
        }
        return due
    }

    /// Whether the server told of a write to this worker's zone by another session (on the
    /// zone's own channel).
    private func zoneNotifications(_ pg: PostgresConnection) throws(PostgresError) -> Bool {
        try pg.notifications(othersOnly: true).contains { $0.channel == channel }
    }

    private func waitForBroker(_ listen: JSON, seconds: Double) {
        if UnixSocket.waitReadable([shared.broker.descriptor], timeoutMilliseconds: Int32(seconds * 1000))[0] { _ = brokerEvents(listen) }
    }

    /// Reads the broker's replies to Listen; sets `brokerGone` when seamd is gone.
    private func brokerEvents(_ listen: JSON) -> Bool {
        let replies: [Reply]
        do { replies = try shared.broker.pending() } catch {
            if !brokerGone { shared.log("seamd closed the connection; stopping") }
            brokerGone = true
            return false
        }
        return replies.contains { $0.id == listen && $0.error == nil && $0.parameters["event"]?.stringValue != "listening" }
    }

    /// Reports `message` as the last error, in `state`; `tryingAgainIn` seconds, when the
    /// worker now waits that long before it tries again.
    private func fail(_ message: String, state: String = "error", tryingAgainIn pause: Double? = nil) {
        if shared.report.lastError != message { shared.log(message) }
        shared.report.lastError = message
        shared.report.state = state
        shared.report.nextTry = pause.map { WallClock.now() + $0 }
        countPending()
        sendReport()
    }

    /// The local changes the server has not taken yet (the history since the `exported` token,
    /// the worker's own imports left out): what a person waits on while sync cannot run.
    private func countPending() {
        guard let since = shared.tokens["exported"]?.value,
              let h = try? shared.broker.call("org.seam.Sync.History", ["since": .integer(since), "limit": .integer(10_000)])
        else { return }
        var records = Set<RecordKey>()
        for c in h["changes"]?.arrayValue ?? [] where c["author"]?.stringValue != "sync" {
            guard let e = c["entity"]?.stringValue, let u = c["uuid"]?.stringValue, shared.synced[e] != nil else { continue }
            records.insert(RecordKey(type: e, uuid: u))
        }
        shared.report.pending = records.count
    }

    /// The state a failed cycle leaves the worker in: waiting, when it waits on something it
    /// can name (the zone's lock, another machine of the zone holds it).
    static func state(after error: Error) -> String {
        guard let e = error as? PostgresError else { return "error" }
        switch e.sqlState {
        case "55P03": return "waiting for this zone's lock"
        case "57014": return "waiting for the server"
        default: return e.isConnectionLoss ? "waiting for the server" : "error"
        }
    }

    private func sendReport() {
        var p: JSONObject = ["server": .string(configuration.url), "state": .string(shared.report.state),
                             "pending": .integer(Int64(shared.report.pending)), "pushed": .integer(Int64(shared.report.pushed)),
                             "pulled": .integer(Int64(shared.report.pulled))]
        p["lastPush"] = shared.report.lastPush.map(JSON.double) ?? .null
        p["lastPull"] = shared.report.lastPull.map(JSON.double) ?? .null
        p["lastError"] = shared.report.lastError.map(JSON.string) ?? .null
        p["nextTry"] = shared.report.nextTry.map(JSON.double) ?? .null
        p["setAside"] = .array(shared.setAside.entries.map(\.json))
        _ = try? shared.broker.call("org.seam.Sync.Report", p)
    }

    private func connectServer() throws {
        let connection = try ServerSchema.connect(configuration.url)
        let schema = try ServerSchema.ensure(connection)
        if schema.now > schema.found { shared.log("set up the server's sync schema (version \(schema.now), was \(schema.found))") }
        if schema.now < ServerSchema.version {
            shared.log("the server's sync schema is version \(schema.now), and this role may not upgrade it to version \(ServerSchema.version) "
                + "(faster first exports); syncing with it as it is. Its administrator upgrades it with `seam-sync --init-server URL` "
                + "as the role that owns it")
        }
        zone = try connection.query("SELECT session_user::text").first?[0] ?? ""
        channel = try connection.query("SELECT seam.channel()").first?[0] ?? ""
        // Made by the server (`seam_` and 32 hex digits): nothing to quote.
        guard channel.hasPrefix("seam_"), channel.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 122) || $0 == 95 }) else {
            throw SyncFailure("the server named this zone's channel '\(channel.prefix(40))', which no Seam server does")
        }
        try connection.query("LISTEN \(channel)")
        try takeKey(connection)
        resealedAll = false
        pg = connection
        shared.log("connected to \(configuration.url)")
    }

    /// This machine's key against the zone's (`ZoneKeyRecord`): the first machine with a key
    /// registers it; a machine whose key is not the zone's, or that has none while the zone has
    /// one, stops (permanently: it says what to do, and waits) before it writes anything.
    private func takeKey(_ connection: PostgresConnection) throws {
        shared.seal = nil
        guard seals else { return }
        let server = try ZoneKeyRecord.read(connection)?.id
        guard let file = configuration.keyFile else {
            if let server {
                throw SyncFailure("this zone's fields are sealed with a key (\(server)) this machine does not have: run `seam sync setup "
                                  + "\(configuration.url)` again and give the zone's recovery phrase", permanent: true)
            }
            if !shared.encrypted.isEmpty { throw noKey }
            return
        }
        let key: ZoneKey
        do { key = try ZoneKey.read(file) } catch { throw SyncFailure(error.description, permanent: true) }
        let zoneKey = try server ?? ZoneKeyRecord.register(key.id, connection)
        guard zoneKey == key.id else {
            throw SyncFailure("this zone's key (\(zoneKey)) is not this machine's (\(key.id)): it was changed on another machine (seam sync "
                              + "rotate-key), or set up there first; run `seam sync setup \(configuration.url)` again and give the zone's "
                              + "recovery phrase. Nothing here is lost meanwhile", permanent: true)
        }
        shared.seal = FieldSeal(key: key, zone: zone)
        // The key a rotation replaced, kept beside it: what this machine sealed with it while the
        // rotation ran is opened with it and sealed again (`Reseal`).
        previousSeal = (try? ZoneKey.read(file + ".old")).map { FieldSeal(key: $0, zone: zone) }
    }

    /// The zone's previous key, after a rotation on this machine (`sync.key.old`).
    var previousSeal: FieldSeal?

    /// What stops a worker with no key once its store's model seals fields.
    private var noKey: SyncFailure {
        SyncFailure("this store's model seals timer names for the server, and this machine has no key for the zone: run `seam sync setup "
                    + "\(configuration.url)` again to make one (or give the recovery phrase of the zone's key)", permanent: true)
    }

    /// One export, then one import.
    public func cycle() throws {
        // At the first cycle too: the store may have been migrated while the worker was away.
        if try shared.loadSchema() || !checkedKeptFields {
            try shared.fillKeptFields()
            checkedKeptFields = true
            resealedAll = false
        }
        // A model that seals fields, and no key to seal them with: nothing may leave in clear.
        if !shared.encrypted.isEmpty, shared.seal == nil, pg != nil { throw noKey }
        // The Cloud store is closed (migrating): nothing can be read or written until it returns.
        guard !shared.synced.isEmpty else {
            shared.report.state = "waiting for the Cloud store"
            return
        }
        shared.report.state = "syncing"
        // Another machine may have upgraded the server since this worker connected: its rules
        // are not this worker's to write by.
        if let pg {
            let found = try ServerSchema.current(pg)
            if found > ServerSchema.version { throw ServerSchema.newer(found) }
        }
        var pushed = 0
        var pulled = 0
        // A machine that has imported nothing yet, and holds no earlier key, reads every record
        // of the zone in this cycle's import, which finds each one in clear (`arrivedInClear`,
        // sealed after it); a pass over the whole zone first would read them all twice. A key
        // rotation's old boxes must be opened before the import, which cannot: then the pass
        // runs first.
        let importsWholeZone = shared.tokens["server"] == nil && previousSeal == nil
        if let pg, let seal = shared.seal, !shared.encrypted.isEmpty, !resealedAll, !importsWholeZone {
            let n = try Reseal(pg: pg, seal: seal, previous: previousSeal, log: shared.log).encryptedFields(shared.encrypted)
            if n > 0 { shared.log("sealed \(n) record(s) the server held in clear") }
            resealedAll = true
        }
        if let pg {
            pushed += try SyncExport(shared: shared, pg: pg).export()
            let caughtUp = try SyncExport(shared: shared, pg: pg).coverGainedEntities()
            pushed += caughtUp.sent
            pulled += caughtUp.brought
        }
        shared.report.pushed += pushed
        shared.report.lastPush = WallClock.now()
        if let pg { pulled += try SyncImport(shared: shared, pg: pg).importChanges() }
        // What the import found in clear in a field this model seals: sealed now.
        if let pg, let seal = shared.seal, !shared.arrivedInClear.isEmpty {
            let n = try Reseal(pg: pg, seal: seal, previous: previousSeal, log: shared.log)
                .records(Array(shared.arrivedInClear), encrypted: shared.encrypted)
            if n > 0 { shared.log("sealed \(n) record(s) that arrived in clear") }
            shared.arrivedInClear = []
        }
        // The import read the whole zone, and what it found in clear is sealed now.
        if importsWholeZone, pg != nil { resealedAll = true }
        shared.report.pulled += pulled
        shared.report.lastPull = WallClock.now()
        if pushed + pulled > 0 { shared.log("pushed \(pushed), pulled \(pulled)") }
    }
}


/// A synced record's identity on the server.
struct RecordKey: Hashable {
    var type: String
    var uuid: String
}

/// The changes of one `org.seam.Store.Save`, built up and sent at once (all or nothing).
struct SaveBuilder {
    var inserts: [JSON] = []
    var updates: [JSON] = []
    var deletes: [JSON] = []
    /// Sent as Save's `unchangedSince`, when set.
    var unchangedSince: Int64?

    mutating func insert(_ entity: String, _ values: JSONObject) {
        inserts.append(.object(["entity": .string(entity), "values": .object(values)]))
    }

    mutating func update(_ entity: String, _ uuid: String, _ values: JSONObject) {
        updates.append(.object(["entity": .string(entity), "uuid": .string(uuid), "values": .object(values)]))
    }

    mutating func delete(_ entity: String, _ uuid: String) {
        deletes.append(.object(["entity": .string(entity), "uuid": .string(uuid)]))
    }

    var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }
    var operations: Int { inserts.count + updates.count + deletes.count }

    func send(_ broker: SeamConnection) throws {
        if let id = try begin(broker) { try broker.finish(id) }
    }

    /// Operations and bytes of one save the worker sends: half of what seamd takes in a save
    /// (`Limits.maxSaveOperations`) and a quarter of a frame (`Limits.maxFrameBytes`).
    static let partOperations = Limits.maxSaveOperations / 2
    static let partBytes = Limits.maxFrameBytes / 4

    /// This save cut into saves seamd takes, in the order one save applies them (inserts, then
    /// updates, then deletes), each with `unchangedSince`; `last` (a token) joins the final one.
    /// For changes that may land in parts: each part must leave the store consistent, and
    /// what `last` marks as done must be so only once every part is in.
    func parts(then last: SaveBuilder = SaveBuilder()) -> [SaveBuilder] {
        var parts: [SaveBuilder] = []
        var part = SaveBuilder(unchangedSince: unchangedSince)
        var bytes = 0
        for list in [\SaveBuilder.inserts, \.updates, \.deletes] {
            for item in self[keyPath: list] {
                let size = item.encoded().count
                if !part.isEmpty && (part.operations + last.operations >= Self.partOperations || bytes + size > Self.partBytes) {
                    parts.append(part)
                    part = SaveBuilder(unchangedSince: unchangedSince)
                    bytes = 0
                }
                part[keyPath: list].append(item)
                bytes += size
            }
        }
        part.inserts += last.inserts
        part.updates += last.updates
        part.deletes += last.deletes
        parts.append(part)
        return parts
    }

    /// Sends `parts(then:)` one after the other.
    func sendInParts(_ broker: SeamConnection, then last: SaveBuilder = SaveBuilder()) throws {
        for part in parts(then: last) { try part.send(broker) }
    }

    /// Sends the save without waiting; its id for `SeamConnection.finish`, or nil when empty.
    func begin(_ broker: SeamConnection) throws -> JSON? {
        guard !isEmpty else { return nil }
        return try broker.begin("org.seam.Store.Save", parameters)
    }

    /// The save encoded now, to send later (`SeamConnection.begin(_:)`); nil when empty.
    func prepare(_ broker: SeamConnection) -> SeamConnection.PreparedCall? {
        isEmpty ? nil : broker.prepare("org.seam.Store.Save", parameters)
    }

    private var parameters: JSONObject {
        // The worker never reads a save's list of changes: it asks for their number alone.
        var parameters: JSONObject = ["inserts": .array(inserts), "updates": .array(updates), "deletes": .array(deletes),
                                      "reply": "count"]
        if let unchangedSince { parameters["unchangedSince"] = .integer(unchangedSince) }
        return parameters
    }
}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}

/// Why a record is set aside, in words for the log and `seam sync status`.
struct SetAsideReason: Error, CustomStringConvertible {
    var description: String
    /// Not this record's fault but this machine's: a field sealed with a key it does not hold.
    /// Sync stops (saying what to do) rather than set the zone's records aside one by one.
    var stopsSync = false
    init(_ description: String, stopsSync: Bool = false) {
        self.description = description
        self.stopsSync = stopsSync
    }
}
