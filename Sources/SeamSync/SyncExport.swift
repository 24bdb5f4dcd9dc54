import SeamClient
import SeamJSON
import SeamPostgres
import SeamProtocol
import SeamSchema
import SeamSystem

/// The export: the Cloud store's history since the `exported` token, coalesced per record and
/// written to the zone (`ZoneWriter`), then the records' tags and the token saved here in the
/// same saves; a store's first export, and an entity a migration brought, send every row as it
/// stands.
struct SyncExport {
    let shared: SyncState
    let pg: PostgresConnection

    typealias Pushed = ZoneWriter.Pushed
    typealias Page = ZoneWriter.Page

    private var zone: ZoneWriter {
        ZoneWriter(pg: pg, planner: shared.planner, log: shared.log, seal: shared.seal, encrypted: shared.encrypted)
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
        var written = 0
        if shared.tokens["exported"] == nil { written += try exportEverything() }
        var token = shared.tokens["exported"]?.value ?? 0
        var conflicts = 0
        while true {
            let h = try shared.broker.call("org.seam.Sync.History", ["since": .integer(token), "limit": .integer(Int64(SyncState.batch))])
            let changes = h["changes"]?.arrayValue ?? []
            let last = h["last"]?.int64Value ?? token
            shared.report.pending = changes.count
            if changes.isEmpty { return written }
            var order: [RecordKey] = []
            var outgoing: [RecordKey: Outgoing] = [:]
            for c in changes where c["author"]?.stringValue != "sync" {
                guard let entity = c["entity"]?.stringValue, let uuid = c["uuid"]?.stringValue, shared.synced[entity] != nil else { continue }
                let key = RecordKey(type: entity, uuid: uuid)
                if outgoing[key] == nil { order.append(key) }
                var o = outgoing[key] ?? Outgoing(key: key)
                o.row = c["row"]?.objectValue
                if o.row == nil { o.stamps = [:] } else {
                    let stamp = FieldVersion.stamp(time: c["time"]?.doubleValue ?? 0, device: shared.device)
                    for k in (c["changedKeys"]?.arrayValue ?? []).compactMap(\.stringValue) { o.stamps[k] = stamp }
                }
                outgoing[key] = o
            }
            guard !order.isEmpty else {
                // Nothing here to export (the worker's own saves): forget it, and move on
                // without a save of the token, which would itself be history to read.
                try shared.broker.call("org.seam.Sync.Acknowledge", ["through": .integer(last)])
                shared.tokens["exported"]?.value = last
                token = last
                continue
            }
            // Rows past the bound on a record (written before there was one) stay here, set aside.
            let setAsideBefore = shared.setAside
            var listChanged = false
            order.removeAll { key in
                guard let row = outgoing[key]?.row, let why = Self.tooLargeToSend(row) else { return false }
                if shared.setAside.add(.init(type: key.type, uuid: key.uuid, tag: 0, reason: why)) {
                    shared.log("this machine's \(key.type) \(key.uuid) is set aside, not sent: \(why)")
                    listChanged = true
                }
                return true
            }
            let known = try shared.syncRecords(order)
            for key in order {
                outgoing[key]?.edited = true
                outgoing[key]?.knownTag = known[key]?.tag
                listChanged = shared.setAside.remove(key) || listChanged
            }
            let pushed = try pushSettingAside(order.compactMap { outgoing[$0] })
            let (results, deletedThere) = (pushed.written, pushed.deletedThere)
            listChanged = setAside(pushed.refused) || listChanged
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
                if try shared.broker.row(p.key.type, uuid: p.key.uuid) != nil { save.delete(p.key.type, p.key.uuid) }
            }
            // A record edited here that the server holds deleted: the delete wins, here too. The
            // import that brought the tombstone skipped it while the edit was waiting to be
            // exported, and it will not come again.
            for key in deletedThere {
                if try shared.broker.row(key.type, uuid: key.uuid) != nil { save.delete(key.type, key.uuid) }
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
                if p.adopt, let sent = outgoing[p.key]?.row, let now = try shared.broker.row(p.key.type, uuid: p.key.uuid) {
                    let won = shared.localValues(p.fields, of: p.key.type).values.filter { k, v in (sent[k] ?? .null) != v }
                    let lost = won.filter { k, _ in (now[k] ?? .null) == (sent[k] ?? .null) }
                    editedAgain = lost.count < won.count
                    if !lost.isEmpty { save.update(p.key.type, p.key.uuid, JSONObject(uniqueKeysWithValues: lost.map { ($0.key, $0.value) })) }
                }
                // A field edited here again is not taken: this machine does not hold the server's
                // version, so its tag is not recorded either (an edit's version follows only a
                // version held, `holds`), and the next export merges the later edit with it.
                if !editedAgain { stamp(p, known: known, deletedHere: outgoing[p.key]?.row == nil, into: &save) }
            }
            let tokenBefore = shared.tokens["exported"]
            var done = SaveBuilder()
            shared.tokenChange("exported", last, into: &done)
            if listChanged { shared.setAside.change(into: &done) }
            // In parts seamd takes (one save of 10,000 timers is 10,000 records to stamp): a part
            // lost to a crash before the token's is written again by the next export.
            let refusal: Error
            shared.testPause?("export-save")
            do {
                try save.sendInParts(shared.broker, then: done)
                try shared.broker.call("org.seam.Sync.Acknowledge", ["through": .integer(last)])
                written += results.count
                token = last
                continue
            } catch {
                refusal = error
            }
            shared.tokens["exported"] = tokenBefore
            shared.setAside = setAsideBefore
            conflicts += 1
            guard SyncState.isRace(refusal), conflicts < SyncState.raceAttempts else { throw refusal }
            shared.log("a record this export takes the server's fields for was edited here meanwhile; exporting it again")
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

    /// Whether the server refused a statement for what a record in it holds, whatever this
    /// machine's checks said: a data exception (SQLSTATE class 22: text `jsonb` cannot hold) or a
    /// limit passed (class 54: fields past the bound as the server writes them, which spaces its
    /// JSON text, so a record under it here may not be there).
    static func refusesRecord(_ error: Error) -> Bool {
        guard let state = (error as? PostgresError)?.sqlState else { return false }
        return state.hasPrefix("22") || state.hasPrefix("54")
    }

    /// `zone.push(records)`; when the server refuses a record in it (`refusesRecord`), pushed
    /// again in halves, each half the server refuses in halves again, down to the records it
    /// refuses: those are returned with why, not written, and every other record is. One bad
    /// record among 500 costs some 18 pushes, and stops nothing else: before, it failed the
    /// export at every cycle, and nothing of this machine's reached the server again.
    private func pushSettingAside(_ records: [Outgoing]) throws
        -> (written: [Pushed], deletedThere: [RecordKey], refused: [(key: RecordKey, reason: String)]) {
        do {
            let pushed = try zone.push(records)
            return (pushed.written, pushed.deletedThere, [])
        } catch where Self.refusesRecord(error) && !records.isEmpty {
            guard records.count > 1 else {
                return ([], [], [(records[0].key, "the server refuses it: " + Self.serverReason(error))])
            }
            let middle = records.count / 2
            let first = try pushSettingAside(Array(records[..<middle]))
            let second = try pushSettingAside(Array(records[middle...]))
            return (first.written + second.written, first.deletedThere + second.deletedThere, first.refused + second.refused)
        }
    }

    /// The server's message for a refused statement, its first line without libpq's severity
    /// prefix, its context or the statement: `seam: a record's fields take at most … (SQLSTATE 54000)`.
    static func serverReason(_ error: Error) -> String {
        guard let e = error as? PostgresError else { return "\(error)" }
        var message = e.message.split(separator: "\n").first ?? ""
        if message.hasPrefix("ERROR:") { message = message.dropFirst("ERROR:".count) }
        return PostgresError(sqlState: e.sqlState, message: String(message.drop { $0 == " " })).description
    }

    /// Puts this machine's records the server refused on the set-aside list (sent again once an
    /// edit changes them), logged; whether the list changed.
    private func setAside(_ refused: [(key: RecordKey, reason: String)]) -> Bool {
        var changed = false
        for (key, reason) in refused where shared.setAside.add(.init(type: key.type, uuid: key.uuid, tag: 0, reason: reason)) {
            shared.log("this machine's \(key.type) \(key.uuid) is set aside, not sent: \(reason). It is sent again once an edit changes it")
            changed = true
        }
        return changed
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
        var values: JSONObject = ["changeTag": .string(String(p.tag)), "modifiedAt": .double(WallClock.now()),
                                  "unknownFields": .object(shared.localValues(p.fields, of: p.key.type).kept)]
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
    private func exportEverything() throws -> Int {
        let start = try shared.broker.call("org.seam.Sync.History", ["since": .integer(Int64.max / 2), "limit": .integer(1)])
        let sequence = start["sequence"]?.int64Value ?? 0
        let written = try exportRows(of: shared.synced.keys.sorted())
        var save = SaveBuilder()
        // After a change of server, the history not exported to the old one follows, with its
        // real times: its edits win over the server's older versions, as they would have there.
        if let unexported = shared.tokens["unexported"] {
            shared.tokenChange("exported", min(sequence, unexported.value), into: &save)
            save.delete("SyncToken", unexported.uuid)
            shared.tokens["unexported"] = nil
        } else {
            shared.tokenChange("exported", sequence, into: &save)
        }
        try save.send(shared.broker)
        if written > 0 { shared.log("first export: \(written) record(s)") }
        return written
    }

    /// Sends every row of `entities` as it stands, in batches; returns the records written.
    ///
    /// A pipeline of three: while the server takes a page (one statement, its own transaction),
    /// seamd reads the next one and saves the last one's `SyncRecord`s. The next page is sent as
    /// soon as the last one's answer is read, before that answer is worked on, so that the
    /// server is never left waiting for the worker. Records the server held already are merged
    /// at the end, when no page is in flight. A store without a `SyncRecord` (one that never
    /// synced) has no tags to look up.
    private func exportRows(of entities: [String]) throws -> Int {
        var written = 0
        let looksUp = try shared.broker.count("SyncRecord") > 0
        var saving: JSON?  // the last page's save, answered before the next one is sent
        var sent: Page?  // the page in flight on the server
        var held: [Outgoing] = []  // records the server held already, merged at the end
        defer {
            if sent != nil { _ = try? pg.finishSent() }  // committed or not on its own; a later export finds it either way
            if let saving { _ = try? shared.broker.finish(saving) }
        }
        // A page's answer: its records' tags recorded here (saved while the server takes the
        // next page). A record whose server version is not the local row is left to the import
        // that follows (its tag is new to this machine, which has not imported yet).
        func record(_ results: [Pushed]) throws {
            var save = SaveBuilder()
            let known = looksUp ? try shared.syncRecords(results.map(\.key)) : [:]
            for p in results where !p.adopt { stamp(p, known: known, into: &save) }
            if let id = saving {
                saving = nil
                try shared.broker.finish(id)
            }
            let parts = save.parts()
            for part in parts.dropLast() { try part.send(shared.broker) }
            saving = try parts.last?.begin(shared.broker)
            written += results.count
        }
        // A page's answer taken: the records the server held kept for the end, the rest recorded.
        func take(_ answered: (written: [Pushed], held: [Outgoing])) throws {
            held += answered.held
            try record(answered.written)
        }
        // A page's answer read. A page the server refused for a record in it inserted nothing
        // (one statement): its records are pushed again, in halves around the refused ones.
        var listChanged = false
        func finish(_ page: Page) throws -> (written: [Pushed], held: [Outgoing]) {
            do {
                return try zone.finishPage(page)
            } catch where Self.refusesRecord(error) {
                let pushed = try pushSettingAside(page.records.map(\.record))
                listChanged = setAside(pushed.refused) || listChanged
                return (pushed.written, [])  // (one the server holds deleted is left to the import, as for any page)
            }
        }
        for entity in entities {
            try shared.forEachPage(of: entity, ahead: true) { rows in
                // Rows as they stand, of unknown age: their fields lose to any versioned edit.
                // The same stamps for every row of the page: made once, shared.
                let oldest = FieldVersion.stamp(time: 0, device: shared.device)
                let stamps = Dictionary(uniqueKeysWithValues: (shared.synced[entity] ?? []).map { ($0, oldest) })
                let outgoing = rows.filter { Self.tooLargeToSend($0) == nil }.compactMap { row in
                    row["uuid"]?.stringValue.map { uuid in Outgoing(key: RecordKey(type: entity, uuid: uuid), row: row, stamps: stamps) }
                }
                // (A row the server holds deleted is left to the import that follows.) Prepared
                // while the server inserts the last page.
                let next = zone.page(outgoing)
                let answered = try sent.map { try finish($0) }
                sent = nil
                try zone.send(next)
                sent = next
                if let answered { try take(answered) }
            }
        }
        if let page = sent {
            sent = nil
            try take(try finish(page))
        }
        if !held.isEmpty {
            let pushed = try pushSettingAside(held)
            listChanged = setAside(pushed.refused) || listChanged
            try record(pushed.written)
        }
        if let id = saving {
            saving = nil
            try shared.broker.finish(id)
        }
        if listChanged {
            var save = SaveBuilder()
            shared.setAside.change(into: &save)
            try save.send(shared.broker)
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
    func coverGainedEntities() throws -> (sent: Int, brought: Int) {
        let now = Set(shared.synced.keys)
        if shared.covered?.entities == now { return (0, 0) }
        // A store that synced before the token existed: its entities are taken as covered (no
        // model version since sync shipped has added a synced entity).
        let gained = shared.covered.map { now.subtracting($0.entities).sorted() } ?? []
        var sent = 0, brought = 0
        if !gained.isEmpty {
            sent = try exportRows(of: gained)
            let token = shared.tokens["server"]?.value ?? 0
            var state = SyncImport.ImportState(token: token, fresh: false, movesToken: false)
            // Tombstones too: a row a migration made here that was deleted elsewhere goes here as well.
            brought = try SyncImport(shared: shared, pg: pg).importRecords(where: { _ in "record_type = ANY($1::text[]) AND change_tag <= \(token)" },
                                        [PostgresArray.literal(gained)], &state)
            shared.log("the store now has \(gained.joined(separator: ", ")): sent \(sent) row(s), brought \(brought) earlier record(s)")
        }
        let value = JSON.string(now.sorted().joined(separator: ","))
        let uuid = shared.covered?.uuid ?? UUIDText.random()
        var save = SaveBuilder()
        if shared.covered == nil {
            save.insert("SyncToken", ["uuid": .string(uuid), "name": "entities", "value": value])
        } else {
            save.update("SyncToken", uuid, ["value": value])
        }
        try save.send(shared.broker)
        shared.covered = (uuid, now)
        return (sent, brought)
    }
}
