import SeamClient
import SeamJSON
import SeamPostgres
import SeamProtocol
import SeamSchema
import SeamSystem

/// The import: the zone's records since the `server` token, read through a cursor a batch at a
/// time and applied through seamd (`SyncPlanner.planImport` decides what each one does), each
/// batch's save with the token it reaches; a batch seamd refuses for one record is applied again
/// in halves, and that record set aside.
struct SyncImport {
    let shared: SyncState
    let pg: PostgresConnection

    /// Server records per import save: larger than an export's batch, since a new machine may
    /// have a great many.
    static let importBatch = 2000

    /// Whether the Cloud store holds no row of a synced entity and no SyncRecord.
    private func storeHoldsNothingSynced() throws -> Bool {
        for entity in shared.synced.keys.sorted() + ["SyncRecord"] where try shared.broker.count(entity) > 0 { return false }
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
        let token = shared.tokens["server"]?.value ?? 0
        var state = ImportState(token: token, fresh: token == 0 ? try storeHoldsNothingSynced() : false, movesToken: true)
        let last = try pg.query("SELECT coalesce(max(change_tag), 0) FROM seam.records WHERE zone = session_user").first?[0] ?? nil
        let ceiling = last.flatMap { Int64($0) } ?? 0
        return try importRecords(where: { "change_tag > \($0) AND change_tag <= \(ceiling)" }, [], &state)
    }

    /// Applies the zone's records that `condition` (given the token, with `parameters`) selects,
    /// in change-tag order, through a cursor (see `importChanges`). When `state.movesToken`, pass
    /// after pass, each from where the last left the token, until one reads nothing; else one.
    /// Returns the records applied.
    func importRecords(where condition: (Int64) -> String, _ parameters: [String?], _ state: inout ImportState) throws -> Int {
        while true {
            let read = try pg.transaction {
                let condition = condition(state.token)
                // A record's fields and versions past the bound are not even read: it is set aside.
                // Each is written as text once, in a lateral subquery that OFFSET 0 keeps from being
                // merged into the query (which would write it once for each use: the most of the
                // server's work here); the cursor still walks the change-tag index.
                let bound = ServerSchema.maxRecordBytes
                try pg.query("DECLARE seam_import NO SCROLL CURSOR FOR SELECT r.record_type, r.uuid::text, "
                             + "CASE WHEN octet_length(t.f) <= \(bound) THEN t.f END, r.change_tag, r.deleted, octet_length(t.f), "
                             + "CASE WHEN octet_length(t.v) <= \(bound) THEN t.v END FROM seam.records AS r "
                             + "CROSS JOIN LATERAL (SELECT r.fields::text AS f, r.versions::text AS v OFFSET 0) AS t "
                             + "WHERE r.zone = session_user AND \(condition) ORDER BY r.change_tag", parameters)
                var read = 0
                // The server's batches are read and decoded on a thread of their own, one ahead:
                // the thread opens a batch's sealed fields while this one plans the batch before
                // and seamd saves the one before that — and the server reads the next batch
                // meanwhile: each FETCH is sent before the batch it follows is decoded.
                let fetch = "FETCH \(Self.importBatch) FROM seam_import"
                let (seal, sealed) = (shared.seal, shared.encrypted)
                try pg.send(fetch)
                let fetcher: Prefetcher<Fetched>
                do {
                    fetcher = try Prefetcher<Fetched> { [pg] in
                        let rows = try pg.finishSent()
                        if rows.isEmpty { return nil }
                        try pg.send(fetch)
                        let now = WallClock.now()
                        return Fetched(rows: rows, records: rows.map { Self.serverRecord($0, now: now, seal: seal, sealed: sealed) })
                    }
                } catch {
                    _ = try? pg.finishSent()
                    throw error
                }
                // Leaving early (the server went away mid-pass): the fetching thread is stopped,
                // and a FETCH it sent answered, before the transaction ends; the last batch's
                // save is answered before anything else is asked of seamd, so its reply is not lost.
                defer {
                    fetcher.stop()
                    _ = try? pg.finishSent()
                    _ = waitForSave(&state)
                }
                while true {
                    let batch = try fetcher.next()
                    let (rows, records) = (batch?.rows ?? [], batch?.records ?? [])
                    if case .failure(let why)? = records.first(where: { if case .failure(let e) = $0 { e.stopsSync } else { false } }) {
                        throw SyncFailure(why.description, permanent: true)
                    }
                    guard !rows.isEmpty else {
                        try finishBatch(&state)
                        return read
                    }
                    // A batch the cursor filled may have another behind it; a part of a batch has.
                    let parts = Self.parts(rows)
                    for (i, part) in parts.enumerated() {
                        try applyAhead(Array(part), &state, decoded: Array(records[part.indices]),
                                       more: i < parts.count - 1 || rows.count == Self.importBatch)
                    }
                    read += rows.count
                }
            }
            if read == 0 || !state.movesToken { return state.applied }
        }
    }

