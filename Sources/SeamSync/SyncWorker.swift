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
public final class SyncWorker {
    let broker: SeamConnection
    let configuration: SyncConfiguration
    let url: SyncURL
    var pg: PostgresConnection?
    /// The server role this worker connects as: its zone.
    var zone = ""
    /// The zone's notification channel on the server, which only the zone can read (`seam.channel()`).
    var channel = ""
    /// Synced entity → its attributes (the Cloud entities outside the sync worker's own model).
    var synced: [String: [String]] = [:]
    var tokens: [String: (uuid: String, value: Int64)] = [:]
    /// The synced entities whose server records up to the `server` token are all here (the
    /// `entities` token): one missing from it was gained by a migration, and its earlier records
    /// were passed over while this store had no such entity. Nil for a store that synced before
    /// the token existed.
    var covered: (uuid: String, entities: Set<String>)?
    var checkedKeptFields = false
    /// Records set aside: the server's that this machine cannot take, and this machine's the
    /// server cannot (the `setAside` token, listed by `seam sync status`). Sync goes on with
    /// everything else; a record leaves the list when a version of it is applied or sent.
    var setAside = SetAsideList()
    /// This machine's name in field versions: made once, kept as the `device` token.
    var device = ""
    /// The decisions of a sync (`SyncPlanner`), with what this worker knows now.
    var planner: SyncPlanner { SyncPlanner(synced: synced, device: device, serverToken: tokens["server"]?.value ?? 0) }
    var report = Report()
    let log: (String) -> Void
    /// Nil outside tests (see `TestPause`).
    let testPause = TestPause.fromEnvironment()

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
    }

    /// Rows per server round trip and per broker save.
    static let batch = 500
    /// Server records per import save: larger, since a new machine may have a great many.
    static let importBatch = 2000

    public init(broker: SeamConnection, configuration: SyncConfiguration, log: @escaping (String) -> Void) throws {
        self.broker = broker
        self.configuration = configuration
        self.url = try SyncURL.parse(configuration.url)
        self.log = log
        try loadSchema()
    }

    /// Reads what the worker keeps in the Cloud store — its tokens, this machine's name, the
    /// server it synced with — waiting while that store is closed (a migration, a swap that
    /// stopped part way), 1 s and then longer up to a minute: a worker that exited instead would
    /// only be started again and again.
    private func prepare(_ listen: JSON) throws {
        var pause = 1.0
        while true {
            do {
                try loadTokens()
                try loadDevice()
                try checkServer()
                report.lastError = nil
                report.state = "starting"
                return
            } catch let e as ClientError where e.remoteName == "org.seam.Store.StoreUnavailable" {
                let message = "waiting for the Cloud store: \(e)"
                if report.lastError != message { log(message) }
                report.lastError = message
                report.state = "waiting for the Cloud store"
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
        let known = try broker.fetch("SyncToken", where: "name == 'serverURL'").first
        let was = known?["value"]?.stringValue
        if was == configuration.url { return }
        var save = SaveBuilder()
        if let was, let uuid = known?["uuid"]?.stringValue {
            log("set up with \(configuration.url), not \(was) as before: syncing from the start")
            while true {
                let records = try broker.fetch("SyncRecord", limit: Self.batch, fields: ["uuid"]).compactMap { $0["uuid"]?.stringValue }
                if records.isEmpty { break }
                var forget = SaveBuilder()
                for record in records { forget.delete("SyncRecord", record) }
                try forget.send(broker)
            }
            // Edits made for the old server and never sent (it was unreachable, sync was off)
            // have history after its `exported` token: the first export to the new server sends
            // them again with their real times, after every row as it stands (whose fields lose
            // to any versioned edit). Kept as a token, so that a crash before that export keeps it.
            let unexported = tokens["exported"]?.value ?? tokens["unexported"]?.value
            for (_, token) in tokens { save.delete("SyncToken", token.uuid) }
            if let covered { save.delete("SyncToken", covered.uuid) }
            if let list = setAside.uuid { save.delete("SyncToken", list) }
            setAside = SetAsideList()
            save.update("SyncToken", uuid, ["value": .string(configuration.url)])
            tokens = [:]
            covered = nil
            if let unexported { tokenChange("unexported", unexported, into: &save) }
        } else {
            save.insert("SyncToken", ["name": "serverURL", "value": .string(configuration.url)])
        }
        try save.send(broker)
    }

    private func loadDevice() throws {
        if let known = try broker.fetch("SyncToken", where: "name == 'device'").first?["value"]?.stringValue {
            device = known
            return
        }
        device = String(UUIDText.random().prefix(8))
        try broker.call("org.seam.Store.Save", ["inserts": .array([.object([
            "entity": "SyncToken", "values": .object(["name": "device", "value": .string(device)]),
        ])])])
    }

    // MARK: - The loop

    /// Syncs until seamd goes away: on every local commit and every server notification, and
    /// every `pollInterval` seconds; reconnects to the server with backoff when it is away.
    /// Returns once seamd has closed the connection (it stopped, or stopped sync).
    public func run() throws {
        let listen = try broker.start("org.seam.Sync.Listen")
        try prepare(listen)
        var backoff = 0.5
        var wanted = true
        while !brokerGone {
            if pg == nil {
                do {
                    try connectServer()
                    backoff = 0.5
                    wanted = true
                } catch let e as SyncFailure where e.permanent {
                    fail(e.description)
                    waitForBroker(listen, seconds: 60)  // or at once on `seam sync now`
                    continue
                } catch {
                    fail("cannot reach the server: \(error)", state: "waiting for the server")
                    waitForBroker(listen, seconds: backoff)
                    backoff = min(backoff * 2, 30)
                    continue
                }
            }
            if wanted {
                do {
                    try cycle()
                    report.lastError = nil
                    report.state = "idle"
                } catch let e as PostgresError where e.isConnectionLoss {
                    fail("lost the server: \(e)", state: "waiting for the server")
                    pg = nil
                    try? loadTokens()
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
                    try? loadTokens()
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
        let ready = UnixSocket.waitReadable([broker.descriptor, pg.socket],
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
        if UnixSocket.waitReadable([broker.descriptor], timeoutMilliseconds: Int32(seconds * 1000))[0] { _ = brokerEvents(listen) }
    }

    /// Reads the broker's replies to Listen; sets `brokerGone` when seamd is gone.
    private func brokerEvents(_ listen: JSON) -> Bool {
        let replies: [Reply]
        do { replies = try broker.pending() } catch {
            if !brokerGone { log("seamd closed the connection; stopping") }
            brokerGone = true
            return false
        }
        return replies.contains { $0.id == listen && $0.error == nil && $0.parameters["event"]?.stringValue != "listening" }
    }

    private func fail(_ message: String, state: String = "error") {
        if report.lastError != message { log(message) }
        report.lastError = message
        report.state = state
        countPending()
        sendReport()
    }

    /// The local changes the server has not taken yet (the history since the `exported` token,
    /// the worker's own imports left out): what a person waits on while sync cannot run.
    private func countPending() {
        guard let since = tokens["exported"]?.value,
              let h = try? broker.call("org.seam.Sync.History", ["since": .integer(since), "limit": .integer(10_000)])
        else { return }
        var records = Set<RecordKey>()
        for c in h["changes"]?.arrayValue ?? [] where c["author"]?.stringValue != "sync" {
            guard let e = c["entity"]?.stringValue, let u = c["uuid"]?.stringValue, synced[e] != nil else { continue }
            records.insert(RecordKey(type: e, uuid: u))
        }
        report.pending = records.count
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
        var p: JSONObject = ["server": .string(configuration.url), "state": .string(report.state),
                             "pending": .integer(Int64(report.pending)), "pushed": .integer(Int64(report.pushed)),
                             "pulled": .integer(Int64(report.pulled))]
        p["lastPush"] = report.lastPush.map(JSON.double) ?? .null
        p["lastPull"] = report.lastPull.map(JSON.double) ?? .null
        p["lastError"] = report.lastError.map(JSON.string) ?? .null
        p["setAside"] = .array(setAside.entries.map(\.json))
        _ = try? broker.call("org.seam.Sync.Report", p)
    }

    private func connectServer() throws {
        let connection = try ServerSchema.connect(configuration.url)
        let schema = try ServerSchema.ensure(connection)
        if schema.now > schema.found { log("set up the server's sync schema (version \(schema.now), was \(schema.found))") }
        if schema.now < ServerSchema.version {
            log("the server's sync schema is version \(schema.now), and this role may not upgrade it to version \(ServerSchema.version) "
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
        pg = connection
        log("connected to \(configuration.url)")
    }

    /// One export, then one import.
    public func cycle() throws {
        // At the first cycle too: the store may have been migrated while the worker was away.
        if try loadSchema() || !checkedKeptFields {
            try fillKeptFields()
            checkedKeptFields = true
        }
        // The Cloud store is closed (migrating): nothing can be read or written until it returns.
        guard !synced.isEmpty else {
            report.state = "waiting for the Cloud store"
            return
        }
        report.state = "syncing"
        // Another machine may have upgraded the server since this worker connected: its rules
        // are not this worker's to write by.
        if let pg {
            let found = try ServerSchema.current(pg)
            if found > ServerSchema.version { throw ServerSchema.newer(found) }
        }
        var pushed = try export()
        var pulled = 0
        if let pg {
            let caughtUp = try coverGainedEntities(on: pg)
            pushed += caughtUp.sent
            pulled += caughtUp.brought
        }
        report.pushed += pushed
        report.lastPush = WallClock.now()
        pulled += try importChanges()
        report.pulled += pulled
        report.lastPull = WallClock.now()
        if pushed + pulled > 0 { log("pushed \(pushed), pulled \(pulled)") }
    }

    // MARK: - What syncs

    /// The synced entities as the Cloud store holds them now; true when they changed (the
    /// store was migrated: values kept for fields it did not know may now have a column).
    @discardableResult
    func loadSchema() throws -> Bool {
        var now: [String: [String]] = [:]
        for e in try broker.call("org.seam.Sync.Served")["entities"]?.arrayValue ?? [] where e["model"]?.stringValue != "SyncMetadata" {
            guard let name = e["name"]?.stringValue else { continue }
            now[name] = (e["attributes"]?.arrayValue ?? []).compactMap(\.stringValue)
        }
        defer { synced = now }
        return now != synced
    }

    /// The tokens as the store holds them. After a failed cycle too: a token moves in the save
    /// of what it covers, so one whose save failed must not stay moved in memory.
    private func loadTokens() throws {
        var loaded: [String: (uuid: String, value: Int64)] = [:]
        covered = nil
        setAside = SetAsideList()
        for row in try broker.fetch("SyncToken") {
            guard let name = row["name"]?.stringValue, name != "device", name != "serverURL", let uuid = row["uuid"]?.stringValue else { continue }
            let value = row["value"]?.stringValue ?? ""
            if name == SetAsideList.tokenName {
                setAside = SetAsideList(uuid: uuid, text: value)
            } else if name == "entities" {
                covered = (uuid, Set(value.split(separator: ",").map(String.init)))
            } else {
                loaded[name] = (uuid, Int64(value) ?? 0)
            }
        }
        tokens = loaded
    }

    /// The save that moves a token, to join the save of what it covers.
    private func tokenChange(_ name: String, _ value: Int64, into save: inout SaveBuilder) {
        if let t = tokens[name] {
            save.update("SyncToken", t.uuid, ["value": .string(String(value))])
        } else {
            let uuid = UUIDText.random()
            save.insert("SyncToken", ["uuid": .string(uuid), "name": .string(name), "value": .string(String(value))])
            tokens[name] = (uuid, value)
        }
        tokens[name]?.value = value
    }

    /// SyncRecord rows for these records: (type, uuid) → (its own uuid, the change tag known).
    /// Asked type by type, so that the unique index on (recordType, recordUUID) answers.
    private func syncRecords(_ keys: [RecordKey]) throws -> [RecordKey: (uuid: String, tag: Int64?)] {
        var out: [RecordKey: (String, Int64?)] = [:]
        for (type, group) in Dictionary(grouping: keys, by: \.type) {
            for chunk in group.map(\.uuid).chunked(Self.batch) {
                var parameters = Self.parameters(Array(chunk))
                parameters["type"] = .string(type)
                for row in try broker.fetch("SyncRecord", where: "recordType == $type AND " + Self.inList("recordUUID", chunk.count),
                                            parameters: parameters) {
                    guard let record = row["recordUUID"]?.stringValue, let uuid = row["uuid"]?.stringValue else { continue }
                    out[RecordKey(type: type, uuid: record)] = (uuid, row["changeTag"]?.stringValue.flatMap { Int64($0) })
                }
            }
        }
        return out
    }

    static func inList(_ attribute: String, _ count: Int) -> String {
        "\(attribute) IN {" + (0..<count).map { "$p\($0)" }.joined(separator: ", ") + "}"
    }

    static func parameters(_ values: [String]) -> JSONObject {
        JSONObject(uniqueKeysWithValues: values.enumerated().map { ("p\($0.offset)", JSON.string($0.element)) })
    }

    // MARK: - Export

    /// One record's local state to push: its last row (nil: deleted) and the keys changed.
    struct Outgoing {
        var key: RecordKey
        var row: JSONObject?
        /// Each key changed here, with the version of its change (the latest one).
        var stamps: [String: String] = [:]
        /// An edit's record (not a row of unknown age): where this machine holds the server's
        /// version (`holds`), its stamps follow that version's (`FieldVersion.following`).
        var edited = false
        /// The record's change tag this machine last applied or wrote (its `SyncRecord`).
        var knownTag: Int64?
    }

    /// Exports the history since the exported token. Returns the records written. The first
    /// export of a store sends every synced row as it is: history older than sync may be gone.
    func export() throws -> Int {
        guard let pg else { return 0 }
        var written = 0
        if tokens["exported"] == nil { written += try exportEverything(on: pg) }
        var token = tokens["exported"]?.value ?? 0
        var conflicts = 0
        while true {
            let h = try broker.call("org.seam.Sync.History", ["since": .integer(token), "limit": .integer(Int64(Self.batch))])
            let changes = h["changes"]?.arrayValue ?? []
            let last = h["last"]?.int64Value ?? token
            report.pending = changes.count
            if changes.isEmpty { return written }
            var order: [RecordKey] = []
            var outgoing: [RecordKey: Outgoing] = [:]
            for c in changes where c["author"]?.stringValue != "sync" {
                guard let entity = c["entity"]?.stringValue, let uuid = c["uuid"]?.stringValue, synced[entity] != nil else { continue }
                let key = RecordKey(type: entity, uuid: uuid)
                if outgoing[key] == nil { order.append(key) }
                var o = outgoing[key] ?? Outgoing(key: key)
                o.row = c["row"]?.objectValue
                if o.row == nil { o.stamps = [:] } else {
                    let stamp = FieldVersion.stamp(time: c["time"]?.doubleValue ?? 0, device: device)
                    for k in (c["changedKeys"]?.arrayValue ?? []).compactMap(\.stringValue) { o.stamps[k] = stamp }
                }
                outgoing[key] = o
            }
            guard !order.isEmpty else {
                // Nothing here to export (the worker's own saves): forget it, and move on
                // without a save of the token, which would itself be history to read.
                try broker.call("org.seam.Sync.Acknowledge", ["through": .integer(last)])
                tokens["exported"]?.value = last
                token = last
                continue
            }
            // Rows past the bound on a record (written before there was one) stay here, set aside.
            let setAsideBefore = setAside
            var listChanged = false
            order.removeAll { key in
                guard let row = outgoing[key]?.row, let why = Self.tooLargeToSend(row) else { return false }
                if setAside.add(.init(type: key.type, uuid: key.uuid, tag: 0, reason: why)) {
                    log("this machine's \(key.type) \(key.uuid) is set aside, not sent: \(why)")
                    listChanged = true
                }
                return true
            }
            let known = try syncRecords(order)
            for key in order {
                outgoing[key]?.edited = true
                outgoing[key]?.knownTag = known[key]?.tag
                listChanged = setAside.remove(key) || listChanged
            }
            let (results, deletedThere) = try push(order.compactMap { outgoing[$0] }, on: pg)
            // The local save holds only if no record it changes was edited here after the
            // history was read (its fields that lost are taken only where the row is still the
            // row sent; a later edit is the next export's). After the read, not after this page:
            // an edit in a later page was there when the rows were read, and checking from the
            // page's end refused the save at every try, and stopped sync for good.
            var save = SaveBuilder(unchangedSince: h["sequence"]?.int64Value ?? last)
            // A record deleted here whose tombstone is now on the server must be gone here too:
            // an import that raced the delete may have brought it back, and the tombstone will
            // come back as this machine's own write, which the import skips.
            for p in results where outgoing[p.key]?.row == nil {
                if try broker.row(p.key.type, uuid: p.key.uuid) != nil { save.delete(p.key.type, p.key.uuid) }
            }
            // A record edited here that the server holds deleted: the delete wins, here too. The
            // import that brought the tombstone skipped it while the edit was waiting to be
            // exported, and it will not come again.
            for key in deletedThere {
                if try broker.row(key.type, uuid: key.uuid) != nil { save.delete(key.type, key.uuid) }
                if let record = known[key] { save.delete("SyncRecord", record.uuid) }
            }
            for p in results {
                // The server's version holds more than ours (a field of it won over the edit made
                // here): this machine takes it in this save. The import cannot be left to bring
                // it: its tag may be one the import has passed already (the record was imported,
                // then edited here with an older version, say on a clock behind another machine's).
                // Only the fields that lost, and only those not edited here again since this
                // export read them: a later edit is the next export's, with a newer version.
                var editedAgain = false
                if p.adopt, let sent = outgoing[p.key]?.row, let now = try broker.row(p.key.type, uuid: p.key.uuid) {
                    let won = localValues(p.fields, of: p.key.type).values.filter { k, v in (sent[k] ?? .null) != v }
                    let lost = won.filter { k, _ in (now[k] ?? .null) == (sent[k] ?? .null) }
                    editedAgain = lost.count < won.count
                    if !lost.isEmpty { save.update(p.key.type, p.key.uuid, JSONObject(uniqueKeysWithValues: lost.map { ($0.key, $0.value) })) }
                }
                // A field edited here again is not taken: this machine does not hold the server's
                // version, so its tag is not recorded either (an edit's version follows only a
                // version held, `holds`), and the next export merges the later edit with it.
                if !editedAgain { stamp(p, known: known, deletedHere: outgoing[p.key]?.row == nil, into: &save) }
            }
            let tokenBefore = tokens["exported"]
            var done = SaveBuilder()
            tokenChange("exported", last, into: &done)
            if listChanged { setAside.change(into: &done) }
            // In parts seamd takes (one save of 10,000 timers is 10,000 records to stamp): a part
            // lost to a crash before the token's is written again by the next export.
            let refusal: Error
            testPause?("export-save")
            do {
                try save.sendInParts(broker, then: done)
                try broker.call("org.seam.Sync.Acknowledge", ["through": .integer(last)])
                written += results.count
                token = last
                continue
            } catch {
                refusal = error
            }
            tokens["exported"] = tokenBefore
            setAside = setAsideBefore
            conflicts += 1
            guard Self.isRace(refusal), conflicts < Self.raceAttempts else { throw refusal }
            log("a record this export takes the server's fields for was edited here meanwhile; exporting it again")
        }
    }

    /// Why a row of this machine's cannot go to the server (its fields past the bound on a
    /// record, from before seamd held synced rows to it), or nil.
    static func tooLargeToSend(_ row: JSONObject) -> String? {
        let bytes = JSON.object(row).encoded().count
        guard bytes > ServerSchema.maxRecordBytes else { return nil }
        return "this machine's row takes \(bytes) bytes as JSON, past the \(ServerSchema.maxRecordBytes) a synced record may take; "
            + "it is sent once an edit makes it smaller"
    }

    /// The `SyncRecord` change for a record written to the server: its tag, and the fields of
    /// the server's version this store has no attribute for, kept for after a migration (none
    /// clears what was kept: the server's version has no such field now). A record deleted here
    /// keeps none once its delete is on the server: its tag would only recognise the delete
    /// coming back, which finds nothing to delete anyway, and the rows piled up, one per record
    /// ever deleted.
    private func stamp(_ p: Pushed, known: [RecordKey: (uuid: String, tag: Int64?)], deletedHere: Bool = false,
                       into save: inout SaveBuilder) {
        if deletedHere {
            if let existing = known[p.key] { save.delete("SyncRecord", existing.uuid) }
            return
        }
        var values: JSONObject = ["changeTag": .string(String(p.tag)), "modifiedAt": .string(RFC3339.format(WallClock.now())),
                                  "unknownFields": .object(localValues(p.fields, of: p.key.type).kept)]
        if let existing = known[p.key] {
            save.update("SyncRecord", existing.uuid, values)
        } else {
            values["recordType"] = .string(p.key.type)
            values["recordUUID"] = .string(p.key.uuid)
            save.insert("SyncRecord", values)
        }
    }

    /// Sends every row of every synced entity, in batches, then records the history sequence
    /// read before the first batch as exported (later changes follow through the history).
    private func exportEverything(on pg: PostgresConnection) throws -> Int {
        let start = try broker.call("org.seam.Sync.History", ["since": .integer(Int64.max / 2), "limit": .integer(1)])
        let sequence = start["sequence"]?.int64Value ?? 0
        let written = try exportRows(of: synced.keys.sorted(), on: pg)
        var save = SaveBuilder()
        // After a change of server, the history not exported to the old one follows, with its
        // real times: its edits win over the server's older versions, as they would have there.
        if let unexported = tokens["unexported"] {
            tokenChange("exported", min(sequence, unexported.value), into: &save)
            save.delete("SyncToken", unexported.uuid)
            tokens["unexported"] = nil
        } else {
            tokenChange("exported", sequence, into: &save)
        }
        try save.send(broker)
        if written > 0 { log("first export: \(written) record(s)") }
        return written
    }

    /// Sends every row of `entities` as it stands, in batches; returns the records written.
    ///
    /// A pipeline of three: while the server takes a page, seamd reads the next one and saves
    /// the last one's `SyncRecord`s. A store without a `SyncRecord` (one that never synced)
    /// has no tags to look up.
    private func exportRows(of entities: [String], on pg: PostgresConnection) throws -> Int {
        var written = 0
        let looksUp = try broker.count("SyncRecord") > 0
        var saving: JSON?  // the last page's save, answered before the next one is sent
        var sent: Page?  // the last page, its insert answered once the next page is ready
        defer {
            if sent != nil {
                _ = try? pg.finishSent()
                _ = try? pg.query("ROLLBACK")
            }
            if let saving { _ = try? broker.finish(saving) }
        }
        // The last page's answer: its records' tags recorded here (saved while the server takes
        // the next page). A record whose server version is not the local row is left to the
        // import that follows (its tag is new to this machine, which has not imported yet).
        func finish(_ page: Page) throws {
            sent = nil
            let results = try finishPage(page, on: pg)
            var save = SaveBuilder()
            let known = looksUp ? try syncRecords(results.map(\.key)) : [:]
            for p in results where !p.adopt { stamp(p, known: known, into: &save) }
            if let id = saving {
                saving = nil
                try broker.finish(id)
            }
            let parts = save.parts()
            for part in parts.dropLast() { try part.send(broker) }
            saving = try parts.last?.begin(broker)
            written += results.count
        }
        for entity in entities {
            try forEachPage(of: entity, ahead: true) { rows in
                // Rows as they stand, of unknown age: their fields lose to any versioned edit.
                let oldest = FieldVersion.stamp(time: 0, device: device)
                let outgoing = rows.filter { Self.tooLargeToSend($0) == nil }.compactMap { row in
                    row["uuid"]?.stringValue.map { uuid in
                        Outgoing(key: RecordKey(type: entity, uuid: uuid), row: row,
                                 stamps: Dictionary(uniqueKeysWithValues: (synced[entity] ?? []).map { ($0, oldest) }))
                    }
                }
                // (A row the server holds deleted is left to the import that follows.) Prepared
                // while the server inserts the last page.
                let next = page(outgoing)
                if let last = sent { try finish(last) }
                try send(next, on: pg)
                sent = next
            }
        }
        if let page = sent { try finish(page) }
        if let id = saving {
            saving = nil
            try broker.finish(id)
        }
        return written
    }

    // MARK: - Entities a migration brought

    /// Catches up on the synced entities this store gained since its records were last all
    /// here: a migration added them, or renamed an entity to them. Until then this machine
    /// neither sent their rows (rows a migration makes have no history) nor kept the server's
    /// records of them (the import passes a record of an entity the store lacks). So every row
    /// of theirs is sent as it stands, as by a first export; every server record of theirs up
    /// to the `server` token is imported (later ones come with the import that follows); and
    /// the entities covered are recorded. Returns the records sent and brought.
    ///
    /// Work lost to a crash before the `entities` token is saved is done again at the next
    /// cycle, and finds the server holding what was sent and this store what was brought.
    func coverGainedEntities(on pg: PostgresConnection) throws -> (sent: Int, brought: Int) {
        let now = Set(synced.keys)
        if covered?.entities == now { return (0, 0) }
        // A store that synced before the token existed: its entities are taken as covered (no
        // model version since sync shipped has added a synced entity).
        let gained = covered.map { now.subtracting($0.entities).sorted() } ?? []
        var sent = 0, brought = 0
        if !gained.isEmpty {
            sent = try exportRows(of: gained, on: pg)
            let token = tokens["server"]?.value ?? 0
            var state = ImportState(token: token, fresh: false, movesToken: false)
            // Tombstones too: a row a migration made here that was deleted elsewhere goes here as well.
            brought = try importRecords(where: { _ in "record_type = ANY($1::text[]) AND change_tag <= \(token)" },
                                        [PostgresArray.literal(gained)], &state, on: pg)
            log("the store now has \(gained.joined(separator: ", ")): sent \(sent) row(s), brought \(brought) earlier record(s)")
        }
        let value = JSON.string(now.sorted().joined(separator: ","))
        let uuid = covered?.uuid ?? UUIDText.random()
        var save = SaveBuilder()
        if covered == nil {
            save.insert("SyncToken", ["uuid": .string(uuid), "name": "entities", "value": value])
        } else {
            save.update("SyncToken", uuid, ["value": value])
        }
        try save.send(broker)
        covered = (uuid, now)
        return (sent, brought)
    }

    typealias ServerRecord = SyncPlanner.ServerRecord

    /// Writes the records with optimistic concurrency on change tags: the server's versions are
    /// read without a lock, merged, and each write is conditional on the tag read (`WHERE
    /// change_tag = seen`, or an insert that finds no row). A record another machine wrote in
    /// between is read and merged again, up to a few times. The writes of one round commit
    /// together, under the zone's lock only for that commit, so that tags are handed out in
    /// commit order. Returns, per record written, its tag, its fields on the server and whether
    /// they differ from the local row (`Pushed`), and the records edited here that the server
    /// holds deleted (the delete wins: they must go here too).
    func push(_ records: [Outgoing], on pg: PostgresConnection) throws -> (written: [Pushed], deletedThere: [RecordKey]) {
        var remaining = records
        var out: [Pushed] = []
        var deletedThere: [RecordKey] = []
        for attempt in 0..<8 where !remaining.isEmpty {
            if attempt > 0 { log("\(remaining.count) record(s) changed on the server meanwhile; merging again") }
            let server = try read(remaining.map(\.key), on: pg)
            var conflicted: [Outgoing] = []
            try pg.transaction {
                // The zone's row in seam.zones, locked by its first write until the commit, orders
                // the zone's commits as its tags.
                var new: [NewRecord] = []
                for r in remaining {
                    if server[r.key] == nil, let row = r.row {
                        new.append(newRecord(r, row))
                        continue
                    }
                    switch try write(r, over: server[r.key], on: pg) {
                    case .written(let tag, let fields, let adopt): out.append((r.key, tag, fields, adopt))
                    case .unchanged(let deleted): if deleted { deletedThere.append(r.key) }
                    case .conflict: conflicted.append(r)
                    }
                }
                for chunk in new.chunked(Self.batch) {
                    let tags = try insert(Array(chunk), on: pg)
                    for n in chunk {
                        if let tag = tags[n.record.key] { out.append((n.record.key, tag, n.merged, n.adopt)) } else { conflicted.append(n.record) }
                    }
                }
                if conflicted.count < remaining.count { try pg.query("SELECT seam.notify()") }
            }
            remaining = conflicted
        }
        guard remaining.isEmpty else {
            throw SyncFailure("\(remaining.count) record(s) kept changing on the server while being written; trying again later")
        }
        return (out, deletedThere)
    }

    private func read(_ keys: [RecordKey], on pg: PostgresConnection) throws -> [RecordKey: ServerRecord] {
        var server: [RecordKey: ServerRecord] = [:]
        // Type by type, one primary-key lookup per record: the lateral subquery with its LIMIT
        // is planned on its own, as an index probe. Planned as a whole (`uuid = ANY($2)`), a
        // table filled since its statistics were gathered — the first export's — is scanned
        // whole for every batch.
        for (type, group) in Dictionary(grouping: keys, by: \.type) {
            let uuids = "{" + group.map(\.uuid).joined(separator: ",") + "}"
            for row in try pg.query("SELECT r.uuid::text, r.fields::text, r.change_tag, r.deleted, r.versions::text "
                                    + "FROM unnest($2::uuid[]) AS k(uuid) CROSS JOIN LATERAL (SELECT * FROM seam.records "
                                    + "WHERE zone = session_user AND record_type = $1 AND uuid = k.uuid LIMIT 1) AS r", [type, uuids]) {
                guard let uuid = row[0], let tag = row[2].flatMap({ Int64($0) }) else { continue }
                // A version dated past any clock counts as none: an edit made here wins over it.
                let versions = SyncPlanner.acceptedVersions((try? JSON.decode(row[4] ?? "{}"))?.objectValue ?? [:], now: WallClock.now())
                server[RecordKey(type: type, uuid: uuid)] = ((try? JSON.decode(row[1] ?? "{}"))?.objectValue ?? [:], versions, tag,
                                                             row[3] == "t")
            }
        }
        return server
    }

    /// A write's outcome: the record's tag on the server now, its fields there, and whether
    /// this machine must take some of them (`adopt`: the server's version is not exactly the
    /// local row, a field of it won over the local edit); or nothing written (a delete the
    /// server already holds, or a record it holds deleted: `deletedThere`, the delete wins), or a
    /// conflict (the record changed on the server since it was read).
    enum WriteOutcome { case written(Int64, fields: JSONObject, adopt: Bool), unchanged(deletedThere: Bool), conflict }

    /// One record's result in `push` (see `WriteOutcome`).
    typealias Pushed = (key: RecordKey, tag: Int64, fields: JSONObject, adopt: Bool)

    /// A record the server does not hold yet, ready to insert.
    struct NewRecord {
        var record: Outgoing
        var fields: String
        var versions: String
        var merged: JSONObject
        /// Whether the merged fields are not exactly the local row's.
        var adopt: Bool
    }

    private func newRecord(_ r: Outgoing, _ row: JSONObject) -> NewRecord {
        let merged = planner.merge(r, row, over: nil)
        return NewRecord(record: r, fields: Self.text(merged.fields), versions: Self.text(merged.versions), merged: merged.fields,
                         adopt: !merged.mine)
    }

    private static func text(_ object: JSONObject) -> String { String(decoding: JSON.object(object).encoded(), as: UTF8.self) }

    /// Inserts new records in one statement; the tag of each one inserted. One absent from the
    /// answer was inserted by another machine since it was read: a conflict, merged again.
    private func insert(_ records: [NewRecord], on pg: PostgresConnection) throws -> [RecordKey: Int64] {
        Self.tags(try pg.query(Self.insertSQL, Self.insertParameters(records)))
    }

    static let insertSQL = "SELECT kind, id, tag FROM seam.insert_records($1::text[], $2::uuid[], $3::jsonb[], $4::jsonb[])"

    static func insertParameters(_ records: [NewRecord]) -> [String?] {
        [PostgresArray.literal(records.map(\.record.key.type)), PostgresArray.literal(records.map(\.record.key.uuid)),
         PostgresArray.literal(records.map(\.fields)), PostgresArray.literal(records.map(\.versions))]
    }

    /// `seam.insert_records`'s answer: each record inserted, with its tag.
    static func tags(_ rows: [[String?]]) -> [RecordKey: Int64] {
        var tags: [RecordKey: Int64] = [:]
        for row in rows {
            guard let type = row[0], let uuid = row[1], let tag = row[2].flatMap({ Int64($0) }) else { continue }
            tags[RecordKey(type: type, uuid: uuid)] = tag
        }
        return tags
    }

    /// A page of a first export: its records, and its insert's parameters, ready to send.
    struct Page {
        var records: [NewRecord]
        var parameters: [String?]
    }

    /// A first export's page: every record to be inserted without a look first (one the
    /// server holds already is refused by the insert, then read and merged).
    private func page(_ records: [Outgoing]) -> Page {
        let new = records.compactMap { r in r.row.map { newRecord(r, $0) } }
        return Page(records: new, parameters: Self.insertParameters(new))
    }

    /// Starts `page`'s insert in a transaction of its own; `finishPage` reads the answer, once
    /// the worker has prepared the next page meanwhile.
    private func send(_ page: Page, on pg: PostgresConnection) throws {
        try pg.query("BEGIN")
        do { try pg.send(Self.insertSQL, page.parameters) } catch {
            _ = try? pg.query("ROLLBACK")
            throw error
        }
    }

    /// Ends a page `sendPage` started: committed, with a notification when it wrote anything;
    /// the records the server held already are read and merged as `push` does.
    private func finishPage(_ page: Page, on pg: PostgresConnection) throws -> [Pushed] {
        var out: [Pushed] = [], conflicted: [Outgoing] = []
        do {
            let tags = Self.tags(try pg.finishSent())
            for n in page.records {
                if let tag = tags[n.record.key] { out.append((n.record.key, tag, n.merged, n.adopt)) } else { conflicted.append(n.record) }
            }
            if !out.isEmpty { try pg.query("SELECT seam.notify()") }
            try pg.query("COMMIT")
        } catch {
            _ = try? pg.query("ROLLBACK")
            throw error
        }
        if !conflicted.isEmpty { out += try push(conflicted, on: pg).written }
        return out
    }

    /// One record's write over the server's version `current` (`SyncPlanner.planWrite`),
    /// conditional on that version being still there. (A record the server does not hold is
    /// inserted by `insert`.)
    private func write(_ r: Outgoing, over current: ServerRecord?, on pg: PostgresConnection) throws -> WriteOutcome {
        switch planner.planWrite(r, over: current) {
        case .nothing(let deletedThere):
            return .unchanged(deletedThere: deletedThere)
        case .insert:
            return .unchanged(deletedThere: false)  // `push` inserts what the server lacks, in one statement
        case .unchanged(let tag, let fields, let adopt):
            return .written(tag, fields: fields, adopt: adopt)
        case .tombstone(let over):
            let tag = try pg.query("SELECT seam.update_record($1, $2::uuid, '{}', '{}', $3, true)", [r.key.type, r.key.uuid, String(over)])
            guard let t = tag.first?[0].flatMap({ Int64($0) }) else { return .conflict }
            return .written(t, fields: [:], adopt: false)
        case .update(let fields, let versions, let over, let adopt):
            let tag = try pg.query("SELECT seam.update_record($1, $2::uuid, $3::jsonb, $4::jsonb, $5, false)",
                                   [r.key.type, r.key.uuid, Self.text(fields), Self.text(versions), String(over)])
            guard let t = tag.first?[0].flatMap({ Int64($0) }) else { return .conflict }
            return .written(t, fields: fields, adopt: adopt)
        }
    }

    /// Every row of `entity`, a page of `batch` at a time in uuid order. Paged by key, not by
    /// offset: a row deleted from a page already read would shift the rest back, and the row
    /// moved onto that page would be skipped (and offsets cost SQLite the rows they skip).
    ///
    /// With `ahead`, the next page is asked for before `body` runs on this one, so that seamd
    /// reads it while `body` waits on the server: `body` must not change rows past its page.
    func forEachPage(of entity: String, fields: [String]? = nil, ahead: Bool = false, _ body: ([JSONObject]) throws -> Void) throws {
        func begin(after: String?) throws -> JSON {
            try broker.beginFetch(entity, where: after == nil ? nil : "uuid > $after", parameters: after.map { ["after": .string($0)] } ?? [:],
                                  sort: "uuid", limit: Self.batch, fields: fields)
        }
        var next: JSON? = try begin(after: nil)
        // Answered before anything else is asked of seamd when `body` throws.
        defer { if let next { _ = try? broker.finishFetch(next) } }
        while let id = next {
            next = nil
            let rows = try broker.finishFetch(id)
            guard let last = rows.last?["uuid"]?.stringValue else { return }
            let more = rows.count == Self.batch
            if more && ahead { next = try begin(after: last) }
            try body(rows)
            if more && !ahead { next = try begin(after: last) }
        }
    }

    /// Values kept for fields this store did not know, now that it does (it was migrated):
    /// written into their new columns, and no longer kept. A page of SyncRecords at a time, each
    /// page's fills in one save: memory and saves stay bounded however many records there are.
    /// A field edited here since the last export is not filled: the edit is newer than the
    /// store's migration, and the export merges it with the server's version (taking the
    /// server's where that wins). The save holds only if no record it fills was edited after the
    /// history was read; else the page is read and filled again.
    func fillKeptFields() throws {
        var filled = 0
        try forEachPage(of: "SyncRecord", fields: ["uuid", "recordType", "recordUUID", "unknownFields"]) { rows in
            // The records with a kept value that now has a column (their values, and what stays kept).
            var fills: [(own: String, key: RecordKey, now: JSONObject, rest: JSONObject)] = []
            for row in rows {
                guard let kept = row["unknownFields"]?.objectValue, !kept.isEmpty, let type = row["recordType"]?.stringValue,
                      let uuid = row["recordUUID"]?.stringValue, let own = row["uuid"]?.stringValue, synced[type] != nil else { continue }
                let (now, rest) = localValues(kept, of: type)
                if !now.isEmpty { fills.append((own, RecordKey(type: type, uuid: uuid), now, rest)) }
            }
            guard !fills.isEmpty else { return }
            for attempt in 1...Self.raceAttempts {
                let pending = try pendingChanges()
                let existing = try existingRows(fills.map(\.key))
                var save = SaveBuilder(unchangedSince: pending.through)
                for fill in fills {
                    let edited = pending.changed[fill.key] ?? []
                    let now = fill.now.filter { !edited.contains($0.key) }
                    if existing.contains(fill.key) && !now.isEmpty {
                        save.update(fill.key.type, fill.key.uuid, JSONObject(uniqueKeysWithValues: now.map { ($0.key, $0.value) }))
                    }
                    save.update("SyncRecord", fill.own, ["unknownFields": .object(fill.rest)])
                }
                let refusal: Error
                do {
                    try save.send(broker)
                    filled += fills.count
                    return
                } catch {
                    refusal = error
                }
                guard Self.isRace(refusal), attempt < Self.raceAttempts else { throw refusal }
            }
        }
        if filled > 0 { log("filled new fields of \(filled) record(s) with the values kept for them") }
    }

    /// Which of these records have a row here, asked entity by entity, a batch at a time.
    private func existingRows(_ keys: [RecordKey]) throws -> Set<RecordKey> {
        var existing: Set<RecordKey> = []
        for (type, group) in Dictionary(grouping: keys, by: \.type) {
            for chunk in group.map(\.uuid).chunked(Self.batch) {
                for row in try broker.fetch(type, where: Self.inList("uuid", chunk.count), parameters: Self.parameters(Array(chunk)),
                                            fields: ["uuid"]) {
                    if let u = row["uuid"]?.stringValue { existing.insert(RecordKey(type: type, uuid: u)) }
                }
            }
        }
        return existing
    }

    // MARK: - Import

    /// The synced records with local changes not yet exported, each with the keys changed, and
    /// the sequence number the history was read through: a save made from them holds only if no
    /// later history touches its records (`unchangedSince`).
    private func pendingChanges() throws -> (changed: [RecordKey: Set<String>], through: Int64) {
        let since = tokens["exported"]?.value ?? 0
        var changed: [RecordKey: Set<String>] = [:]
        var from = since
        while true {
            let h = try broker.call("org.seam.Sync.History", ["since": .integer(from), "limit": .integer(10_000)])
            let changes = h["changes"]?.arrayValue ?? []
            for c in changes where c["author"]?.stringValue != "sync" {
                guard let e = c["entity"]?.stringValue, let u = c["uuid"]?.stringValue, synced[e] != nil else { continue }
                changed[RecordKey(type: e, uuid: u), default: []].formUnion((c["changedKeys"]?.arrayValue ?? []).compactMap(\.stringValue))
            }
            let last = h["last"]?.int64Value ?? from
            if changes.isEmpty || last == from { return (changed, from) }
            from = last
        }
    }

    /// Whether the Cloud store holds no row of a synced entity and no SyncRecord.
    private func storeHoldsNothingSynced() throws -> Bool {
        for entity in synced.keys.sorted() + ["SyncRecord"] where try broker.count(entity) > 0 { return false }
        return true
    }

    /// Applies the server's records since the server token. Returns the records applied.
    ///
    /// The records are read through a cursor, in change-tag order, a batch at a time: one query
    /// whose plan walks the `(zone, change_tag)` index, rather than a query per batch, which
    /// the planner may answer by sorting every remaining record (it does, on a table filled
    /// since it last gathered statistics — a new machine's case). A pass ends when the cursor
    /// does; records committed meanwhile are read by the next pass, up to the last tag the
    /// zone had when the import began: later ones are the next cycle's (their notification
    /// wakes it), after an export. Without that bound, other machines writing all the time kept
    /// the import going pass after pass, and nothing edited here was exported meanwhile. Tags
    /// of one zone commit in order (exports hold the zone's lock), so the token never passes an
    /// uncommitted record.
    ///
    /// A machine's first import into a store with none of the synced rows and no SyncRecord
    /// (a new machine) needs no lookups: every record is new, except those it has already
    /// inserted during this import (a record changed on the server meanwhile comes again).
    func importChanges() throws -> Int {
        guard let pg else { return 0 }
        let token = tokens["server"]?.value ?? 0
        var state = ImportState(token: token, fresh: token == 0 ? try storeHoldsNothingSynced() : false, movesToken: true)
        let last = try pg.query("SELECT coalesce(max(change_tag), 0) FROM seam.records WHERE zone = session_user").first?[0] ?? nil
        let ceiling = last.flatMap { Int64($0) } ?? 0
        return try importRecords(where: { "change_tag > \($0) AND change_tag <= \(ceiling)" }, [], &state, on: pg)
    }

    /// Applies the zone's records that `condition` (given the token, with `parameters`) selects,
    /// in change-tag order, through a cursor (see `importChanges`). When `state.movesToken`, pass
    /// after pass, each from where the last left the token, until one reads nothing; else one.
    /// Returns the records applied.
    private func importRecords(where condition: (Int64) -> String, _ parameters: [String?], _ state: inout ImportState,
                               on pg: PostgresConnection) throws -> Int {
        while true {
            let read = try pg.transaction {
                let condition = condition(state.token)
                // A record's fields and versions past the bound are not even read: it is set aside.
                let bound = ServerSchema.maxRecordBytes
                try pg.query("DECLARE seam_import NO SCROLL CURSOR FOR SELECT record_type, uuid::text, "
                             + "CASE WHEN octet_length(fields::text) <= \(bound) THEN fields::text END, change_tag, deleted, "
                             + "octet_length(fields::text), CASE WHEN octet_length(versions::text) <= \(bound) THEN versions::text END "
                             + "FROM seam.records WHERE zone = session_user AND \(condition) ORDER BY change_tag", parameters)
                var read = 0
                // Leaving early (the server went away mid-pass): the last batch's save is
                // answered before anything else is asked of seamd, so its reply is not lost.
                defer {
                    if let batch = state.saving { _ = try? broker.finish(batch.id) }
                    state.saving = nil
                }
                while true {
                    // The server reads the next batch while seamd saves the last.
                    let rows = try pg.query("FETCH \(Self.importBatch) FROM seam_import")
                    // Decoded while seamd saves the last batch.
                    let now = WallClock.now()
                    let records = rows.map { Self.serverRecord($0, now: now) }
                    try finishBatch(&state)
                    guard !rows.isEmpty else { return read }
                    for part in Self.parts(rows) {
                        try finishBatch(&state)
                        try apply(Array(part), &state, decoded: Array(records[part.indices]))
                    }
                    read += rows.count
                }
            }
            if read == 0 || !state.movesToken { return state.applied }
        }
    }

    func localValues(_ fields: JSONObject, of type: String) -> (values: JSONObject, kept: JSONObject) {
        planner.localValues(fields, of: type)
    }

    /// A record as the import's cursor read it (type, uuid, fields or null past the bound, tag,
    /// deleted, the fields' size, versions or null past the bound): its fields, or why it is
    /// set aside. A tombstone's fields do not matter.
    static func serverRecord(_ row: [String?], now: Double) -> Result<JSONObject, SetAsideReason> {
        if row[4] == "t" { return .success([:]) }
        guard let text = row[2] else {
            return .failure(SetAsideReason("its fields take \(row[5] ?? "?") bytes on the server, past the \(ServerSchema.maxRecordBytes) a "
                                           + "synced record may take"))
        }
        guard let fields = (try? JSON.decode(text))?.objectValue else {
            return .failure(SetAsideReason("its fields on the server are not a JSON object"))
        }
        guard let versionsText = row.count > 6 ? row[6] : "{}", let versions = (try? JSON.decode(versionsText))?.objectValue else {
            return .failure(SetAsideReason("its field versions on the server are not a JSON object of bounded size"))
        }
        for (field, version) in versions {
            guard let text = version.stringValue, let micros = FieldVersion.micros(of: text) else {
                return .failure(SetAsideReason("the version of its field '\(field.prefix(64))' is no version"))
            }
            if Double(micros) / 1_000_000 > now + FieldVersion.futureTolerance {
                let days = Int((Double(micros) / 1_000_000 - now) / 86_400)
                return .failure(SetAsideReason("the version of its field '\(field.prefix(64))' is dated \(days) days ahead of this machine's "
                                               + "clock: it would win every edit of that field"))
            }
        }
        return .success(fields)
    }

    /// A fetched batch cut where its records' fields pass `SaveBuilder.partBytes` (with a
    /// record's own overhead), so that each part's save is a frame seamd takes: a batch of
    /// timers with long notes could be tens of megabytes. Each part is a save of its own, with
    /// the token of its last record.
    static func parts(_ rows: [[String?]]) -> [ArraySlice<[String?]>] {
        var parts: [ArraySlice<[String?]>] = []
        var start = 0, bytes = 0
        for (i, row) in rows.enumerated() {
            let size = (row[2]?.utf8.count ?? 0) + 256
            if i > start && bytes + size > SaveBuilder.partBytes {
                parts.append(rows[start..<i])
                start = i
                bytes = 0
            }
            bytes += size
        }
        parts.append(rows[start...])
        return parts
    }

    /// Where an import stands between batches.
    struct ImportState {
        var token: Int64
        let fresh: Bool
        /// Whether the batches move the `server` token (the import); not when they bring
        /// earlier records (`coverGainedEntities`).
        let movesToken: Bool
        var applied = 0
        var insertedHere: Set<RecordKey> = []
        /// The last batch's save, sent and not yet answered.
        var saving: Batch?
    }

    /// One batch's save, sent, with what it takes to apply the batch again.
    struct Batch {
        var id: JSON
        var rows: [[String?]]
        /// The server token before the batch, in memory and in the store.
        var token: Int64
        var tokenRow: (uuid: String, value: Int64)?
        /// The records the save applies.
        var applied: Int
        /// The records set aside before the batch (the save would have changed the list).
        var setAsideBefore: SetAsideList
    }

    /// Times a save refused because a local save raced it (a `Conflict` from `unchangedSince`)
    /// is made again: an import's batch, an export's page.
    static let raceAttempts = 8

    /// Whether a save was refused because a local save raced it: seamd's `Conflict`, which
    /// the worker's saves meet only through `unchangedSince`.
    static func isRace(_ error: Error) -> Bool { (error as? ClientError)?.remoteName == "org.seam.Store.Conflict" }

    /// Waits for the last batch's save. One refused because a local save touched one of its
    /// records after the pending records were read (`Conflict`, from `unchangedSince`) is
    /// applied again: the record is pending now, so the server's version no longer goes over it.
    private func finishBatch(_ state: inout ImportState) throws {
        for attempt in 1...Self.raceAttempts {
            guard let batch = state.saving, let refusal = waitForSave(&state) else { return }
            if Self.isRefusedRecord(refusal) {
                try applyAgainInHalves(batch, refused: refusal, &state)
                return
            }
            guard Self.isRace(refusal), attempt < Self.raceAttempts else { throw refusal }
            log("a local save touched records of the import's batch meanwhile; applying it again (\(refusal))")
            state.token = batch.token
            tokens["server"] = batch.tokenRow
            setAside = batch.setAsideBefore
            try apply(batch.rows, &state)
        }
    }

    /// Waits for the answer to the batch's save in flight, if any: nil when it was applied (and
    /// counted), else why seamd refused it.
    private func waitForSave(_ state: inout ImportState) -> ClientError? {
        guard let batch = state.saving else { return nil }
        state.saving = nil
        do {
            _ = try broker.finish(batch.id)
            state.applied += batch.applied
            return nil
        } catch {
            return error
        }
    }

    /// Whether seamd refused a save for what a record holds (`InvalidRequest`: a value this
    /// build cannot store, written by another client or build), not for a race or a failure.
    static func isRefusedRecord(_ error: Error) -> Bool {
        ["org.seam.Store.InvalidRequest", "org.seam.Store.ValueTooLarge"].contains((error as? ClientError)?.remoteName)
    }

    /// A batch seamd refused for what a record holds, applied again in halves, each half that
    /// seamd refuses in halves again, down to the record it refuses: that one is passed over
    /// (logged; it comes again when it changes on the server) and the token moves past it, the
    /// rest are applied. One bad record among 2,000 costs some 20 saves, not 2,000. Else it
    /// would stop every later server change from reaching this machine, at every cycle.
    private func applyAgainInHalves(_ batch: Batch, refused refusal: ClientError, _ state: inout ImportState) throws {
        state.token = batch.token
        tokens["server"] = batch.tokenRow
        setAside = batch.setAsideBefore
        try applyHalves(batch.rows[...], refused: refusal, &state)
    }

    /// `rows`, which seamd refused (`refusal`), applied in halves.
    private func applyHalves(_ rows: ArraySlice<[String?]>, refused refusal: ClientError, _ state: inout ImportState) throws {
        guard rows.count == 1, let row = rows.first else {
            let middle = rows.startIndex + rows.count / 2
            for half in [rows[..<middle], rows[middle...]] where !half.isEmpty {
                let token = state.token, tokenRow = tokens["server"], listBefore = setAside
                try apply(Array(half), &state)
                guard let refused = waitForSave(&state) else { continue }
                guard Self.isRefusedRecord(refused) else { throw refused }
                state.token = token
                tokens["server"] = tokenRow
                setAside = listBefore
                try applyHalves(half, refused: refused, &state)
            }
            return
        }
        log("the server's \(row[0] ?? "?") \(row[1] ?? "?") (change tag \(row[3] ?? "?")) cannot be stored here, set "
            + "aside: \(refusal). Correct or delete it on the server; it comes again when it changes.")
        guard let tag = row[3].flatMap({ Int64($0) }), let type = row[0], let uuid = row[1] else { return }
        var save = SaveBuilder()
        if state.movesToken { tokenChange("server", tag, into: &save) }
        let reason: String = if case .remote(let e) = refusal.kind { e.parameters["message"]?.stringValue ?? "\(e)" } else { "\(refusal)" }
        if setAside.add(.init(type: type, uuid: uuid, tag: tag, reason: "this store refuses it: " + reason)) { setAside.change(into: &save) }
        try save.send(broker)
        if state.movesToken { state.token = tag }
    }

    /// Applies one batch of server records (in change-tag order) as one save, with the token;
    /// the save is sent, not waited for (`finishBatch`).
    ///
    /// `decoded`: `serverRecord` of each row, when the caller has it already.
    private func apply(_ rows: [[String?]], _ state: inout ImportState, decoded: [Result<JSONObject, SetAsideReason>]? = nil) throws {
        let token = state.token, fresh = state.fresh, tokenRow = tokens["server"], setAsideBefore = setAside
        let last = rows.last?[3].flatMap { Int64($0) } ?? token
        var incoming: [SyncPlanner.Incoming] = []
        var listChanged = false
        let now = WallClock.now()
        for (i, row) in rows.enumerated() {
            guard let type = row[0], let uuid = row[1], let tag = row[3].flatMap({ Int64($0) }), synced[type] != nil else { continue }
            let key = RecordKey(type: type, uuid: uuid)
            switch decoded?[i] ?? Self.serverRecord(row, now: now) {
            case .success(let fields):
                incoming.append(SyncPlanner.Incoming(key: key, fields: fields, tag: tag, deleted: row[4] == "t"))
            case .failure(let why):
                log("the server's \(type) \(uuid) (change tag \(tag)) is set aside: \(why). Correct or delete it on the server; "
                    + "it comes again when it changes")
                listChanged = setAside.add(.init(type: type, uuid: uuid, tag: tag, reason: why.description)) || listChanged
            }
        }
        // A record that comes again (changed on the server meanwhile) is looked up as usual.
        let lookups = !fresh || incoming.contains { state.insertedHere.contains($0.key) }
        let known = lookups ? try syncRecords(incoming.map(\.key)) : [:]
        let existing = lookups ? try existingRows(incoming.map(\.key)) : []
        // Records changed here since the last export (saves that raced this cycle, read just
        // before this batch is applied): the server's version must not overwrite them, nor
        // bring a deleted one back. The next export merges them; the import after it brings
        // the merged record.
        let pending = try pendingChanges()
        let local = SyncPlanner.Local(known: known, existing: existing, pending: Set(pending.changed.keys), fresh: fresh)
        let plan = planner.planImport(incoming, local: local, now: now)
        var save = plan.save
        save.unchangedSince = pending.through
        for key in plan.cleared { listChanged = setAside.remove(key) || listChanged }
        state.insertedHere.formUnion(plan.insertedHere)
        if state.movesToken { tokenChange("server", last, into: &save) }
        if listChanged { setAside.change(into: &save) }
        testPause?("import-save")
        if let id = try save.begin(broker) {
            state.saving = Batch(id: id, rows: rows, token: token, tokenRow: tokenRow, applied: plan.applied, setAsideBefore: setAsideBefore)
        }
        if state.movesToken { state.token = last }
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
        var parameters: JSONObject = ["inserts": .array(inserts), "updates": .array(updates), "deletes": .array(deletes)]
        if let unchangedSince { parameters["unchangedSince"] = .integer(unchangedSince) }
        return try broker.begin("org.seam.Store.Save", parameters)
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
    init(_ description: String) { self.description = description }
}
