import Foundation
import SeamClient
import SeamJSON
import SeamPostgres
import SeamSync
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// Sync that converges: per-field conflicts resolved the same way on every machine whatever
/// order changes arrive in, a delete winning over a concurrent edit, and a randomised run of
/// three machines with sync pauses, server restarts and killed workers that ends with every
/// machine equal — on a real PostgreSQL with real seamd and seam-sync processes.
final class ConvergenceTests: PostgresTestCase {
    override class var zones: [String] { ["carol"] }

    /// Edits made while both machines' workers are paused: different fields of one timer both
    /// survive; one field edited on both ends with the later edit everywhere, even when it
    /// reaches the server first; a delete wins over an edit made after it elsewhere.
    func testConcurrentEditsResolvePerFieldTheSameEverywhere() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "carol")
        let b = try SyncMachine("b", server: server, user: "carol")
        let timer = try a.addTimer("Shared \(UUID().uuidString.prefix(4))")
        try eventually(10, "B has the timer") { try b.timer(timer) != nil }

        try a.pauseSync()
        try b.pauseSync()
        try a.update("Timer", timer, ["name": "named on A"])
        try b.update("Timer", timer, ["colour": "red"])
        try a.resumeSync()
        try b.resumeSync()
        try eventually(15, "both edits on both machines") {
            try [a, b].allSatisfy { m in
                let t = try m.timer(timer)
                return t?["name"]?.stringValue == "named on A" && t?["colour"]?.stringValue == "red"
            }
        }

        try a.pauseSync()
        try b.pauseSync()
        try a.update("Timer", timer, ["icon": "first"])
        usleep(20_000)
        try b.update("Timer", timer, ["icon": "second"])
        // The later edit (B's) reaches the server first; A's earlier one must not win by coming last.
        try b.resumeSync()
        try eventually(10, "B exported") { try b.syncStatus()["pending"]?.int64Value == 0 && b.syncStatus()["lastPush"] != nil }
        try a.resumeSync()
        try eventually(15, "one icon everywhere: the later edit's") {
            try [a, b].allSatisfy { try $0.timer(timer)?["icon"]?.stringValue == "second" }
        }

        try a.pauseSync()
        try b.pauseSync()
        try a.connection.save([.delete(entity: "Timer", uuid: timer)])
        usleep(20_000)
        try b.update("Timer", timer, ["name": "edited after the delete"])
        try b.resumeSync()
        try a.resumeSync()
        try eventually(15, "the delete wins everywhere") { try a.timer(timer) == nil && b.timer(timer) == nil }
    }

    /// A record deleted here keeps no SyncRecord once its delete is on the server (they piled
    /// up, one per record ever deleted), and the delete reaches the other machine.
    func testADeleteLeavesNoSyncRecordBehind() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "carol")
        let b = try SyncMachine("b", server: server, user: "carol")
        let timer = try a.addTimer("Gone \(UUID().uuidString.prefix(4))")
        func records() throws -> Int { try a.connection.count("SyncRecord", where: "recordUUID == $u", parameters: ["u": .string(timer)]) }
        try eventually(10, "A exported it") { try records() == 1 }
        try eventually(10, "B has it") { try b.timer(timer) != nil }
        try a.connection.save([.delete(entity: "Timer", uuid: timer)])
        try eventually(10, "the delete exported, and its SyncRecord gone") { try records() == 0 }
        try eventually(10, "B deleted it too") { try b.timer(timer) == nil }
        // Its own delete, coming back in the next import, changes nothing.
        try a.update("Timer", try a.addTimer("After \(UUID().uuidString.prefix(4))"), ["colour": "blue"])
        try a.completeCycles(2)
        XCTAssertNil(try a.timer(timer))
        XCTAssertEqual(try records(), 0)
    }

    /// A server whose sync schema is newer than this seam-sync knows stops sync with a message
    /// saying so (and what to do), rather than a guess; sync resumes once it is one it knows.
    func testANewerServerSchemaStopsSyncWithAClearMessage() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "carol")
        let admin = try PostgresConnection(server.adminConnection)
        // Its first cycle done: one under way when the server changes is past its check of the
        // server's version, and may export the timer saved below by the rules it had.
        try eventually(15, "the worker has synced once") { try a.syncStatus()["state"]?.stringValue == "idle" }
        try admin.query("UPDATE seam.meta SET value = '99' WHERE key = 'schemaVersion'")
        defer { _ = try? admin.query("UPDATE seam.meta SET value = '\(ServerSchema.version)' WHERE key = 'schemaVersion'") }
        // The worker that runs already (connected before the upgrade) notices at its next cycle,
        // and writes nothing by its older rules.
        let meanwhile = try a.addTimer("Saved while the server is newer")
        try eventually(15, "the worker says the server is newer") {
            (try a.syncStatus()["lastError"]?.stringValue ?? "").contains("version 99")
        }
        XCTAssertEqual(try admin.query("SELECT 1 FROM seam.records WHERE uuid = $1::uuid", [meanwhile]).count, 0)
        let status = try Executables.run("seam", ["sync", "status", "--socket", a.broker.socketPath])
        XCTAssertTrue(status.stdout.contains("upgrade Seam on this machine"), status.stdout)
        try admin.query("UPDATE seam.meta SET value = '\(ServerSchema.version)' WHERE key = 'schemaVersion'")
        if let pid = try a.syncWorkerPID() { kill(pid, SIGKILL) }
        let timer = try a.addTimer("After the server came back to a known version")
        try eventually(15, "sync works again") {
            try admin.query("SELECT 1 FROM seam.records WHERE uuid = $1::uuid", [timer]).count == 1
        }
    }

    /// Mixed model versions: one machine's Cloud store is still at Timers v5 (it knows no
    /// `Timer.sound`; its migration waits), two are current. The old machine keeps the sound it
    /// cannot store, never erases it when it edits the timer, and fills its new column with the
    /// kept value once it is migrated; all three end equal.
    func testAMachineOnAnOlderModelVersionKeepsWhatItDoesNotKnow() throws {
        let server = try pg()
        let old = try oldMachine(server: server, user: "carol")
        XCTAssertEqual(try old.connection.call("org.seam.Sync.Served")["entities"]?.arrayValue?
            .first { $0["name"]?.stringValue == "Timer" }?["attributes"]?.arrayValue?.contains(.string("sound")), false,
                       "the old machine's Timer has no sound")
        let new1 = try SyncMachine("new1", server: server, user: "carol")
        let new2 = try SyncMachine("new2", server: server, user: "carol")

        let timer = try new1.insert("Timer", ["name": "Bell timer", "sound": "bell", "steps": .array([.object(["label": "go", "seconds": 60])])])
        try eventually(15, "the old machine has the timer") { try old.timer(timer) != nil }
        try old.update("Timer", timer, ["name": "Renamed on the old machine"])
        try eventually(15, "the rename reached the others, and the sound is still there") {
            try [new1, new2].allSatisfy { m in
                let t = try m.timer(timer)
                return t?["name"]?.stringValue == "Renamed on the old machine" && t?["sound"]?.stringValue == "bell"
            }
        }
        try new2.update("Timer", timer, ["sound": "gong"])
        try eventually(15, "the old machine keeps the new sound for later") {
            try old.connection.fetch("SyncRecord", where: "recordUUID == $u", parameters: ["u": .string(timer)])
                .first?["unknownFields"]?["sound"]?.stringValue == "gong"
        }

        let migrate = try Executables.run("seam", ["migrate", "--socket", old.broker.socketPath])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        try eventually(20, "the old machine, migrated, fills the sound it kept") { try old.timer(timer)?["sound"]?.stringValue == "gong" }
        try eventually(15, "all three equal") {
            let rows = try [old, new1, new2].map { try $0.timer(timer) }
            return rows[0] == rows[1] && rows[1] == rows[2]
        }
    }

    /// A machine whose Cloud store is at Timers `version` (v5: no `Timer.sound`; its migration
    /// waits until asked), set up to sync as `user`. `versions` names each model's version
    /// instead, in pairs no release shipped; `prepare` is given the data directory first.
    func oldMachine(server: PostgresTestServer, user: String, version: Int = 5, versions: [String: Int]? = nil,
                    prepare: (String) throws -> Void = { _ in }) throws -> SyncMachine {
        let home = TemporaryDirectory("seam-sync-old")
        let data = home.file("data")
        if let versions {
            try FixtureWriter(schema: TimerApp.schema, versions: versions, rowsPerEntity: 0, seed: 1).write(to: data) { _ in }
        } else {
            let fixture = try Executables.run("seam-fixture", ["--version", String(version), "--rows", "0", data])
            XCTAssertEqual(fixture.status, 0, fixture.stderr)
        }
        try prepare(data)
        let config = home.file("config")
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try Data(#"{"roles": {"ticker": {"enabled": false}, "migrate": {"enabled": false}}}"#.utf8)
            .write(to: URL(fileURLWithPath: config + "/seamd.json"))
        return try SyncMachine("old", server: server, user: user, reusing: (home, data, config), setUp: true)
    }

    /// An entity a migration brings: Timers v3 renamed `Folder` to `UserGroup`, so a store at v2
    /// has no groups, and seamd serves it without its folders (it serves the current entities).
    /// No release synced such a store (sync's metadata v2 came with Timers v3), but a later
    /// version that adds an entity makes one: here, Timers v2 beside SyncMetadata v2. Meanwhile
    /// its import passes over the server's groups, and its folders stay here. Once migrated, it
    /// brings the groups made elsewhere meanwhile, and sends its folders, groups now (rows a
    /// migration makes have no history to export them by).
    func testAnEntityAMigrationBringsCatchesUpBothWays() throws {
        let server = try pg()
        try server.addUser("heidi")
        let folder = UUID().uuidString.lowercased()
        let old = try oldMachine(server: server, user: "heidi", versions: ["Timers": 2, "SyncMetadata": 2]) { data in
            // A folder release 2 made.
            try Database(path: data + "/Cloud.sqlite").execute("INSERT INTO Folder (uuid, name) VALUES ('\(folder)', 'Made in release 2')")
        }
        let new = try SyncMachine("new", server: server, user: "heidi")
        let group = try new.insert("UserGroup", ["name": "Made as a group"])
        let timer = try new.insert("Timer", ["name": "In the group", "groupUUID": .string(group),
                                             "steps": .array([.object(["label": "go", "seconds": 60])])])
        // The timer's tag follows the group's: once the old machine has the timer, its import
        // has passed the group.
        try eventually(15, "the old machine has the timer") { try old.timer(timer) != nil }

        let migrate = try Executables.run("seam", ["migrate", "--socket", old.broker.socketPath])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        try eventually(20, "the old machine, migrated, has the group made elsewhere") {
            try old.connection.row("UserGroup", uuid: group)?["name"]?.stringValue == "Made as a group"
        }
        try eventually(20, "the new machine has the folder, as a group") {
            try new.connection.row("UserGroup", uuid: folder)?["name"]?.stringValue == "Made in release 2"
        }
        try eventually(10, "the timer's group, kept meanwhile, is filled in") { try old.timer(timer)?["groupUUID"]?.stringValue == group }
        try eventually(10, "the worker says what it did") { old.broker.log.contains("the store now has UserGroup: sent 1 row(s), brought 1") }
    }

    /// Kept values of more records than one save may change (6,000 timers, two changes each)
    /// all reach their new column after the migration: the worker fills them a page at a time.
    func testManyKeptValuesAreFilledAfterTheMigration() throws {
        let server = try pg()
        try server.addUser("dave")
        let old = try oldMachine(server: server, user: "dave")
        let new = try SyncMachine("new", server: server, user: "dave")
        let count = 6000
        let steps = JSON.array([.object(["label": "go", "seconds": 60])])
        try new.connection.save((0..<count).map { i in
            .insert(entity: "Timer", values: ["name": .string("Timer \(i)"), "sound": .string("sound \(i)"), "steps": steps])
        })
        try eventually(60, "the old machine has every timer") { try old.connection.count("Timer") == count }
        try eventually(15, "and keeps every sound") {
            try old.connection.count("SyncRecord", where: "recordType == 'Timer'") == count
        }

        let migrate = try Executables.run("seam", ["migrate", "--socket", old.broker.socketPath])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        try eventually(60, "the old machine, migrated, fills every sound") {
            try old.connection.count("Timer", where: "sound BEGINSWITH 'sound '") == count
        }
        let sample = try old.connection.fetch("Timer", where: "name == 'Timer 4321'", fields: ["sound"])
        XCTAssertEqual(sample.first?["sound"]?.stringValue, "sound 4321")
        try eventually(10, "the worker says so (its log is relayed by seamd)") { old.broker.log.contains("filled new fields of \(count) record(s)") }
    }

    /// An older machine's edit exported over a server version it had not imported yet keeps
    /// that version's fields it does not know: the record's next tag is its own write, which
    /// the import skips, so the export is where it learns them.
    func testAnOlderMachinesExportKeepsTheFieldsItDoesNotKnow() throws {
        let server = try pg()
        try server.addUser("erin")
        let old = try oldMachine(server: server, user: "erin")
        let new = try SyncMachine("new", server: server, user: "erin")
        let timer = try new.addTimer("Alarm")
        try eventually(15, "the old machine has the timer") { try old.timer(timer) != nil }

        try old.pauseSync()
        try new.update("Timer", timer, ["sound": "bell"])
        let admin = try PostgresConnection(server.adminConnection)
        try eventually(10, "the server has the sound") {
            try ServerRecords.field(admin, timer, "sound") == "bell"
        }
        try old.update("Timer", timer, ["name": "Alarm, renamed on the old machine"])
        try old.resumeSync()
        try eventually(15, "the rename reached the new machine") {
            try new.timer(timer)?["name"]?.stringValue == "Alarm, renamed on the old machine"
        }
        let migrate = try Executables.run("seam", ["migrate", "--socket", old.broker.socketPath])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        try eventually(20, "the old machine, migrated, has the sound") { try old.timer(timer)?["sound"]?.stringValue == "bell" }
    }

    /// A field edited on a machine after its migration, before its worker filled the value kept
    /// for it, keeps the edit: here, on the server and on the other machine.
    func testAnEditAfterTheMigrationIsNotOverwrittenByTheKeptValue() throws {
        let server = try pg()
        try server.addUser("frank")
        let old = try oldMachine(server: server, user: "frank")
        let new = try SyncMachine("new", server: server, user: "frank")
        let timer = try new.insert("Timer", ["name": "Alarm", "sound": "bell", "steps": .array([.object(["label": "go", "seconds": 60])])])
        try eventually(15, "the old machine keeps the sound") {
            try old.connection.fetch("SyncRecord", where: "recordUUID == $u", parameters: ["u": .string(timer)])
                .first?["unknownFields"]?["sound"]?.stringValue == "bell"
        }
        try old.pauseSync()
        let migrate = try Executables.run("seam", ["migrate", "--socket", old.broker.socketPath])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        try old.update("Timer", timer, ["sound": "chime"])
        try old.resumeSync()
        try eventually(20, "every machine has the edit") {
            try new.timer(timer)?["sound"]?.stringValue == "chime" && old.timer(timer)?["sound"]?.stringValue == "chime"
        }
        try old.completeCycles(2)
        XCTAssertEqual(try old.timer(timer)?["sound"]?.stringValue, "chime", "and keeps it")
    }

    /// Three machines, many random operations (add, edit fields, move between groups, delete,
    /// add, rename and delete groups) on random machines, with random sync pauses, killed
    /// workers and server restarts. At the end every machine's Cloud data is equal, every
    /// field holds the last value written to it (unless its timer was deleted: a delete wins),
    /// and the server holds nothing of the Local store. SEAM_TEST_SEED replays a run;
    /// SEAM_SYNC_OPERATIONS sets its length (default 150).
    func testRandomisedMachinesConverge() throws {
        let server = try pg()
        let environment = ProcessInfo.processInfo.environment
        let seed = UInt64(environment["SEAM_TEST_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64(Int64.max))
        let operations = Int(environment["SEAM_SYNC_OPERATIONS"] ?? "") ?? 150
        print("ConvergenceTests: seed \(seed) (replay: SEAM_TEST_SEED=\(seed)), \(operations) operations")
        var random = SplitMix64(seed: seed)
        func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int(random.next() % UInt64(items.count))] }

        let machines = try (0..<3).map { try SyncMachine("m\($0)", server: server, user: "carol") }
        let tag = "conv-\(seed % 100_000)-"
        // The last value written to each (timer, field), in the order the writes happened.
        var expected: [String: [String: JSON]] = [:]
        var deleted: Set<String> = []
        var paused: Set<Int> = []
        var tally: [String: Int] = [:]
        let fields = ["name", "colour", "icon", "repeatCount"]

        // A row picked here may be gone a moment later: the machine's worker applies deletes
        // from the others at any time. Such an operation is skipped, not a failure.
        func unlessGone(_ body: () throws -> Void) throws -> Bool {
            do { try body() } catch let e as ClientError where e.remoteName == "org.seam.Store.NotFound" { return false }
            return true
        }
        for _ in 0..<operations {
            let i = Int(random.next() % 3)
            let m = machines[i]
            let timers = try m.connection.fetch("Timer", where: "name BEGINSWITH $t", parameters: ["t": .string(tag)]).compactMap { $0["uuid"]?.stringValue }
            let groups = try m.connection.fetch("UserGroup", where: "name BEGINSWITH $t", parameters: ["t": .string(tag)]).compactMap { $0["uuid"]?.stringValue }
            let roll = random.next() % 100
            let what: String
            switch roll {
            case 0..<20:
                let name = tag + "t\(random.next() % 1000)"
                let uuid = try m.addTimer(name)
                expected[uuid] = ["name": .string(name)]
                what = "add"
            case 20..<55:
                guard let t = pick(timers) else { continue }
                let field = pick(fields)!
                let value: JSON = field == "repeatCount" ? .integer(Int64(1 + random.next() % 9)) : .string((field == "name" ? tag : "") + "v\(random.next() % 1000)")
                // A save that changes nothing (the value was there already) is no edit: it is not
                // acknowledged as one, and the oracle must not count it.
                var saved = false
                guard try unlessGone({ saved = try m.connection.save([.update(entity: "Timer", uuid: t, values: [field: value])]).sequence != nil })
                else { continue }
                if saved { expected[t, default: [:]][field] = value }
                what = "edit"
            case 55..<63:
                guard let t = pick(timers) else { continue }
                guard try unlessGone({ try m.update("Timer", t, ["groupUUID": pick(groups).map(JSON.string) ?? .null]) }) else { continue }
                what = "move"
            case 63..<70:
                guard let t = pick(timers) else { continue }
                guard try unlessGone({ try m.connection.save([.delete(entity: "Timer", uuid: t)]) }) else { continue }
                deleted.insert(t)
                what = "delete"
            case 70..<78:
                _ = try m.insert("UserGroup", ["name": .string(tag + "g\(random.next() % 100)")])
                what = "add group"
            case 78..<83:
                guard let g = pick(groups) else { continue }
                guard try unlessGone({ try m.update("UserGroup", g, ["name": .string(tag + "g\(random.next() % 100)")]) }) else { continue }
                what = "rename group"
            case 83..<86:
                guard let g = pick(groups) else { continue }
                guard try unlessGone({ try m.connection.save([.delete(entity: "UserGroup", uuid: g)]) }) else { continue }
                what = "delete group"
            case 86..<93:
                if paused.contains(i) { try m.resumeSync(); paused.remove(i) } else { try m.pauseSync(); paused.insert(i) }
                what = "pause or resume"
            case 93..<98:
                if paused.contains(i) { try m.resumeSync(); paused.remove(i) }
                if let pid = try m.syncWorkerPID() { kill(pid, SIGKILL) }
                what = "kill worker"
            default:
                try server.restart()
                what = "server restart"
            }
            tally[what, default: 0] += 1
            usleep(UInt32(random.next() % 30_000))
        }
        print("ConvergenceTests: " + tally.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
        for i in paused { try machines[i].resumeSync() }

        func snapshot(_ m: SyncMachine) throws -> [String] {
            let timers = try m.connection.fetch("Timer", where: "name BEGINSWITH $t", parameters: ["t": .string(tag)], sort: "uuid")
            let groups = try m.connection.fetch("UserGroup", where: "name BEGINSWITH $t", parameters: ["t": .string(tag)], sort: "uuid")
            return (timers + groups).map { row in
                var r = row
                r["modifiedAt"] = nil
                return String(decoding: JSON.object(JSONObject(uniqueKeysWithValues: r.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })).encoded(), as: UTF8.self)
            }
        }
        var last: [[String]] = []
        try eventually(90, "every machine's Cloud data is equal (seed \(seed))") {
            for m in machines { _ = try? m.connection.call("org.seam.Sync.Now") }
            usleep(300_000)
            last = try machines.map(snapshot)
            return last[0] == last[1] && last[1] == last[2]
        }
        if last.count == 3, last[0] != last[1] || last[1] != last[2] {
            print("ConvergenceTests: m0 \(last[0].count) rows, m1 \(last[1].count), m2 \(last[2].count); first difference: "
                  + "\(zip(last[0], last[1]).first { $0 != $1 }.map { "\($0.0) vs \($0.1)" } ?? "in the counts")")
        }

        let reference = machines[0]
        for (uuid, values) in expected.sorted(by: { $0.key < $1.key }) {
            let row = try reference.timer(uuid)
            if deleted.contains(uuid) {
                XCTAssertNil(row, "timer \(uuid) was deleted, yet is there (seed \(seed))")
                if row != nil {
                    let admin = try PostgresConnection(server.adminConnection)
                    print("ConvergenceTests: on the server: \(try admin.query("SELECT change_tag, deleted, fields::text FROM seam.records WHERE uuid = $1::uuid", [uuid]))")
                    for (i, m) in machines.enumerated() {
                        let record = try m.connection.fetch("SyncRecord", where: "recordUUID == $u", parameters: ["u": .string(uuid)])
                        let token = try m.connection.fetch("SyncToken").map { "\($0["name"]?.stringValue ?? ""): \($0["value"]?.stringValue ?? "")" }
                        print("ConvergenceTests: m\(i) has it: \(try m.timer(uuid) != nil); SyncRecord \(record); tokens \(token)")
                    }
                }
                continue
            }
            guard let row else {
                XCTFail("timer \(uuid) was never deleted, yet is gone (seed \(seed))")
                continue
            }
            for (field, value) in values {
                XCTAssertEqual(row[field], value, "timer \(uuid).\(field): the last write was lost (seed \(seed))")
            }
        }
        let admin = try PostgresConnection(server.adminConnection)
        XCTAssertEqual(try admin.query("SELECT count(*) FROM seam.records WHERE record_type NOT IN ('Timer', 'UserGroup', 'seam.key')")[0][0], "0")
    }
}

extension SyncMachine {
    func pauseSync() throws {
        if let pid = try syncWorkerPID() { kill(pid, SIGSTOP) }
    }

    func resumeSync() throws {
        if let pid = try syncWorkerPID() { kill(pid, SIGCONT) }
    }

    func syncStatus() throws -> JSONObject { try connection.call("org.seam.Sync.Status") }

    /// Waits until the worker has finished `count` sync cycles, each asked for (`Sync.Now`) after
    /// the last ended: with two, one began after this call, so what it imports (a machine's own
    /// change coming back, say) has been applied — instead of waiting a fixed time for it.
    func completeCycles(_ count: Int, within seconds: Double = 15) throws {
        for n in 1...count {
            let before = try syncStatus()["lastPull"]?.doubleValue ?? 0
            _ = try connection.call("org.seam.Sync.Now")
            try waitUntil(seconds, "sync cycle \(n) of \(count) ended") { (try syncStatus()["lastPull"]?.doubleValue ?? 0) > before }
        }
    }
}
