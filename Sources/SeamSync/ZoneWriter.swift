import SeamClient
import SeamJSON
import SeamPostgres
import SeamProtocol
import SeamSchema
import SeamSystem

/// What the sync worker writes to its zone on the server: records merged with the server's
/// versions (`SyncPlanner` decides; this type says it in SQL), conditional on the change tags
/// read, new ones inserted a page at a time. The libpq side of the export.
struct ZoneWriter {
    let pg: PostgresConnection
    let planner: SyncPlanner
    let log: (String) -> Void
    /// Seals the `encrypted` fields of what is written, opens the sealed ones of what is read:
    /// the planner sees values in clear, the server only ciphertext.
    var seal: FieldSeal?
    var encrypted: [String: Set<String>] = [:]

    typealias Outgoing = SyncExport.Outgoing

    typealias ServerRecord = SyncPlanner.ServerRecord

    /// Writes the records with optimistic concurrency on change tags: the server's versions are
    /// read without a lock, merged, and each write is conditional on the tag read (`WHERE
    /// change_tag = seen`, or an insert that finds no row). A record another machine wrote in
    /// between is read and merged again, up to a few times. The writes of one round commit
    /// together, under the zone's lock only for that commit, so that tags are handed out in
    /// commit order. Returns, per record written, its tag, its fields on the server and whether
    /// they differ from the local row (`Pushed`), and the records edited here that the server
    /// holds deleted (the delete wins: they must go here too).
    func push(_ records: [Outgoing]) throws -> (written: [Pushed], deletedThere: [RecordKey]) {
        // Another machine may have rotated the zone's key since this worker connected: nothing
        // sealed with the old one may be written now.
        if let seal, let id = try ZoneKeyRecord.read(pg)?.id, id != seal.keyID {
            throw SyncFailure("this zone's key (\(id)) is not this machine's (\(seal.keyID)) any more: it was changed on another machine "
                              + "(seam sync rotate-key); run `seam sync setup URL` again and give the zone's new recovery phrase. Nothing "
                              + "here is lost meanwhile", permanent: true)
        }
        var remaining = records
        var out: [Pushed] = []
        var deletedThere: [RecordKey] = []
        for attempt in 0..<8 where !remaining.isEmpty {
            if attempt > 0 { log("\(remaining.count) record(s) changed on the server meanwhile; merging again") }
            let server = try read(remaining.map(\.key))
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
                    switch try write(r, over: server[r.key]) {
                    case .written(let tag, let fields, let adopt): out.append((r.key, tag, fields, adopt))
                    case .unchanged(let deleted): if deleted { deletedThere.append(r.key) }
                    case .conflict: conflicted.append(r)
                    }
                }
                for chunk in new.chunked(SyncState.batch) {
                    let tags = try insert(Array(chunk))
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

    private func read(_ keys: [RecordKey]) throws -> [RecordKey: ServerRecord] {
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
                var versions = SyncPlanner.acceptedVersions((try? JSON.decode(row[4] ?? "{}"))?.objectValue ?? [:], now: WallClock.now())
                var fields = (try? JSON.decode(row[1] ?? "{}"))?.objectValue ?? [:]
                try opened(&fields, &versions, type: type, uuid: uuid)
                server[RecordKey(type: type, uuid: uuid)] = (fields, versions, tag, row[3] == "t")
            }
        }
        return server
    }

    /// The server's `fields` with their sealed fields opened. One that does not open (tampered
    /// with, moved from another row) counts as absent, with its version: the value here wins
    /// over it and replaces it. One sealed with another key stops the export: the zone's key
    /// changed, and this machine must not write over what it cannot read.
    private func opened(_ fields: inout JSONObject, _ versions: inout JSONObject, type: String, uuid: String) throws {
        for (name, value) in fields where FieldSeal.isSealed(value) {
            guard let seal else {
                throw SyncFailure("the server holds sealed fields and this machine has no key for the zone: join it with its recovery "
                                  + "phrase (seam sync setup URL)", permanent: true)
            }
            switch seal.open(value, entity: type, uuid: uuid, attribute: name) {
            case .success(let clear): fields[name] = clear
            case .failure(.otherKey(let id)):
                throw SyncFailure(FieldOpenFailure(field: name, reason: .otherKey(id)).description, permanent: true)
            case .failure(let why):
                log("\(type) \(uuid): \(FieldOpenFailure(field: name, reason: why)); this machine's value replaces it")
                fields[name] = nil
                versions[name] = nil
            }
        }
    }

