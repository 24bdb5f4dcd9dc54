import SeamJSON
import SeamProtocol

/// The sync worker's decisions, with no server and no broker: what an import's batch of server
/// records does to this store (`planImport`), and what an export writes over the server's version
/// of a record (`planWrite`). Pure: `SyncWorker` reads the server and the store, asks, and does
/// what it is told — so every rule of the merge is tested without PostgreSQL (`SyncPlannerTests`).
struct SyncPlanner {
    /// The synced attributes of each synced entity.
    var synced: [String: [String]]
    /// This machine's device id (its field versions carry it).
    var device: String
    /// The change tag this machine's import has passed (the `server` token).
    var serverToken: Int64

    // MARK: - Import

    /// A server record as the import read it.
    struct Incoming: Equatable {
        var key: RecordKey
        var fields: JSONObject
        var tag: Int64
        var deleted: Bool
    }

    /// What this store holds of a batch's records.
    struct Local {
        /// Their `SyncRecord`s: its uuid, and the change tag this machine last applied or wrote.
        var known: [RecordKey: (uuid: String, tag: Int64?)] = [:]
        /// Those that have a row here.
        var existing: Set<RecordKey> = []
        /// Those changed here since the last export (their next export merges them).
        var pending: Set<RecordKey> = []
        /// Whether the store held nothing synced when this import began (no lookups needed for
        /// records it has not brought itself).
        var fresh = false
    }

    /// A batch's outcome: the save, the records applied, those to take off the set-aside list
    /// (they came again, and were applied), and those a fresh import inserted.
    struct ImportPlan {
        var save = SaveBuilder()
        var applied = 0
        var cleared: [RecordKey] = []
        var insertedHere: [RecordKey] = []
    }

    /// What a batch of server records (in change-tag order) does to this store: own writes
    /// coming back are nothing; a record changed here since the last export is passed over (the
    /// export merges it, the import after brings the result), though a row held without a
    /// `SyncRecord` gets one of tag 0 so that the token does not count it as held; a tombstone
    /// deletes the row and its `SyncRecord`; anything else is inserted or updated, its fields of
    /// a newer model kept in its `SyncRecord`.
    func planImport(_ incoming: [Incoming], local: Local, now: Double) -> ImportPlan {
        var plan = ImportPlan()
        var existing = local.existing
        for r in incoming {
            let record = local.known[r.key]
            // Our own write coming back: nothing to apply.
            if record?.tag == r.tag { continue }
            if local.pending.contains(r.key) {
                // Not a row deleted here (its delete's export leaves no SyncRecord behind), nor
                // one a fresh import did not look up (it has passed over no record it brought).
                if record == nil, existing.contains(r.key) {
                    plan.save.insert("SyncRecord", Self.syncRecord(r.key, tag: 0, now: now))
                }
                continue
            }
            plan.cleared.append(r.key)
            if r.deleted {
                if existing.contains(r.key) { plan.save.delete(r.key.type, r.key.uuid) }
                if let record { plan.save.delete("SyncRecord", record.uuid) }
                plan.applied += 1
                continue
            }
            var (values, kept) = localValues(r.fields, of: r.key.type)
            if existing.contains(r.key) {
                plan.save.update(r.key.type, r.key.uuid, values)
            } else {
                values["uuid"] = .string(r.key.uuid)
                plan.save.insert(r.key.type, values)
                existing.insert(r.key)
                if local.fresh { plan.insertedHere.append(r.key) }
            }
            if let record {
                plan.save.update("SyncRecord", record.uuid, Self.syncRecord(nil, tag: r.tag, kept: kept, now: now))
            } else if !kept.isEmpty {
                plan.save.insert("SyncRecord", Self.syncRecord(r.key, tag: r.tag, kept: kept, now: now))
            }
            // A record new here with nothing to keep needs no SyncRecord yet: its tag only ever
            // serves to recognise this machine's own writes, and the first export of it makes
            // one. Half the rows a new machine writes while it catches up.
            plan.applied += 1
        }
        return plan
    }

    /// A server record's fields as this store holds them: the values of its synced attributes,
    /// and the fields of a newer model version than this store's, kept to fill their columns when
    /// the store is migrated (the server keeps them meanwhile: exports only ever put changed
    /// fields over the server's).
    func localValues(_ fields: JSONObject, of type: String) -> (values: JSONObject, kept: JSONObject) {
        let attributes = synced[type] ?? []  // a dozen names: a scan beats hashing each key
        var (values, kept) = fields.partitioned { $0 != "uuid" && attributes.contains($0) }
        kept["uuid"] = nil  // the row's own, not a field to keep
        return (values, kept)
    }

    /// A `SyncRecord`'s values: the change tag this machine holds and the fields it keeps, with
    /// the record it is for (`key`) when it is new.
    static func syncRecord(_ key: RecordKey?, tag: Int64, kept: JSONObject = [:], now: Double) -> JSONObject {
        var values: JSONObject = ["changeTag": .string(String(tag)), "modifiedAt": .double(now),
                                  "unknownFields": .object(kept)]
        if let key {
            values["recordType"] = .string(key.type)
            values["recordUUID"] = .string(key.uuid)
        }
        return values
    }

