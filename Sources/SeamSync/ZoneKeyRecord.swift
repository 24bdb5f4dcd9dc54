import SeamJSON
import SeamPostgres
import SeamSyncSetup

/// Which key seals a zone's fields, as the server keeps it: a record of type `seam.key` (a
/// name no entity can have) with the nil uuid, whose fields are `{"key": ID}` (`ZoneKey.id`).
/// The first machine of a zone writes it; every machine compares its own key with it at
/// connect, so two machines never seal one zone's records with two keys.
public enum ZoneKeyRecord {
    static let type = "seam.key"
    static let uuid = "00000000-0000-0000-0000-000000000000"

    /// The zone's key id and the record's change tag, or nil when the zone has none yet.
    public static func read(_ pg: PostgresConnection) throws -> (id: String, tag: Int64)? {
        let rows = try pg.query("SELECT fields->>'key', change_tag FROM seam.records WHERE zone = session_user AND record_type = $1 "
                                + "AND uuid = $2::uuid AND NOT deleted", [type, uuid])
        guard let row = rows.first, let id = row[0], let tag = row[1].flatMap({ Int64($0) }) else { return nil }
        return (id, tag)
    }

    /// Makes `id` the zone's key when it has none; the zone's key id afterwards (another
    /// machine's, when it set one up first).
    public static func register(_ id: String, _ pg: PostgresConnection) throws -> String {
        if let found = try read(pg) { return found.id }
        try pg.transaction {
            _ = try pg.query("SELECT * FROM seam.insert_records($1::text[], $2::uuid[], $3::jsonb[], $4::jsonb[])",
                             [PostgresArray.literal([type]), PostgresArray.literal([uuid]), PostgresArray.literal([fields(id)]),
                              PostgresArray.literal(["{}"])])
        }
        return try read(pg)?.id ?? id
    }

    /// Replaces the zone's key id `old` with `new`, in the caller's transaction; false when the
    /// zone's key is not `old` (any more).
    static func replace(_ old: String, with new: String, _ pg: PostgresConnection) throws -> Bool {
        guard let found = try read(pg), found.id == old else { return false }
        let tag = try pg.query("SELECT seam.update_record($1, $2::uuid, $3::jsonb, '{}', $4, false)",
                               [type, uuid, fields(new), String(found.tag)])
        return tag.first?[0] != nil
    }

    static func fields(_ id: String) -> String { String(decoding: JSON.object(["key": .string(id)]).encoded(), as: UTF8.self) }
}

/// `seam sync rotate-key`'s work on the server (run by `seam-sync --rotate-key`, which links
/// libpq): the zone's key id moved from the old key to the new one, then every field sealed
/// with the old key opened and sealed again with the new. Resumable: run again after an
/// interruption (the zone's key already the new one), it reseals what is left.
public enum KeyRotation {
    /// Returns how many records it resealed.
    public static func rotate(_ pg: PostgresConnection, from old: ZoneKey, to new: ZoneKey, log: @escaping (String) -> Void) throws -> Int {
        let zone = try pg.query("SELECT session_user::text").first?[0] ?? ""
        switch try ZoneKeyRecord.read(pg)?.id {
        case old.id?:
            let moved = try pg.transaction { try ZoneKeyRecord.replace(old.id, with: new.id, pg) }
            guard moved else { throw SyncFailure("the zone's key changed while it was being rotated (another machine?); try again") }
        case new.id?:
            break  // an interrupted rotation, resumed
        case let other?:
            throw SyncFailure("the zone's key (\(other)) is neither this machine's (\(old.id)) nor the new one: it was changed on another "
                              + "machine; join it again with its recovery phrase (seam sync setup URL)")
        case nil:
            throw SyncFailure("the zone has no key on the server yet: let sync run once (seam sync now) before rotating it")
        }
        return try Reseal(pg: pg, seal: FieldSeal(key: new, zone: zone), previous: FieldSeal(key: old, zone: zone), log: log).rotation()
    }
}
