import SeamPostgres

/// What a test does on the sync server as the superuser, as a machine of a zone would: a change
/// tag from the zone's own counter (`seam.zones`, server schema 3), and a notification on the
/// zone's own channel.
enum ZoneWrites {
    /// A `WITH tag AS (…)` prefix taking `zone`'s next change tag: the statement after it reads
    /// it as `(SELECT last_tag FROM tag)`.
    static func tagged(_ zone: String) -> String {
        "WITH tag AS (UPDATE seam.zones SET last_tag = last_tag + 1 WHERE zone = '\(zone)' RETURNING last_tag) "
    }

    /// Tells `zone`'s workers that the server changed.
    static func notify(_ admin: PostgresConnection, _ zone: String) throws {
        try admin.query("SELECT pg_notify(channel, '') FROM seam.zones WHERE zone = $1", [zone])
    }
}
