import SeamClient
import SeamJSON
import SeamPostgres
import SeamProtocol
import SeamSchema
import SeamSystem

/// What the sync worker knows and keeps in the Cloud store, shared by its export and import: the
/// synced entities, its tokens (in `SyncToken` rows, each moved in the save of what it covers),
/// the records set aside, this machine's name, and what it reports; with the reads of the store
/// that both make.
final class SyncState {
    let broker: SeamConnection
    /// Synced entity → its attributes (the Cloud entities outside the sync worker's own model).
    var synced: [String: [String]] = [:]
    /// Synced entity → its attributes marked `encrypted` in the store's model: sealed on their
    /// way to the server (`FieldSeal`).
    var encrypted: [String: Set<String>] = [:]
    /// The zone's key, with the zone: set at connect when this machine has a key. Sealed fields
    /// from the server are opened with it; `encrypted` ones are sealed with it.
    var seal: FieldSeal?
    /// False only for the benchmark's comparison (`SyncWorker.seals`).
    var sealsFields = true
    /// Records the import read with a field this model seals in clear, to seal after it.
    var arrivedInClear: Set<RecordKey> = []
    var tokens: [String: (uuid: String, value: Int64)] = [:]
    /// The synced entities whose server records up to the `server` token are all here (the
    /// `entities` token): one missing from it was gained by a migration, and its earlier records
    /// were passed over while this store had no such entity. Nil for a store that synced before
    /// the token existed.
    var covered: (uuid: String, entities: Set<String>)?
    /// Records set aside: the server's that this machine cannot take, and this machine's the
    /// server cannot (the `setAside` token, listed by `seam sync status`). Sync goes on with
    /// everything else; a record leaves the list when a version of it is applied or sent.
    var setAside = SetAsideList()
    /// This machine's name in field versions: made once, kept as the `device` token.
    var device = ""
    var report = SyncWorker.Report()
    let log: (String) -> Void
    /// Nil outside tests (see `TestPause`).
    let testPause = TestPause.fromEnvironment()

    /// Rows per server round trip and per broker save.
    static let batch = 500

    init(broker: SeamConnection, log: @escaping (String) -> Void) {
        self.broker = broker
        self.log = log
    }

    /// The decisions of a sync (`SyncPlanner`), with what this worker knows now.
    var planner: SyncPlanner { SyncPlanner(synced: synced, device: device, serverToken: tokens["server"]?.value ?? 0) }

    // MARK: - What syncs

    /// The synced entities as the Cloud store holds them now; true when they changed (the
    /// store was migrated: values kept for fields it did not know may now have a column).
    @discardableResult
    func loadSchema() throws -> Bool {
        var now: [String: [String]] = [:]
        var sealed: [String: Set<String>] = [:]
        for e in try broker.call("org.seam.Sync.Served")["entities"]?.arrayValue ?? [] where e["model"]?.stringValue != "SyncMetadata" {
            guard let name = e["name"]?.stringValue else { continue }
            now[name] = (e["attributes"]?.arrayValue ?? []).compactMap(\.stringValue)
            let marked = Set((e["encrypted"]?.arrayValue ?? []).compactMap(\.stringValue))
            if !marked.isEmpty, sealsFields { sealed[name] = marked }
        }
        defer {
            synced = now
            encrypted = sealed
        }
        return now != synced || sealed != encrypted
    }

    /// The tokens as the store holds them. After a failed cycle too: a token moves in the save
    /// of what it covers, so one whose save failed must not stay moved in memory.
    func loadTokens() throws {
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
    func tokenChange(_ name: String, _ value: Int64, into save: inout SaveBuilder) {
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
    func syncRecords(_ keys: [RecordKey]) throws -> [RecordKey: (uuid: String, tag: Int64?)] {
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
    func existingRows(_ keys: [RecordKey]) throws -> Set<RecordKey> {
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

    /// The synced records with local changes not yet exported, each with the keys changed, and
    /// the sequence number the history was read through: a save made from them holds only if no
    /// later history touches its records (`unchangedSince`).
    ///
    /// `firstPage`: the reply to `beginPendingChanges`, when the caller sent it ahead.
    func pendingChanges(firstPage: JSONObject? = nil) throws -> (changed: [RecordKey: Set<String>], through: Int64) {
        var changed: [RecordKey: Set<String>] = [:]
        var from = exportedThrough
        var page = firstPage
        while true {
            let h = try page ?? broker.call("org.seam.Sync.History", Self.history(since: from))
            page = nil
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

    /// Sends `pendingChanges`' first History call without waiting: its reply, to `finish`, is
    /// `pendingChanges(firstPage:)`'s. seamd answers it after the calls sent before it (an
    /// import's save: the reading is taken as that save ends, while the worker plans the next).
    func beginPendingChanges() throws -> JSON {
        try broker.begin("org.seam.Sync.History", Self.history(since: exportedThrough))
    }

    /// Where the local changes not yet exported begin: the `exported` token.
    private var exportedThrough: Int64 { tokens["exported"]?.value ?? 0 }

    /// A History call's parameters: the changes after `since`, at most 10,000 a call.
    private static func history(since: Int64) -> JSONObject { ["since": .integer(since), "limit": 10_000] }

    func localValues(_ fields: JSONObject, of type: String) -> (values: JSONObject, kept: JSONObject) {
        planner.localValues(fields, of: type)
    }


    /// Times a save refused because a local save raced it (a `Conflict` from `unchangedSince`)
    /// is made again: an import's batch, an export's page.
    static let raceAttempts = 8

    /// Whether a save was refused because a local save raced it: seamd's `Conflict`, which
    /// the worker's saves meet only through `unchangedSince`.
    static func isRace(_ error: Error) -> Bool { (error as? ClientError)?.remoteName == "org.seam.Store.Conflict" }
}
