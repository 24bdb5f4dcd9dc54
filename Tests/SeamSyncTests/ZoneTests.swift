import Foundation
import SeamClient
import SeamJSON
import SeamPostgres
import SeamSync
import SeamTestSupport
import XCTest

/// Sync for many people on one server, tried as an operator and a hostile zone would: records
/// that cannot stall a zone, zones that cannot touch each other, a server script secure by
/// default, status that does not mislead, one precision for dates, listings that stay bounded.
/// Each test here failed on the `main` before server schema 3.
final class ZoneTests: PostgresTestCase {
    override class var zones: [String] { ["zoe", "yann", "xena", "walt", "vera"] }

    // MARK: - (a) records that cannot stall a zone

    /// A synced row is bounded at save: one value past 256 KiB, or a record's values past 1 MiB
    /// together, is refused naming the attribute and the limit; a Session (not synced) keeps the
    /// 1 MiB bound on a value.
    func testSyncedRecordsAreBoundedAtSave() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let big = String(repeating: "n", count: 300 << 10)
        do throws(ClientError) {
            try c.save([.insert(entity: "Timer", values: ["name": .string(big)])])
            XCTFail("a 300 KiB synced value was taken")
        } catch {
            guard case .remote(let e) = error.kind else { return XCTFail("\(error)") }
            XCTAssertEqual(e.name, "org.seam.Store.ValueTooLarge", "\(error)")
            XCTAssertEqual(e.parameters["field"]?.stringValue, "inserts[0].values.name", "\(error)")
            XCTAssertEqual(e.parameters["limit"]?.int64Value, 262_144, "\(error)")
        }
        let quarter = String(repeating: "q", count: 220 << 10)
        XCTAssertThrowsError(try c.save([.insert(entity: "Timer", values: ["name": .string(quarter), "icon": .string(quarter),
                                                                           "colour": .string(quarter), "sound": .string(quarter),
                                                                           "steps": .string("[\"" + quarter + "\"]")])])) { error in
            XCTAssertTrue("\(error)".contains("a synced record may take at most 1048576"), "\(error)")
        }
        // Encrypted fields count at their sealed size (a third more, as base64): values that
        // fit in clear, 4 × 240 KiB, do not once name and steps are sealed (Timers v7).
        let fits = String(repeating: "f", count: 240 << 10)
        XCTAssertNoThrow(try c.save([.insert(entity: "Timer", values: ["icon": .string(fits), "colour": .string(fits),
                                                                       "name": .string(fits)])]), "two values and one sealed fit")
        XCTAssertThrowsError(try c.save([.insert(entity: "Timer", values: ["icon": .string(fits), "colour": .string(fits),
                                                                           "name": .string(fits), "steps": .string("[\"" + fits + "\"]")])])) {
            XCTAssertTrue("\($0)".contains("a synced record may take at most 1048576"), "two sealed push it past the bound: \($0)")
        }
        // Control characters take six bytes each on the wire: counted so.
        let controls = String(repeating: "\u{1}", count: 50 << 10)
        XCTAssertThrowsError(try c.save([.insert(entity: "Timer", values: ["name": .string(controls)])]))
        XCTAssertNoThrow(try c.save([.insert(entity: "Timer", values: ["name": .string(String(repeating: "t", count: 100 << 10))])]))
        XCTAssertNoThrow(try c.save([.insert(entity: "Session", values: ["name": .string(big), "startedAt": 1])]), "a Session does not sync")
    }

    /// What a rogue client of the zone (and an older server) can put on the server: a record past
    /// the bound, fields that are no JSON object, a value this store refuses, a field version from
    /// the far future, a tombstone for a record the machine never had, and a column the server's
    /// table did not have. Each bad record is set aside — logged, and listed by `seam sync status`
    /// with its uuid and why — and every record after it arrives.
    func testRecordsAMachineCannotTakeAreSetAsideAndTheRestArrive() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "zoe")
        let first = try a.addTimer("Before")
        let admin = try PostgresConnection(server.adminConnection)
        try eventually(15, "the first timer is on the server") {
            try admin.query("SELECT 1 FROM seam.records WHERE uuid = $1::uuid", [first]).count == 1
        }
        try admin.query("ALTER TABLE seam.records ADD COLUMN IF NOT EXISTS extra integer")
        let zoe = try PostgresConnection(server.connection("zoe"))
        var bad: [String: String] = [:]
        // Through the zone's own functions: a wrong type, a version from the far future.
        for (what, fields, versions) in [("type", #"{"name": 42}"#, "{}"),
                                         ("future", #"{"name": "From 2999"}"#, #"{"name": "32503680000000000.rogue"}"#)] {
            let uuid = UUID().uuidString.lowercased()
            bad[what] = uuid
            try zoe.query("SELECT seam.insert_records(ARRAY['Timer'], ARRAY[$1::uuid], ARRAY[$2::jsonb], ARRAY[$3::jsonb])",
                          [uuid, fields, versions])
        }
        // What the functions refuse, as an older server (or its superuser) could hold it.
        let huge = "{\"name\": \"" + String(repeating: "h", count: 5 << 20) + "\"}"
        for (what, fields) in [("huge", huge), ("array", "[1, 2]")] {
            let uuid = UUID().uuidString.lowercased()
            bad[what] = uuid
            try admin.query(ZoneWrites.tagged("zoe") + "INSERT INTO seam.records (zone, record_type, uuid, fields, versions, change_tag) "
                            + "SELECT 'zoe', 'Timer', $1::uuid, $2::jsonb, '{}', last_tag FROM tag", [uuid, fields])
        }
        XCTAssertThrowsError(try zoe.query("SELECT seam.insert_records(ARRAY['Timer'], ARRAY[gen_random_uuid()], ARRAY[$1::jsonb], "
                                           + "ARRAY['{}'::jsonb])", [huge]), "the server's functions refuse a record past the bound")
        let ghost = UUID().uuidString.lowercased()
        try admin.query(ZoneWrites.tagged("zoe") + "INSERT INTO seam.records (zone, record_type, uuid, fields, versions, change_tag, deleted) "
                        + "SELECT 'zoe', 'Timer', $1::uuid, '{}', '{}', last_tag, true FROM tag", [ghost])
        let after = UUID().uuidString.lowercased()
        try zoe.query("SELECT seam.insert_records(ARRAY['Timer'], ARRAY[$1::uuid], ARRAY['{\"name\": \"After\"}'::jsonb], ARRAY['{}'::jsonb])",
                      [after])
        try zoe.query("SELECT seam.notify()")
        ServerRecords.inClearOnPurpose.formUnion(bad.values)
        ServerRecords.inClearOnPurpose.insert(after)

        let b = try SyncMachine("b", server: server, user: "zoe")
        for m in [a, b] {
            try eventually(20, "\(m.broker.socketPath): the record after the bad ones arrived") { try m.timer(after)?["name"]?.stringValue == "After" }
            XCTAssertNotNil(try m.timer(first))
            for (what, uuid) in bad { XCTAssertNil(try m.timer(uuid), what) }
            XCTAssertNil(try m.timer(ghost))
            try eventually(10, "every bad record is listed") { try (m.syncStatus()["setAside"]?.arrayValue ?? []).count == bad.count }
            let listed = try Executables.run("seam", ["sync", "status", "--socket", m.broker.socketPath]).stdout
            for (what, uuid) in bad { XCTAssertTrue(listed.contains(uuid), "\(what) is listed: \(listed)") }
            XCTAssertTrue(listed.contains("past the 1048576") && listed.contains("not a JSON object") && listed.contains("days ahead")
                          && listed.contains("refuses it"), listed)
            XCTAssertLessThan(listed.utf8.count, 8_000, "the listing names the records, it does not print them")
        }
        // Corrected on the server, a record set aside comes, and leaves the list.
        let fixed = try XCTUnwrap(bad["type"])
        let tag = try XCTUnwrap(try zoe.query("SELECT change_tag FROM seam.records WHERE uuid = $1::uuid", [fixed]).first?[0])
        try zoe.query("SELECT seam.update_record('Timer', $1::uuid, '{\"name\": \"Fixed\"}', '{}', $2, false)", [fixed, tag])
        try zoe.query("SELECT seam.notify()")
        try eventually(15, "the corrected record arrived and is no longer set aside") {
            try a.timer(fixed)?["name"]?.stringValue == "Fixed"
                && !(a.syncStatus()["setAside"]?.arrayValue ?? []).contains { $0["uuid"]?.stringValue == fixed }
        }
        try admin.query("ALTER TABLE seam.records DROP COLUMN IF EXISTS extra")
    }

    // MARK: - (c), (d) zones that cannot touch each other

    /// As zone yann: nothing of zone zoe can be read, written, deleted, locked, altered or
    /// observed, nothing can be created, and what yann holds does not delay zoe's sync.
    func testAZoneCannotTouchAnotherZone() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "zoe")
        let timer = try a.addTimer("Zoe's")
        let admin = try PostgresConnection(server.adminConnection)
        try eventually(15, "zoe's timer is on the server") { try admin.query("SELECT 1 FROM seam.records WHERE uuid = $1::uuid", [timer]).count == 1 }
        let yann = try PostgresConnection(server.connection("yann"))
        func refused(_ sql: String, _ parameters: [String?] = [], file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertThrowsError(try yann.query(sql, parameters), sql, file: file, line: line) { error in
                XCTAssertTrue(["42501", "42P01", "42883"].contains((error as? PostgresError)?.sqlState ?? ""), "\(sql): \(error)", file: file, line: line)
            }
        }
        XCTAssertEqual(try yann.query("SELECT count(*) FROM seam.records")[0][0], "0", "reads nothing of zoe's")
        refused("SELECT * FROM seam.zones")
        refused("UPDATE seam.records SET fields = '{}'")
        refused("DELETE FROM seam.records")
        refused("INSERT INTO seam.records (zone, record_type, uuid, fields, change_tag) VALUES ('zoe', 'Timer', gen_random_uuid(), '{}', 1)")
        for lock in ["SELECT * FROM seam.records FOR UPDATE", "LOCK TABLE seam.records IN ACCESS EXCLUSIVE MODE",
                     "LOCK TABLE seam.records IN SHARE MODE"] {
            try yann.query("BEGIN")
            refused(lock)
            try yann.query("ROLLBACK")
        }
        refused("ALTER TABLE seam.records NO FORCE ROW LEVEL SECURITY")
        refused("DROP TABLE seam.records")
        refused("CREATE TABLE seam.mine (x int)")
        refused("CREATE SCHEMA mine")
        refused("CREATE TEMP TABLE mine (x int)")
        refused("SELECT seam.zone()")
        let tag = try XCTUnwrap(try admin.query("SELECT change_tag FROM seam.records WHERE uuid = $1::uuid", [timer]).first?[0])
        XCTAssertNil(try yann.query("SELECT seam.update_record('Timer', $1::uuid, '{}', '{}', $2, true)", [timer, tag]).first?[0] ?? nil)

        // Holding what yann can hold — the advisory lock zoe's workers once took, a read
        // transaction on the table — and listening on the channel workers once shared: zoe's
        // sync goes on, and yann hears nothing of it.
        try yann.query("SELECT pg_advisory_lock(hashtext('zoe'))")
        try yann.query("LISTEN seam_changes")
        try yann.query("BEGIN")
        _ = try yann.query("SELECT count(*) FROM seam.records")
        let started = Date()
        try a.update("Timer", timer, ["name": "Renamed while yann holds on"])
        try eventually(10, "zoe's edit is on the server") {
            try ServerRecords.field(admin, timer, "name") == "Renamed while yann holds on"
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "not held for the 15 s lock timeout")
        try yann.query("COMMIT")
        XCTAssertTrue(try yann.notifications().isEmpty, "no notification of another zone's writes")
    }

    /// `seam.insert_records` (one statement since server schema 4, a loop before): each record
    /// new to the zone gets the zone's next tag, in the order given; one the zone holds, or a
    /// repeat within the call, is left out of the answer and takes no tag.
    func testInsertRecordsTagsWhatIsNewInOrderAndLeavesOutTheRest() throws {
        let walt = try PostgresConnection(try pg().connection("walt"))
        let ids = (0..<5).map { _ in UUID().uuidString.lowercased() }
        ServerRecords.inClearOnPurpose.formUnion(ids)  // written as a client of the zone, in clear
        func insert(_ picks: [Int]) throws -> [[String?]] {
            try walt.query("SELECT kind, id, tag FROM seam.insert_records($1::text[], $2::uuid[], $3::jsonb[], $4::jsonb[])",
                           [PostgresArray.literal(picks.map { _ in "Timer" }), PostgresArray.literal(picks.map { ids[$0] }),
                            PostgresArray.literal(picks.map { #"{"name": "t\#($0)"}"# }), PostgresArray.literal(picks.map { _ in "{}" })])
        }
        let first = try insert([1, 0, 1])
        XCTAssertEqual(first.map { $0[1] }, [ids[1], ids[0]], "in the order given, the repeat left out")
        let base = try XCTUnwrap(first.first?[2].flatMap { Int64($0) })
        XCTAssertEqual(first.map { $0[2].flatMap { Int64($0) } }, [base, base + 1])
        let second = try insert([2, 0, 3, 1, 4])
        XCTAssertEqual(second.map { $0[1] }, [ids[2], ids[3], ids[4]], "those held already left out")
        XCTAssertEqual(second.map { $0[2].flatMap { Int64($0) } }, [base + 2, base + 3, base + 4], "no tag taken by those left out")
        XCTAssertEqual(try insert([]).count, 0)
        XCTAssertEqual(try ServerRecords.field(walt, ids[1], "name"), "t1",
                       "the first of a repeat is the one kept")
        XCTAssertThrowsError(try walt.query("SELECT seam.insert_records(ARRAY['Timer'], ARRAY[gen_random_uuid()], ARRAY['[1]'::jsonb], "
                                            + "ARRAY['{}'::jsonb])")) { error in
            XCTAssertEqual((error as? PostgresError)?.sqlState, "22023", "\(error)")
        }
    }

    /// A server at schema 3, which a zone's role may not upgrade: its workers sync with it as it
    /// is (version 4 changed only how a function works), and say what its administrator can run.
    func testAServerAtVersionThreeStillSyncsUntilItsOwnerUpgradesIt() throws {
        let server = try pg()
        let admin = try PostgresConnection(server.adminConnection)
        try admin.query("UPDATE seam.meta SET value = '3' WHERE key = 'schemaVersion'")
        defer { _ = try? admin.query("UPDATE seam.meta SET value = '\(ServerSchema.version)' WHERE key = 'schemaVersion'") }
        let a = try SyncMachine("a", server: server, user: "vera")
        let timer = try a.addTimer("Synced with a version 3 server")
        try eventually(15, "the timer is on the server") {
            try admin.query("SELECT 1 FROM seam.records WHERE uuid = $1::uuid", [timer]).count == 1
        }
        XCTAssertTrue(a.broker.log.contains("may not upgrade it to version \(ServerSchema.version)"), a.broker.log)
        XCTAssertEqual(try admin.query("SELECT value FROM seam.meta WHERE key = 'schemaVersion'").first?[0], "3", "left as it was")
        // `scripts/pg-server restart` has the owner bring every database it owns up to date.
        try server.restart()
        let again = try PostgresConnection(server.adminConnection)
        XCTAssertEqual(try again.query("SELECT value FROM seam.meta WHERE key = 'schemaVersion'").first?[0], "\(ServerSchema.version)")
        let timer2 = try a.addTimer("Synced after the upgrade")
        try eventually(30, "sync goes on") {
            try again.query("SELECT 1 FROM seam.records WHERE uuid = $1::uuid", [timer2]).count == 1
        }
    }

    // MARK: - (b), (f) the server script

    /// Other local users get nothing: DIR is closed to them, the superuser is the starter's
    /// alone, a zone role cannot log in without its password. `add-user` says why it cannot, with
    /// a non-zero exit, for a role that exists (whose password stays), a server that is down, and
    /// a directory with no server.
    func testPgServerIsSecureByDefaultAndAddUserFailsClearly() throws {
        let server = try pg()
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: server.directory)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o077, 0, "DIR is closed to other users")
        let psql = try XCTUnwrap(["/usr/lib/postgresql/15/bin/psql", "/usr/bin/psql"].first { FileManager.default.isExecutableFile(atPath: $0) })
        for (user, target) in [("nobody", "-h \(server.directory) -U postgres"), ("nobody", "-h 127.0.0.1 -U postgres"),
                               ("nobody", "-h 127.0.0.1 -U zoe")] {
            let r = try Executables.runTool("/usr/sbin/runuser", ["-u", user, "--", "/bin/sh", "-c",
                                                                  "PGCONNECT_TIMEOUT=5 \(psql) \(target) -p \(server.port) -d seam -w -c 'SELECT 1'"])
            XCTAssertNotEqual(r.status, 0, "\(user) as \(target): \(r.stdout)\(r.stderr)")
        }
        let again = try PostgresTestServer.runScript(["add-user", server.directory, "zoe"])
        XCTAssertNotEqual(again.status, 0)
        XCTAssertTrue(again.stderr.contains("exists already") && !again.stdout.contains("password:"), again.stderr + again.stdout)
        XCTAssertNoThrow(try PostgresConnection(server.connection("zoe")), "zoe's password is unchanged")
        let nowhere = TemporaryDirectory("seam-no-server")
        let none = try PostgresTestServer.runScript(["add-user", nowhere.path, "someone"])
        XCTAssertNotEqual(none.status, 0)
        XCTAssertTrue(none.stderr.contains("holds no server"), none.stderr)
        let bad = try PostgresTestServer.runScript(["add-user", server.directory, "x'; DROP TABLE seam.records; --"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("is not a role name"), bad.stderr)
    }

    /// `add-user` gives a zone a database of its own by default (PostgreSQL wakes every listener
    /// of a database at each NOTIFY): its role reaches that database alone, the schema is there,
    /// and two machines sync through it.
    func testAZoneAddedByTheScriptGetsADatabaseOfItsOwn() throws {
        let server = try pg()
        try server.addUser("vic", database: nil)
        XCTAssertEqual(server.databases["vic"], "seam_vic")
        let own = try PostgresConnection(server.connection("vic"))
        XCTAssertFalse(try own.query("SELECT * FROM seam.meta").isEmpty, "the sync schema is made in it")
        XCTAssertThrowsError(try PostgresConnection("postgresql://vic@127.0.0.1:\(server.port)/seam?password=\(server.passwords["vic"] ?? "")"),
                             "vic cannot connect to the shared database")
        XCTAssertThrowsError(try PostgresConnection("postgresql://zoe@127.0.0.1:\(server.port)/seam_vic?password=\(server.passwords["zoe"] ?? "")"),
                             "zoe cannot connect to vic's database")
        let a = try SyncMachine("a", server: server, user: "vic")
        let b = try SyncMachine("b", server: server, user: "vic")
        let uuid = try a.addTimer("In a database of its own")
        try eventually(15, "B has A's timer") { try b.timer(uuid) != nil }
        XCTAssertEqual(try own.query("SELECT count(*) FROM seam.records WHERE uuid = $1", [uuid]).first?.first ?? nil, "1")
    }

    /// `add-user` on a server that is down: refused, with what to do.
    func testAddUserOnAServerThatIsDownFails() throws {
        let own = try PostgresTestServer(user: "vera")
        try own.stop()
        let r = try PostgresTestServer.runScript(["add-user", own.directory, "other"])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("is not running") && r.stderr.contains("restart"), r.stderr)
    }

    // MARK: - (e) honest status

    /// With the server down, the changes waiting are counted, and the worker says what it waits on.
    func testStatusCountsWhatWaitsWhileTheServerIsDown() throws {
        let own = try PostgresTestServer(user: "uma")
        let a = try SyncMachine("a", server: own, user: "uma")
        try eventually(15, "synced once") { try a.syncStatus()["state"]?.stringValue == "idle" }
        try own.stop()
        for i in 0..<4 { _ = try a.addTimer("Waiting \(i)") }
        try eventually(20, "four changes wait, and the worker waits for the server") {
            let s = try a.syncStatus()
            return s["pending"]?.int64Value == 4 && s["state"]?.stringValue == "waiting for the server"
        }
        let shown = try Executables.run("seam", ["sync", "status", "--socket", a.broker.socketPath]).stdout
        XCTAssertTrue(shown.contains("pending: 4") && shown.contains("waiting for the server"), shown)
        try own.restart()
        try eventually(30, "nothing waits once the server is back") {
            let s = try a.syncStatus()
            return s["pending"]?.int64Value == 0 && s["state"]?.stringValue == "idle"
        }
    }

    // MARK: - (g) one precision

    /// A date given with nanoseconds is stored at the microsecond, correctly rounded, and every
    /// machine holds the very same double.
    func testDatesAreBitIdenticalOnEveryMachine() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "xena")
        let b = try SyncMachine("b", server: server, user: "xena")
        var uuids: [String] = []
        for (i, fraction) in ["943826437", "943826500", "999999999", "000000499", "5"].enumerated() {
            uuids.append(try a.insert("Timer", ["name": .string("Dated \(i)"), "createdAt": .string("2026-12-05T10:00:0\(i).\(fraction)Z"),
                                                "modifiedAt": .double(1_796_032_800.943826437 + Double(i))]))
        }
        try eventually(15, "B has every timer") { try uuids.allSatisfy { try b.timer($0) != nil } }
        XCTAssertEqual(try a.timer(uuids[0])?["createdAt"]?.stringValue, "2026-12-05T10:00:00.943826Z", "rounded, not truncated past")
        XCTAssertEqual(try a.timer(uuids[2])?["createdAt"]?.stringValue, "2026-12-05T10:00:03.000000Z", "carried into the next second")
        func raw(_ m: SyncMachine) throws -> [String] {
            let r = try Executables.runTool("/usr/bin/sqlite3", [m.data + "/Cloud.sqlite",
                                                                 "SELECT uuid, printf('%!.17g %!.17g', createdAt, modifiedAt) FROM Timer "
                                                                 + "WHERE name LIKE 'Dated %' ORDER BY uuid"])
            return r.stdout.split(separator: "\n").map(String.init)
        }
        try eventually(10, "the same raw values on both machines") { try raw(a) == raw(b) && raw(a).count == uuids.count }
    }

    // MARK: - (h) listings

    /// A long synced name is cut in `seam timer ls`, on a terminal or not: the listing stays small.
    func testAListingCutsLongValues() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let long = String(repeating: "L", count: 200 << 10)
        for name in [long, "short"] {
            try c.save([.insert(entity: "Timer", values: ["name": .string(name), "steps": [["label": "a", "seconds": 60]]])])
        }
        for command in [["timer", "ls"], ["ls"]] {
            let r = try Executables.run("seam", command + ["--socket", broker.socketPath])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertLessThan(r.stdout.utf8.count, 4_000, "\(command): \(r.stdout.utf8.count) bytes")
            XCTAssertTrue(r.stdout.contains("short"), r.stdout)
            let json = try Executables.run("seam", command + ["--json", "--socket", broker.socketPath])
            XCTAssertTrue(json.stdout.contains(long), "--json gives every value whole")
        }
    }
}
