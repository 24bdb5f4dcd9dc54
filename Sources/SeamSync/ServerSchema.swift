import SeamPostgres

/// The server's tables, created and upgraded by `seam-sync` itself and versioned: one zone per
/// database role (row-level security: a role sees and writes only its own zone), one record per
/// synced row, a server-wide change sequence that every write takes a tag from. See
/// `Protocol/sync.md`.
public enum ServerSchema {
    /// The version this build writes and understands.
    /// 1. records, zones, the change sequence; 2. per-field versions (`versions`); 3. zones that
    /// cannot touch each other: writes only through functions (`seam.insert_records`,
    /// `seam.update_record`), change tags counted per zone in `seam.zones` (whose row lock
    /// orders a zone's commits), a notification channel per zone known only to it.
    public static let version = 4

    /// The oldest server schema this worker syncs with as it is, when its role may not upgrade
    /// it: version 4 changed only how `seam.insert_records` does its work, not what it does.
    public static let oldestUsable = 3

    /// The most a record's fields may take on the server, as JSON text: a record must fit the
    /// frames it syncs in (4 MiB) with room to spare. Seam's stores hold synced rows to this
    /// (`Protocol/PROTOCOL.md`, "Limits"); the server's write functions refuse more; an import
    /// sets aside a record past it that an older server holds.
    public static let maxRecordBytes = 1 << 20

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
    ], version3, version4]

    /// Zones that cannot touch each other (see `Protocol/sync.md`, "The server layout"). A zone
    /// role reads its own records (row-level security by `session_user`, forced) and writes only
    /// through these functions, which run as the schema's owner: it holds no privilege that would
    /// let it lock, alter or write another zone's rows (a table-level UPDATE grant lets a role
    /// take `LOCK TABLE … ACCESS EXCLUSIVE` and stall every zone). A zone's writes are ordered by
    /// the lock on its row of `seam.zones`, which no other zone can see, and its change tags are
    /// counted there, so that no zone learns how much another writes from the tags it is given.
    static let version3: [String] = [
        """
        CREATE TABLE IF NOT EXISTS seam.zones (
            zone name PRIMARY KEY,
            channel text NOT NULL,
            last_tag bigint NOT NULL DEFAULT 0
        )
        """,
        "ALTER TABLE seam.zones ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE seam.zones FORCE ROW LEVEL SECURITY",
        "DROP POLICY IF EXISTS zone_owner ON seam.zones",
        "CREATE POLICY zone_owner ON seam.zones USING (zone = session_user) WITH CHECK (zone = session_user)",
        "DROP POLICY IF EXISTS zone_owner ON seam.records",
        "CREATE POLICY zone_owner ON seam.records USING (zone = session_user) WITH CHECK (zone = session_user)",
        "ALTER TABLE seam.records ALTER COLUMN zone SET DEFAULT session_user",
        "REVOKE ALL ON ALL TABLES IN SCHEMA seam FROM PUBLIC",
        "REVOKE ALL ON ALL SEQUENCES IN SCHEMA seam FROM PUBLIC",
        "REVOKE ALL ON SCHEMA seam FROM PUBLIC",
        "GRANT USAGE ON SCHEMA seam TO PUBLIC",
        "GRANT SELECT ON seam.meta, seam.records TO PUBLIC",
        // The caller's zone row, locked until its transaction ends; made on first use, its tags
        // counting on from the records the zone has (from the shared sequence of version 2).
        """
        CREATE OR REPLACE FUNCTION seam.zone() RETURNS seam.zones
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE z seam.zones;
        BEGIN
            SELECT * INTO z FROM seam.zones WHERE zone = session_user FOR UPDATE;
            IF NOT FOUND THEN
                INSERT INTO seam.zones (zone, channel, last_tag)
                    SELECT session_user, 'seam_' || replace(gen_random_uuid()::text, '-', ''), coalesce(max(change_tag), 0)
                    FROM seam.records WHERE zone = session_user
                    ON CONFLICT (zone) DO NOTHING;
                SELECT * INTO z FROM seam.zones WHERE zone = session_user FOR UPDATE;
            END IF;
            RETURN z;
        END $$
        """,
        // What a zone's fields and versions must be: objects, the fields within the bound.
        """
        CREATE OR REPLACE FUNCTION seam.check_record(fields jsonb, versions jsonb) RETURNS void
        LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
        BEGIN
            IF jsonb_typeof(fields) IS DISTINCT FROM 'object' OR jsonb_typeof(versions) IS DISTINCT FROM 'object' THEN
                RAISE EXCEPTION 'seam: a record''s fields and versions are JSON objects' USING ERRCODE = '22023';
            END IF;
            IF octet_length(fields::text) > \(maxRecordBytes) THEN
                RAISE EXCEPTION 'seam: a record''s fields take at most \(maxRecordBytes) bytes as JSON text, these %',
                    octet_length(fields::text) USING ERRCODE = '54000';
            END IF;
        END $$
        """,
        // New records, each with the zone's next tag; one the zone holds already is left out of
        // the answer (another machine inserted it meanwhile).
        """
        CREATE OR REPLACE FUNCTION seam.insert_records(kinds text[], ids uuid[], new_fields jsonb[], new_versions jsonb[])
        RETURNS TABLE (kind text, id text, tag bigint)
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE z seam.zones; i int; t bigint;
        BEGIN
            z := seam.zone();
            t := z.last_tag;
            FOR i IN 1 .. coalesce(array_length(kinds, 1), 0) LOOP
                PERFORM seam.check_record(new_fields[i], new_versions[i]);
                INSERT INTO seam.records (zone, record_type, uuid, fields, versions, change_tag)
                    VALUES (session_user, kinds[i], ids[i], new_fields[i], new_versions[i], t + 1)
                    ON CONFLICT DO NOTHING;
                IF FOUND THEN
                    t := t + 1;
                    kind := kinds[i];
                    id := ids[i]::text;
                    tag := t;
                    RETURN NEXT;
                END IF;
            END LOOP;
            UPDATE seam.zones SET last_tag = t WHERE zone = session_user;
        END $$
        """,
        // A record written over the version of tag `seen` (null when another machine wrote it
        // since), or made a tombstone; its new tag.
        """
        CREATE OR REPLACE FUNCTION seam.update_record(kind text, id uuid, new_fields jsonb, new_versions jsonb, seen bigint,
                                                      tombstone boolean)
        RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE z seam.zones;
        BEGIN
            z := seam.zone();
            IF NOT tombstone THEN PERFORM seam.check_record(new_fields, new_versions); END IF;
            UPDATE seam.records SET
                fields = CASE WHEN tombstone THEN '{}'::jsonb ELSE new_fields END,
                versions = CASE WHEN tombstone THEN versions ELSE new_versions END,
                deleted = tombstone, change_tag = z.last_tag + 1, modified_at = now()
            WHERE zone = session_user AND record_type = kind AND uuid = id AND change_tag = seen;
            IF NOT FOUND THEN RETURN NULL; END IF;
            UPDATE seam.zones SET last_tag = z.last_tag + 1 WHERE zone = session_user;
            RETURN z.last_tag + 1;
        END $$
        """,
        // The zone's notification channel, which only it knows; and a notification on it.
        """
        CREATE OR REPLACE FUNCTION seam.channel() RETURNS text
        LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$ SELECT (seam.zone()).channel $$
        """,
        """
        CREATE OR REPLACE FUNCTION seam.notify() RETURNS void
        LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$ SELECT pg_notify((seam.zone()).channel, '') $$
        """,
        "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA seam FROM PUBLIC",
        "GRANT EXECUTE ON FUNCTION seam.insert_records(text[], uuid[], jsonb[], jsonb[]), "
            + "seam.update_record(text, uuid, jsonb, jsonb, bigint, boolean), seam.channel(), seam.notify() TO PUBLIC",
    ]

    /// Version 4: `seam.insert_records` inserts the whole batch in one statement (a loop of one
    /// INSERT per record spent most of the server's time in a first export on starting each
    /// one). Same arguments, same answer: each record new to the zone gets its next tag, in the
    /// order given; one the zone holds already (or a repeat within the batch) is left out.
    /// Nothing else writes a zone's records meanwhile: each write function holds the zone's row
    /// lock until the transaction ends, so the records found new here are new at the insert.
    static let version4: [String] = [
        """
        CREATE OR REPLACE FUNCTION seam.insert_records(kinds text[], ids uuid[], new_fields jsonb[], new_versions jsonb[])
        RETURNS TABLE (kind text, id text, tag bigint)
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE z seam.zones; n bigint;
        BEGIN
            z := seam.zone();
            PERFORM seam.check_record(u.f, u.v) FROM unnest(new_fields, new_versions) AS u(f, v);
            RETURN QUERY
                WITH given AS (
                    SELECT DISTINCT ON (u.k, u.i) u.k, u.i, u.f, u.v, u.n
                    FROM unnest(kinds, ids, new_fields, new_versions) WITH ORDINALITY AS u(k, i, f, v, n)
                    ORDER BY u.k, u.i, u.n
                ), fresh AS (
                    SELECT g.k, g.i, g.f, g.v, row_number() OVER (ORDER BY g.n) AS o FROM given AS g
                    WHERE NOT EXISTS (SELECT 1 FROM seam.records AS r
                                      WHERE r.zone = session_user AND r.record_type = g.k AND r.uuid = g.i)
                )
                INSERT INTO seam.records AS r (zone, record_type, uuid, fields, versions, change_tag)
                    SELECT session_user, fresh.k, fresh.i, fresh.f, fresh.v, z.last_tag + fresh.o FROM fresh ORDER BY fresh.o
                    ON CONFLICT DO NOTHING
                    RETURNING r.record_type, r.uuid::text, r.change_tag;
            GET DIAGNOSTICS n = ROW_COUNT;
            IF n > 0 THEN
                UPDATE seam.zones SET last_tag = (SELECT max(change_tag) FROM seam.records WHERE zone = session_user)
                    WHERE zone = session_user;
            END IF;
        END $$
        """,
    ]

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

    /// A connection to the server at `url` as every Seam connection is made (the worker's, `seam
    /// sync setup`'s check, the administrator's `--init-server`): names resolve in pg_catalog
    /// only (another zone's schema cannot stand in for a function), and no lock another role
    /// holds (the zone lock's key is public) stops it for ever — a statement that waits too long
    /// fails, and is tried again.
    public static func connect(_ url: String) throws -> PostgresConnection {
        let connection = try PostgresConnection(url)
        try connection.pinSearchPath()
        try connection.setTimeouts(statement: 120, lock: 15)
        return connection
    }

    /// Brings the server to `version` (creating it on first use), under a lock so that two
    /// workers starting at once do not race. Returns the version found before and the one the
    /// server is at now: below `version` only where this role may not upgrade a server at
    /// `oldestUsable` or later, which it syncs with as it is. A server at a newer version than
    /// this build knows stops sync with a message rather than a guess.
    @discardableResult
    public static func ensure(_ pg: PostgresConnection) throws -> (found: Int, now: Int) {
        // Current: nothing to take a lock for (its key is public; a zone holding it must not
        // keep other zones' workers from connecting).
        let seen = try current(pg)
        if seen > version { throw newer(seen) }
        if seen == version { return (seen, seen) }
        do {
            return try pg.transaction {
                try pg.query("SELECT pg_advisory_xact_lock(7283450912)")
                let found = try current(pg)
                if found > version { throw newer(found) }
                guard found < version else { return (found, found) }
                do {
                    for statements in steps[found..<version] {
                        for sql in statements { try pg.query(sql) }
                    }
                } catch let e as PostgresError where e.sqlState == "42501" {
                    throw NotOwned(found: found, message: e.message)
                }
                try pg.query("INSERT INTO seam.meta (key, value) VALUES ('schemaVersion', $1) ON CONFLICT (key) DO UPDATE SET value = $1",
                             [String(version)])
                return (found, version)
            }
        } catch let e as NotOwned {
            if e.found >= oldestUsable { return (e.found, e.found) }
            // The schema belongs to its owner (the server's administrator, or the first role
            // to set up sync on an older server); only it may make or change it.
            throw SyncFailure(e.found == 0
                ? "the server has no sync schema, and this role may not create one: its administrator makes it with "
                    + "`seam-sync --init-server URL` as the role that owns it (scripts/pg-server does this): \(e.message)"
                : "the server's sync schema is version \(e.found) and needs upgrading to version \(version) by the role that owns "
                    + "it: its administrator runs `seam-sync --init-server URL` as that role: \(e.message)", permanent: true)
        }
    }

    /// What stops a role that does not own the schema from upgrading it.
    private struct NotOwned: Error {
        var found: Int
        var message: String
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