    /// A batch of the import's cursor, each record decoded (`serverRecord`).
    struct Fetched: Sendable {
        var rows: [[String?]]
        var records: [Result<ServerFields, SetAsideReason>]
    }

    /// A record as the import's cursor read it (type, uuid, fields or null past the bound, tag,
    /// deleted, the fields' size, versions or null past the bound): its fields, sealed ones
    /// opened with `seal`, or why it is set aside. A tombstone's fields do not matter.
    /// With `sealed` (entity → the fields it seals), a record whose fields hold one of them in
    /// clear is marked `inClear`, to be sealed on the server after the import.
    static func serverRecord(_ row: [String?], now: Double, seal: FieldSeal?, sealed: [String: Set<String>] = [:])
        -> Result<ServerFields, SetAsideReason> {
        if row[4] == "t" { return .success(ServerFields(fields: [:], inClear: false)) }
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
        let inClear = sealed[row[0] ?? ""].map { names in names.contains { fields[$0].map { !FieldSeal.isSealed($0) } ?? false } } ?? false
        guard fields.values.contains(where: FieldSeal.isSealed) else { return .success(ServerFields(fields: fields, inClear: inClear)) }
        guard let seal else {
            return .failure(SetAsideReason("it holds sealed fields and this machine has no key for the zone: join it with its recovery "
                                           + "phrase (seam sync setup URL)", stopsSync: true))
        }
        switch seal.open(fields, entity: row[0] ?? "", uuid: row[1] ?? "") {
        case .success(let clear): return .success(ServerFields(fields: clear, inClear: inClear))
        case .failure(let why):
            if case .otherKey = why.reason { return .failure(SetAsideReason(why.description, stopsSync: true)) }
            return .failure(SetAsideReason(why.description))
        }
    }

    /// A server record's fields as this machine takes them (sealed ones opened), and whether it
    /// held a field this model seals in clear.
    struct ServerFields {
        var fields: JSONObject
        var inClear: Bool
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
        /// The records this fresh import inserted, by uuid: two words to hash rather than two
        /// texts, 100,000 times for a new machine (a uuid shared by two entities costs a lookup).
        var insertedHere: Set<UUIDBits> = []
        /// The last batch's save, sent and not yet answered.
        var saving: Batch?
        /// The first page of the local history read as the last batch's save ended (sent with
        /// it: `Batch.history`), for the next `pendingChanges`; taken once.
        var readAfterSave: JSONObject?
        /// The local changes pending when the last batch was planned.
        var pending: (changed: [RecordKey: Set<String>], through: Int64)?
        /// Batches applied again (a race, or in halves around a refused record): a plan made
        /// before the last one was answered is made again.
        var redone = 0
    }

    /// One batch's save, sent, with what it takes to apply the batch again.
    struct Batch {
        var id: JSON
        var planned: PlannedBatch
        /// The History call sent right behind the save (`SyncState.beginPendingChanges`).
        var history: JSON?
    }

    /// Waits for the last batch's save. One refused because a local save touched one of its
    /// records after the pending records were read (`Conflict`, from `unchangedSince`) is
    /// applied again: the record is pending now, so the server's version no longer goes over it.
    private func finishBatch(_ state: inout ImportState) throws {
        for attempt in 1...SyncState.raceAttempts {
            guard let batch = state.saving, let refusal = waitForSave(&state) else { return }
            state.redone += 1
            if Self.isRefusedRecord(refusal) {
                try applyAgainInHalves(batch, refused: refusal, &state)
                return
            }
            guard SyncState.isRace(refusal), attempt < SyncState.raceAttempts else { throw refusal }
            shared.log("a local save touched records of the import's batch meanwhile; applying it again (\(refusal))")
            undo(batch.planned, &state)
            try apply(batch.planned.rows, &state)
        }
    }

