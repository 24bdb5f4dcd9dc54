import SeamJSON
import SeamPostgres

/// Seals what the server holds that it should not hold in clear: after a migration marked a
/// field `encrypted`, the records sent before it still carry that field in clear; after a key
/// rotation, every sealed field is under the old key. Each such record is written again with
/// its values and versions as they are, only sealed (with the key of `seal`), a page at a time,
/// each write conditional on the change tag read (a record another machine wrote meanwhile is
/// sealed by that machine, or by the next pass).
struct Reseal {
    let pg: PostgresConnection
    let seal: FieldSeal
    /// The key being replaced (a rotation): what it sealed is opened with it.
    var previous: FieldSeal?
    let log: (String) -> Void

    static let page = 500

    /// Reseals the records of each entity whose `encrypted` fields are in clear or under another
    /// key than `seal`'s; returns how many it wrote.
    func encryptedFields(_ encrypted: [String: Set<String>]) throws -> Int {
        var written = 0
        for (type, names) in encrypted.sorted(by: { $0.key < $1.key }) where !names.isEmpty {
            // Attribute names are identifiers (`Protocol/schema.md`, "Names"): safe in a literal.
            let unsealed = names.sorted().filter { $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } }
                .map { "(fields ? '\($0)' AND fields->'\($0)'->>'key' IS DISTINCT FROM $2)" }.joined(separator: " OR ")
            written += try pass(type: type, condition: unsealed, encrypted: names)
        }
        return written
    }

    /// Reseals every record with a field sealed under `previous` (a rotation); how many it wrote.
    func rotation() throws -> Int {
        guard let previous else { return 0 }
        let types = try pg.query("SELECT DISTINCT record_type FROM seam.records WHERE zone = session_user AND NOT deleted AND "
                                 + "jsonb_path_exists(fields, '$.*.key ? (@ == $k)', jsonb_build_object('k', $1::text))", [previous.keyID])
        var written = 0
        for case let type? in types.map({ $0[0] }) {
            written += try pass(type: type, condition: "$2::text IS NOT NULL AND jsonb_path_exists(fields, '$.*.key ? (@ == $k)', jsonb_build_object('k', $3::text))",
                                encrypted: [], extra: [previous.keyID])
        }
        return written
    }

    /// Pages through the records of `type` that `condition` selects ($1 the type, $2 the key id
    /// of `seal`, then `extra`), in uuid order, resealing each.
    private func pass(type: String, condition: String, encrypted: Set<String>, extra: [String] = []) throws -> Int {
        var after = "00000000-0000-0000-0000-000000000000"
        var written = 0, passedOver = 0
        while true {
            let rows = try pg.query("SELECT uuid::text, fields::text, versions::text, change_tag FROM seam.records "
                                    + "WHERE zone = session_user AND record_type = $1 AND NOT deleted AND uuid > $\(3 + extra.count)::uuid "
                                    + "AND (\(condition)) ORDER BY uuid LIMIT \(Self.page)", [type, seal.keyID] + extra + [after])
            guard let last = rows.last?[0] else { break }
            after = last
            let (changed, skipped) = try write(rows.map { [type] + $0 }, encrypted: [type: encrypted])
            passedOver += skipped
            written += changed
            if rows.count < Self.page { break }
        }
        if passedOver > 0 {
            log("\(passedOver) \(type) record(s) on the server could not be sealed (sealed with a key this machine does not have, or "
                + "too large); left as they are")
        }
        return written
    }

    /// Reseals the records `keys` (the import saw their encrypted fields in clear); how many it wrote.
    func records(_ keys: [RecordKey], encrypted: [String: Set<String>]) throws -> Int {
        var written = 0, passedOver = 0
        for page in keys.chunked(Self.page) {
            let rows = try pg.query("SELECT record_type, uuid::text, fields::text, versions::text, change_tag FROM seam.records "
                                    + "WHERE zone = session_user AND uuid = ANY($1::uuid[]) AND NOT deleted",
                                    ["{" + page.map(\.uuid).joined(separator: ",") + "}"])
            let (changed, skipped) = try write(rows, encrypted: encrypted)
            written += changed
            passedOver += skipped
        }
        if passedOver > 0 { log("\(passedOver) record(s) on the server could not be sealed (too large, or not opening); left as they are") }
        return written
    }

    /// Writes each row (type, uuid, fields, versions, tag) again sealed, in one transaction,
    /// conditional on its tag: how many were written, and how many passed over — one that does
    /// not open, or would be past the server's bound sealed (a record past the bound is set
    /// aside by every machine anyway).
    private func write(_ rows: [[String?]], encrypted: [String: Set<String>]) throws -> (written: Int, passedOver: Int) {
        var changed = 0, passedOver = 0
        try pg.transaction {
            for row in rows {
                guard let type = row[0], let uuid = row[1], let tag = row[4], let fields = (try? JSON.decode(row[2] ?? ""))?.objectValue
                else { continue }
                guard let sealed = resealed(fields, type: type, uuid: uuid, encrypted: encrypted[type] ?? []),
                      case let text = String(decoding: JSON.object(sealed).encoded(), as: UTF8.self),
                      text.utf8.count <= ServerSchema.maxRecordBytes
                else {
                    passedOver += 1
                    continue
                }
                let t = try pg.query("SELECT seam.update_record($1, $2::uuid, $3::jsonb, $4::jsonb, $5, false)",
                                     [type, uuid, text, row[3] ?? "{}", tag])
                if t.first?[0] != nil { changed += 1 }
            }
            if changed > 0 { try pg.query("SELECT seam.notify()") }
        }
        return (changed, passedOver)
    }

    /// `fields` with every sealed field opened (with `seal`'s key or `previous`) and sealed again,
    /// and each of `encrypted` sealed; nil when one does not open.
    func resealed(_ fields: JSONObject, type: String, uuid: String, encrypted: Set<String>) -> JSONObject? {
        var clear = fields
        var names = encrypted
        for (name, value) in fields where FieldSeal.isSealed(value) {
            let opener = value["key"]?.stringValue == previous?.keyID ? previous ?? seal : seal
            guard case .success(let v) = opener.open(value, entity: type, uuid: uuid, attribute: name) else { return nil }
            clear[name] = v
            names.insert(name)
        }
        return seal.seal(clear, encrypted: names, entity: type, uuid: uuid)
    }
}