    // MARK: - Export

    /// The server's version of a record: its fields, their versions, its change tag.
    typealias ServerRecord = (fields: JSONObject, versions: JSONObject, tag: Int64, deleted: Bool)

    /// What an export writes for one record over the server's version.
    enum Write: Equatable {
        /// Nothing: a delete of a record the server never had or holds deleted, or a record
        /// deleted on the server (`deletedThere`: the delete wins, so the row must go here too).
        case nothing(deletedThere: Bool)
        /// A record the server does not hold: inserted (`adopt`: the merged fields are not
        /// exactly the local row's, so this machine takes them back).
        case insert(fields: JSONObject, versions: JSONObject, adopt: Bool)
        /// A tombstone over the version of tag `over`.
        case tombstone(over: Int64)
        /// The merge changes nothing on the server: its version of tag `tag` stands.
        case unchanged(tag: Int64, fields: JSONObject, adopt: Bool)
        /// The merged fields over the version of tag `over`.
        case update(fields: JSONObject, versions: JSONObject, over: Int64, adopt: Bool)
    }

    /// One record's write: the local row's changes merged over the server's version, field by
    /// field (`FieldVersion.merge`), the uuid left out (it has a column).
    func planWrite(_ r: SyncExport.Outgoing, over current: ServerRecord?) -> Write {
        guard let current else {
            guard let row = r.row else { return .nothing(deletedThere: false) }
            let merged = merge(r, row, over: nil)
            return .insert(fields: merged.fields, versions: merged.versions, adopt: !merged.mine)
        }
        guard !current.deleted else { return .nothing(deletedThere: r.row != nil) }
        guard let row = r.row else { return .tombstone(over: current.tag) }
        let merged = merge(r, row, over: current)
        if current.fields == merged.fields, current.versions == merged.versions {
            return .unchanged(tag: current.tag, fields: merged.fields, adopt: !merged.mine)
        }
        return .update(fields: merged.fields, versions: merged.versions, over: current.tag, adopt: !merged.mine)
    }

    /// The local row's changes put over the server's version (nil: it has none); `mine` when the
    /// merged fields are exactly the local row's.
    func merge(_ r: SyncExport.Outgoing, _ row: JSONObject, over current: ServerRecord?) -> (fields: JSONObject, versions: JSONObject, mine: Bool) {
        let attributes = synced[r.key.type] ?? []
        var stamps = r.stamps
        if r.edited, let current {
            // This machine's own versions are followed always: one written by an export whose
            // local save never came (a crash, a refusal) has a tag this machine did not record.
            stamps = FieldVersion.following(current.versions, stamps: stamps, device: device, onlyOwn: !holds(current, knownTag: r.knownTag))
        }
        var merged = FieldVersion.merge(server: current.map { ($0.fields, $0.versions) }, row: row, stamps: stamps, attributes: attributes)
        merged.fields["uuid"] = nil
        merged.versions["uuid"] = nil
        return (merged.fields, merged.versions, Self.matches(merged.fields, row, attributes))
    }

    /// Whether this machine held the server's version `current` of a record before the edits it
    /// exports now were made: it applied or wrote that version last (its `SyncRecord` has the
    /// tag), or, for a record without a `SyncRecord` (the import makes one only where it keeps
    /// fields), its import has passed the tag. Then every version in it is older than those
    /// edits, whatever the clocks say. Otherwise the version came while they waited (the import
    /// passes over a record with edits waiting, and leaves its `SyncRecord` as it was, or makes
    /// one of tag 0): the two are concurrent, and the later clock wins.
    ///
    /// (Left to the clocks: a record changed on the server by a third machine after this one
    /// took it, which moves its tag past both.)
    func holds(_ current: ServerRecord, knownTag: Int64?) -> Bool {
        if let knownTag { return current.tag == knownTag }
        return current.tag <= serverToken
    }

    /// Whether the fields written are exactly the local row's (then the server's version needs
    /// no import here).
    static func matches(_ fields: JSONObject, _ row: JSONObject, _ attributes: [String]) -> Bool {
        attributes.allSatisfy { $0 == "uuid" || (fields[$0] ?? .null) == (row[$0] ?? .null) }
    }

    /// The server's field versions that count: one dated past any clock (beyond
    /// `FieldVersion.futureTolerance` of `now`) counts as none, so an edit made here wins over it.
    static func acceptedVersions(_ versions: JSONObject, now: Double) -> JSONObject {
        let counted = versions.filter { _, v in
            guard let micros = v.stringValue.flatMap(FieldVersion.micros(of:)) else { return false }
            return Double(micros) / 1_000_000 <= now + FieldVersion.futureTolerance
        }
        return JSONObject(uniqueKeysWithValues: counted.map { ($0.key, $0.value) })
    }
}