    /// `fields` as the server is to hold them: the `encrypted` ones sealed.
    private func sealed(_ fields: JSONObject, _ key: RecordKey) -> JSONObject {
        guard let seal, let names = encrypted[key.type] else { return fields }
        return seal.seal(fields, encrypted: names, entity: key.type, uuid: key.uuid)
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
        return NewRecord(record: r, fields: Self.text(sealed(merged.fields, r.key)), versions: Self.text(merged.versions), merged: merged.fields,
                         adopt: !merged.mine)
    }

    private static func text(_ object: JSONObject) -> String { String(decoding: JSON.object(object).encoded(), as: UTF8.self) }

    /// Inserts new records in one statement; the tag of each one inserted. One absent from the
    /// answer was inserted by another machine since it was read: a conflict, merged again.
    private func insert(_ records: [NewRecord]) throws -> [RecordKey: Int64] {
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
        var parameters: [PostgresParameter]
    }

    /// A first export's page: every record to be inserted without a look first (one the
    /// server holds already is refused by the insert, then read and merged).
    func page(_ records: [Outgoing]) -> Page {
        let new = records.compactMap { r in r.row.map { newRecord(r, $0) } }
        return Page(records: new, parameters: FirstExportPage.parameters(types: new.map(\.record.key.type), uuids: new.map(\.record.key.uuid),
                                                                         fields: new.map(\.fields), versions: new.map(\.versions)))
    }

    /// Starts `page`'s insert; `finishPage` reads its answer, once the worker has prepared the
    /// next page meanwhile.
    func send(_ page: Page) throws { try pg.send(FirstExportPage.sql, page.parameters) }

    /// Reads the answer of a page `send` started, committed by then: the records inserted, and
    /// those the server held already (another machine's, or this one's from an export a crash
    /// cut short), to be read and merged by `push` once no page is in flight.
    func finishPage(_ page: Page) throws -> (written: [Pushed], held: [Outgoing]) {
        let tags = Self.tags(try pg.finishSent())
        var out: [Pushed] = [], held: [Outgoing] = []
        for n in page.records {
            if let tag = tags[n.record.key] { out.append((n.record.key, tag, n.merged, n.adopt)) } else { held.append(n.record) }
        }
        return (out, held)
    }

    /// One record's write over the server's version `current` (`SyncPlanner.planWrite`),
    /// conditional on that version being still there. (A record the server does not hold is
    /// inserted by `insert`.)
    private func write(_ r: Outgoing, over current: ServerRecord?) throws -> WriteOutcome {
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
                                   [r.key.type, r.key.uuid, Self.text(sealed(fields, r.key)), Self.text(versions), String(over)])
            guard let t = tag.first?[0].flatMap({ Int64($0) }) else { return .conflict }
            return .written(t, fields: fields, adopt: adopt)
        }
    }
}

/// A first export's page as the worker sends it: public so that `seam-bench` can have the server
/// alone take the same pages.
public enum FirstExportPage {
    /// The page's insert as one statement, in a transaction of its own (no `BEGIN`, no `COMMIT`:
    /// one round trip per page), notifying the zone's other machines once when it inserted
    /// anything — the scalar subquery is evaluated the first time a row is answered, so a page
    /// the server held whole wakes nobody. Its arrays go in binary form, the uuids as text.
    public static let sql = "SELECT i.kind, i.id, i.tag, (SELECT seam.notify()) IS NULL FROM seam.insert_records($1::text[], "
        + "$2::text[]::uuid[], $3::jsonb[], $4::jsonb[]) AS i"

    /// The statement's four parameters: each record's type, uuid, fields and versions (JSON texts).
    public static func parameters(types: [String], uuids: [String], fields: [String], versions: [String]) -> [PostgresParameter] {
        [PostgresArray.binary(types, of: .text), PostgresArray.binary(uuids, of: .text),
         PostgresArray.binary(fields, of: .jsonb), PostgresArray.binary(versions, of: .jsonb)]
    }
}
