import SeamPostgres

/// The server's tables, created and upgraded by `seam-sync` itself and versioned: one zone per
/// database role (row-level security: a role sees and writes only its own zone), one record per
/// synced row, a server-wide change sequence that every write takes a tag from. See
/// `Protocol/sync.md`.
public enum ServerSchema {
    /// The version this build writes and understands.
    /// 1. records, zones, the change sequence; 2. per-field versions (`versions`).
    public static let version = 2

    /// Each version's statements, from nothing (index 0 makes version 1).
    static let steps: [[String]] = [[
        "CREATE SCHEMA IF NOT EXISTS seam",
        "CREATE TABLE IF NOT EXISTS seam.meta (key text PRIMARY KEY, value text NOT NULL)",
        "CREATE SEQUENCE IF NOT EXISTS seam.changes",
        """
        CREATE TABLE IF NOT EXISTS seam.records (
            zone name NOT NULL DEFAULT current_user,
            record_type text NOT NULL,
            uuid uuid NOT NULL,
            fields jsonb NOT NULL DEFAULT '{}',
            change_tag bigint NOT NULL,
            modified_at timestamptz NOT NULL DEFAULT now(),
            deleted boolean NOT NULL DEFAULT false,
            PRIMARY KEY (zone, record_type, uuid)
        )
        """,
        "CREATE INDEX IF NOT EXISTS records_by_change ON seam.records (zone, change_tag)",
        "ALTER TABLE seam.records ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE seam.records FORCE ROW LEVEL SECURITY",
        "DROP POLICY IF EXISTS zone_owner ON seam.records",
        "CREATE POLICY zone_owner ON seam.records USING (zone = current_user) WITH CHECK (zone = current_user)",
        "GRANT USAGE ON SCHEMA seam TO PUBLIC",
        "GRANT SELECT ON seam.meta TO PUBLIC",
        "GRANT SELECT, INSERT, UPDATE ON seam.records TO PUBLIC",
        "GRANT USAGE ON SEQUENCE seam.changes TO PUBLIC",
    ], [
        // Per field: the version of its value, "MICROSECONDS.DEVICE" (fixed width, so that text
        // order is version order). A field without one predates version 2 and loses to any.
        "ALTER TABLE seam.records ADD COLUMN IF NOT EXISTS versions jsonb NOT NULL DEFAULT '{}'",
    ]]

    /// Why a worker stops on a server whose schema is `found`, newer than it knows.
    public static func newer(_ found: Int) -> SyncFailure {
        SyncFailure("the server's sync schema is version \(found); this seam-sync knows up to version \(version): "
                    + "upgrade Seam on this machine to sync with it", permanent: true)
    }

    /// The version the server's schema is at (0: none yet); outside a transaction, a check a
    /// running worker makes each cycle, since another machine may upgrade it meanwhile.
    public static func current(_ pg: PostgresConnection) throws -> Int {
        guard try pg.query("SELECT to_regclass('seam.meta') IS NOT NULL")[0][0] == "t" else { return 0 }
        return Int(try pg.query("SELECT value FROM seam.meta WHERE key = 'schemaVersion'").first?[0] ?? "0") ?? 0
    }

    /// Brings the server to `version` (creating it on first use), under a lock so that two
    /// workers starting at once do not race. Returns the version found before. A server at a
    /// newer version than this build knows stops sync with a message rather than a guess.
    @discardableResult
    public static func ensure(_ pg: PostgresConnection) throws -> Int {
        try pg.transaction {
            try pg.query("SELECT pg_advisory_xact_lock(7283450912)")
            let found = try current(pg)
            if found > version { throw newer(found) }
            guard found < version else { return found }
            do {
                for statements in steps[found..<version] {
                    for sql in statements { try pg.query(sql) }
                }
            } catch let e as PostgresError where e.sqlState == "42501" && found > 0 {
                // The tables belong to the role that created them; only it (or an administrator)
                // may change them. Trying again cannot help.
                throw SyncFailure("the server's sync schema is version \(found) and needs upgrading to version \(version) by the role "
                                  + "that owns it (the first to set up sync, or the server's administrator): \(e.message)", permanent: true)
            }
            try pg.query("INSERT INTO seam.meta (key, value) VALUES ('schemaVersion', $1) ON CONFLICT (key) DO UPDATE SET value = $1",
                         [String(version)])
            return found
        }
    }
}

/// Why sync stopped or a cycle failed; `permanent` when trying again cannot help.
public struct SyncFailure: Error, Sendable, CustomStringConvertible {
    public var description: String
    public var permanent: Bool
    public init(_ description: String, permanent: Bool = false) {
        self.description = description
        self.permanent = permanent
    }
}