    /// Waits for the answer to the batch's save in flight, if any: nil when it was applied (and
    /// counted), else why seamd refused it. The History call sent behind it is answered too
    /// (`readAfterSave`, when the save was applied).
    private func waitForSave(_ state: inout ImportState) -> ClientError? {
        guard let batch = state.saving else { return nil }
        state.saving = nil
        state.readAfterSave = nil
        do {
            _ = try shared.broker.finish(batch.id)
            state.applied += batch.planned.applied
            if let history = batch.history { state.readAfterSave = try? shared.broker.finish(history) }
            return nil
        } catch {
            if let history = batch.history { _ = try? shared.broker.finish(history) }
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
        undo(batch.planned, &state)
        try applyHalves(batch.planned.rows[...], refused: refusal, &state)
    }

    /// `rows`, which seamd refused (`refusal`), applied in halves.
    private func applyHalves(_ rows: ArraySlice<[String?]>, refused refusal: ClientError, _ state: inout ImportState) throws {
        guard rows.count == 1, let row = rows.first else {
            let middle = rows.startIndex + rows.count / 2
            for half in [rows[..<middle], rows[middle...]] where !half.isEmpty {
                let token = state.token, tokenRow = shared.tokens["server"], listBefore = shared.setAside
                try apply(Array(half), &state)
                guard let refused = waitForSave(&state) else { continue }
                guard Self.isRefusedRecord(refused) else { throw refused }
                state.token = token
                shared.tokens["server"] = tokenRow
                shared.setAside = listBefore
                try applyHalves(half, refused: refused, &state)
            }
            return
        }
        shared.log("the server's \(row[0] ?? "?") \(row[1] ?? "?") (change tag \(row[3] ?? "?")) cannot be stored here, set "
            + "aside: \(refusal). Correct or delete it on the server; it comes again when it changes.")
        guard let tag = row[3].flatMap({ Int64($0) }), let type = row[0], let uuid = row[1] else { return }
        var save = SaveBuilder()
        if state.movesToken { shared.tokenChange("server", tag, into: &save) }
        let reason: String = if case .remote(let e) = refusal.kind { e.parameters["message"]?.stringValue ?? "\(e)" } else { "\(refusal)" }
        if shared.setAside.add(.init(type: type, uuid: uuid, tag: tag, reason: "this store refuses it: " + reason)) { shared.setAside.change(into: &save) }
        try save.send(shared.broker)
        if state.movesToken { state.token = tag }
    }

    /// Applies one batch as `apply` does, planned while seamd saves the last batch: the plan
    /// takes the local changes pending when the last batch was planned, and is made again only
    /// if the last batch had to be applied again or the changes pending now are others. (A plan
    /// made from an older reading would still be safe: the save holds only if nothing it
    /// changes was edited after the reading it names, `unchangedSince`.)
    ///
    /// `more`: whether another batch may follow, whose plan will want the local history read
    /// as this one's save ends (asked for right behind it).
    private func applyAhead(_ rows: [[String?]], _ state: inout ImportState, decoded: [Result<ServerFields, SetAsideReason>],
                            more: Bool) throws {
        let redone = state.redone
        var planned = try plan(rows, &state, decoded: decoded, pending: state.pending)
        // Encoded while seamd saves the last batch; sent as it is unless the reading below
        // changes it.
        planned.prepared = planned.save.prepare(shared.broker)
        try finishBatch(&state)
        // Read as the last save ended (its History call sent behind it), not asked for now:
        // seamd had it ready while this batch was planned.
        let pending = try shared.pendingChanges(firstPage: state.readAfterSave)
        state.readAfterSave = nil
        if state.redone != redone {
            planned = try plan(rows, &state, decoded: decoded, pending: pending)
        } else if Set(pending.changed.keys) != planned.pendingKeys {
            undo(planned, &state)
            planned = try plan(rows, &state, decoded: decoded, pending: pending)
        } else if planned.save.unchangedSince != pending.through {
            planned.save.unchangedSince = pending.through
            planned.prepared = nil
        }
        try send(planned, &state, readingAfter: more)
    }

    /// Applies one batch of server records (in change-tag order) as one save, with the token;
    /// the save is sent, not waited for (`finishBatch`).
    ///
    /// `decoded`: `serverRecord` of each row, when the caller has it already.
    private func apply(_ rows: [[String?]], _ state: inout ImportState, decoded: [Result<ServerFields, SetAsideReason>]? = nil) throws {
        try send(try plan(rows, &state, decoded: decoded, pending: try shared.pendingChanges()), &state)
    }

    /// A batch's save, planned, with the state from before it (`undo`).
    struct PlannedBatch {
        var save: SaveBuilder
        var rows: [[String?]]
        /// The records the save applies.
        var applied: Int
        /// The server token before the batch, in memory and in the store.
        var token: Int64
        var tokenRow: (uuid: String, value: Int64)?
        /// The records set aside before the batch (the save would have changed the list).
        var setAsideBefore: SetAsideList
        /// The local changes the plan kept the server's versions off.
        var pendingKeys: Set<RecordKey>
        /// The save, encoded ahead (nil: encoded when sent).
        var prepared: SeamConnection.PreparedCall? = nil
    }

    /// The state as it was before `planned` was made.
    private func undo(_ planned: PlannedBatch, _ state: inout ImportState) {
        state.token = planned.token
        shared.tokens["server"] = planned.tokenRow
        shared.setAside = planned.setAsideBefore
    }

    /// Sends a planned batch's save; `finishBatch` waits for it. `readingAfter`: with a History
    /// call right behind it (`ImportState.readAfterSave`).
    private func send(_ planned: PlannedBatch, _ state: inout ImportState, readingAfter: Bool = false) throws {
        shared.testPause?("import-save")
        let sent = try planned.prepared.map { try shared.broker.begin($0) } ?? planned.save.begin(shared.broker)
        if let id = sent {
            var kept = planned
            kept.save = SaveBuilder()  // sent: only what applying it again takes is kept
            kept.prepared = nil
            state.saving = Batch(id: id, planned: kept, history: readingAfter ? try? shared.beginPendingChanges() : nil)
        }
    }

    /// Plans one batch's save (`SyncPlanner.planImport`) over the local changes `pending`, and
    /// moves the state on as if it were applied (`undo` takes that back).
    private func plan(_ rows: [[String?]], _ state: inout ImportState, decoded: [Result<ServerFields, SetAsideReason>]?,
                      pending: (changed: [RecordKey: Set<String>], through: Int64)?) throws -> PlannedBatch {
        let pending = try pending ?? shared.pendingChanges()
        state.pending = pending
        let token = state.token, fresh = state.fresh, tokenRow = shared.tokens["server"], setAsideBefore = shared.setAside
        let last = rows.last?[3].flatMap { Int64($0) } ?? token
        var incoming: [SyncPlanner.Incoming] = []
        var listChanged = false
        let now = WallClock.now()
        for (i, row) in rows.enumerated() {
            guard let type = row[0], let uuid = row[1], let tag = row[3].flatMap({ Int64($0) }), shared.synced[type] != nil else { continue }
            let key = RecordKey(type: type, uuid: uuid)
            switch decoded?[i] ?? Self.serverRecord(row, now: now, seal: shared.seal, sealed: shared.encrypted) {
            case .success(let server):
                incoming.append(SyncPlanner.Incoming(key: key, fields: server.fields, tag: tag, deleted: row[4] == "t"))
                if server.inClear, shared.seal != nil { shared.arrivedInClear.insert(key) }
            case .failure(let why):
                shared.log("the server's \(type) \(uuid) (change tag \(tag)) is set aside: \(why). Correct or delete it on the server; "
                    + "it comes again when it changes")
                listChanged = shared.setAside.add(.init(type: type, uuid: uuid, tag: tag, reason: why.description)) || listChanged
            }
        }
        // A record that comes again (changed on the server meanwhile) is looked up as usual.
        let lookups = !fresh || incoming.contains { UUIDText.bits($0.key.uuid).map(state.insertedHere.contains) ?? true }
        let known = lookups ? try shared.syncRecords(incoming.map(\.key)) : [:]
        let existing = lookups ? try shared.existingRows(incoming.map(\.key)) : []
        // Records changed here since the last export (saves that raced this cycle, read just
        // before this batch is applied): the server's version must not overwrite them, nor
        // bring a deleted one back. The next export merges them; the import after it brings
        // the merged record.
        let local = SyncPlanner.Local(known: known, existing: existing, pending: Set(pending.changed.keys), fresh: fresh)
        let plan = shared.planner.planImport(incoming, local: local, now: now)
        var save = plan.save
        save.unchangedSince = pending.through
        for key in plan.cleared { listChanged = shared.setAside.remove(key) || listChanged }
        state.insertedHere.formUnion(plan.insertedHere.lazy.compactMap { UUIDText.bits($0.uuid) })
        if state.movesToken { shared.tokenChange("server", last, into: &save) }
        if listChanged { shared.setAside.change(into: &save) }
        if state.movesToken { state.token = last }
        return PlannedBatch(save: save, rows: rows, applied: plan.applied, token: token, tokenRow: tokenRow, setAsideBefore: setAsideBefore,
                            pendingKeys: Set(pending.changed.keys))
    }
}
