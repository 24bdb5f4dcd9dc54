import Foundation
import SeamClient
import SeamJSON
import SeamPostgres
@testable import SeamSync
import SeamSyncSetup
import SeamTestSupport
import XCTest

/// Encrypted fields on a real PostgreSQL (issue 35): what the server holds is opened by another
/// implementation written from `Protocol/sync.md` (Python, PyNaCl); a second machine joins with
/// the recovery phrase, and is refused with a wrong one or a typo; a tampered, moved or cut box
/// is set aside by name while the rest arrives; a key file others may read stops the worker; a
/// rotation reseals everything, and a machine with the old key stops, loses nothing, and goes
/// on once it joins again.
final class EncryptionTests: PostgresTestCase {
    override class var zones: [String] { ["ivy", "jude", "kit", "lou"] }

    /// The server's raw record `uuid`, as `{"zone", "record_type", "uuid", "fields"}`.
    func rawRecord(_ admin: PostgresConnection, _ uuid: String) throws -> JSONObject {
        let row = try XCTUnwrap(try admin.query("SELECT zone::text, record_type, uuid::text, fields::text FROM seam.records WHERE uuid = $1::uuid",
                                                [uuid]).first)
        return ["zone": .string(row[0] ?? ""), "record_type": .string(row[1] ?? ""), "uuid": .string(row[2] ?? ""),
                "fields": try JSON.decode(row[3] ?? "{}")]
    }

    /// Protocol/tools/open_sealed.py on `record`, with the key file or `--phrase`.
    func openInPython(_ record: JSONObject, key: [String]) throws -> Executables.Result {
        let python = RepositoryFiles.url(".build/venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw XCTSkip("no \(python): scripts/test makes it (with PyNaCl from PyPI)")
        }
        let directory = TemporaryDirectory("seam-sealed")
        let file = directory.file("record.json")
        try Data(JSON.object(record).encoded()).write(to: URL(fileURLWithPath: file))
        return try withExtendedLifetime(directory) {
            try Executables.runTool(python, [RepositoryFiles.url("Protocol/tools/open_sealed.py").path] + key + [file])
        }
    }

    /// A timer and a group made on a machine reach the server sealed — no name, label or group
    /// name in pg_dump — and Python opens them from the specification alone, with the key file
    /// and with the phrase `seam sync phrase` shows; a box changed by one character does not open.
    func testWhatTheServerHoldsOpensInPythonFromTheSpecification() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "ivy")
        let group = try a.insert("UserGroup", ["name": "Kitchen drawer"])
        let timer = try a.insert("Timer", ["name": "Interop tea — Earl Grey", "groupUUID": .string(group),
                                           "steps": .array([.object(["label": "Steep gently", "seconds": 180])])])
        let admin = try PostgresConnection(server.adminConnection)
        try eventually(15, "both records are on the server") {
            try admin.query("SELECT 1 FROM seam.records WHERE uuid IN ($1::uuid, $2::uuid)", [timer, group]).count == 2
        }
        let record = try rawRecord(admin, timer)
        let sealedName = try XCTUnwrap(record["fields"]?["name"])
        XCTAssertTrue(FieldSeal.isSealed(sealedName), "\(sealedName)")
        XCTAssertTrue(FieldSeal.isSealed(try XCTUnwrap(record["fields"]?["steps"])))
        XCTAssertEqual(record["fields"]?["repeatCount"], 1, "the other fields stay readable")
        try ServerRecords.assertNothingInClear(server)

        let opened = try openInPython(record, key: [a.config + "/sync.key"])
        XCTAssertEqual(opened.status, 0, opened.stderr)
        let fields = try JSON.decode(Array(opened.stdout.utf8))
        XCTAssertEqual(fields["name"]?.stringValue, "Interop tea — Earl Grey")
        XCTAssertEqual(fields["steps"]?[0]?["label"]?.stringValue, "Steep gently")
        let phrase = try Executables.run("seam", ["sync", "phrase", "--config-dir", a.config])
        XCTAssertEqual(phrase.status, 0, phrase.stderr)
        let words = try XCTUnwrap(phrase.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0.split(separator: " ").count == 24 })
        let byPhrase = try openInPython(try rawRecord(admin, group), key: ["--phrase", words])
        XCTAssertEqual(try JSON.decode(Array(byPhrase.stdout.utf8))["name"]?.stringValue, "Kitchen drawer", byPhrase.stderr)

        var tampered = record
        var box = Array(sealedName["box"]?.stringValue ?? "")
        box[10] = box[10] == "A" ? "B" : "A"
        tampered["fields"] = .object(["name": .object(["sealed": 1, "key": sealedName["key"]!, "box": .string(String(box))])])
        let refused = try openInPython(tampered, key: [a.config + "/sync.key"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("field name: does not open"), refused.stderr)
    }

    /// A second machine: refused without the phrase (not on a terminal), with a typo (the
    /// checksum), with another key's phrase, and with an empty line (a new key for a zone that
    /// has one); each time nothing is written. With the phrase it joins and both follow each other.
    func testASecondMachineJoinsWithThePhraseAndNothingElse() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "jude")
        let key = try XCTUnwrap(try ZoneKey.read(a.config + "/sync.key"))
        let b = try SyncMachine("b", server: server, user: "kit")  // a machine of another zone, to set up again
        var words = key.phrase.split(separator: " ").map(String.init)
        words[5] = words[5] == "bab" ? "bad" : "bab"
        let other = ZoneKey.generate().phrase
        for (input, said) in [("", "give it with --key-stdin"), (words.joined(separator: " "), "checksum does not match"),
                              (other, "another key"), ("\n", "makes a key only for a new zone")] {
            let arguments = ["sync", "setup", server.url("jude"), "--password-stdin", "--config-dir", b.config, "--socket", b.broker.socketPath]
                + (input.isEmpty ? [] : ["--key-stdin"])
            let line = input == "\n" ? "" : input
            let setup = try Executables.run("seam", arguments, input: (server.passwords["jude"] ?? "") + "\n" + line + "\n")
            XCTAssertNotEqual(setup.status, 0, "refused: \(input.prefix(20))")
            XCTAssertTrue(setup.stderr.contains(said), "\(said): \(setup.stderr)")
            XCTAssertTrue(try String(contentsOfFile: b.config + "/sync.json", encoding: .utf8).contains("kit"), "b still syncs as kit")
        }
        let joined = try Executables.run("seam", ["sync", "setup", server.url("jude"), "--password-stdin", "--key-stdin", "--config-dir",
                                                  b.config, "--socket", b.broker.socketPath],
                                         input: (server.passwords["jude"] ?? "") + "\n" + key.phrase.uppercased() + "\n")
        XCTAssertEqual(joined.status, 0, joined.stderr)
        XCTAssertEqual(try ZoneKey.read(b.config + "/sync.key"), key)
        let timer = try a.addTimer("Made on A for B")
        try eventually(20, "B has A's timer, opened") { try b.timer(timer)?["name"]?.stringValue == "Made on A for B" }
        try b.update("Timer", timer, ["name": "Renamed on B"])
        try eventually(20, "A has B's name") { try a.timer(timer)?["name"]?.stringValue == "Renamed on B" }
    }

    /// Boxes changed on the server — one tampered with, one moved from another record, one cut
    /// short — are set aside, each naming the field; every other record still arrives, and a
    /// record set right again arrives and leaves the list.
    func testTamperedMovedAndCutBoxesAreSetAsideAndTheRestArrive() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "lou")
        let b = try SyncMachine("b", server: server, user: "lou")
        let admin = try PostgresConnection(server.adminConnection)
        let timers = try (0..<4).map { try a.addTimer("Box \($0)") }
        try eventually(20, "B has all four") { try timers.allSatisfy { try b.timer($0) != nil } }
        try b.pauseSync()
        func sealedName(_ uuid: String) throws -> JSONObject {
            try XCTUnwrap(try rawRecord(admin, uuid)["fields"]?["name"]?.objectValue)
        }
        var changed: [String: JSON] = [:]
        var tampered = try sealedName(timers[0])
        var box = Array(tampered["box"]?.stringValue ?? "")
        box[box.count / 2] = box[box.count / 2] == "Q" ? "R" : "Q"
        tampered["box"] = .string(String(box))
        changed[timers[0]] = .object(tampered)
        changed[timers[1]] = .object(try sealedName(timers[3]))  // moved from another row
        var cut = try sealedName(timers[2])
        cut["box"] = .string(String((cut["box"]?.stringValue ?? "").prefix(32)))
        changed[timers[2]] = .object(cut)
        for (uuid, name) in changed {
            try admin.query(ZoneWrites.tagged("lou") + "UPDATE seam.records SET fields = jsonb_set(fields, '{name}', $2::jsonb), "
                            + "change_tag = (SELECT last_tag FROM tag) WHERE uuid = $1::uuid",
                            [uuid, String(decoding: name.encoded(), as: UTF8.self)])
        }
        let after = try a.addTimer("After the bad boxes")
        try ZoneWrites.notify(admin, "lou")
        try b.resumeSync()
        try eventually(20, "B has the timer after them, and lists the three") {
            try b.timer(after) != nil && (b.syncStatus()["setAside"]?.arrayValue ?? []).count == 3
        }
        let listed = try Executables.run("seam", ["sync", "status", "--socket", b.broker.socketPath]).stdout
        for uuid in changed.keys { XCTAssertTrue(listed.contains(uuid), listed) }
        XCTAssertTrue(listed.contains("field 'name' does not open with this zone's key"), listed)
        for (i, uuid) in timers.prefix(3).enumerated() { XCTAssertEqual(try b.timer(uuid)?["name"]?.stringValue, "Box \(i)", "kept as it was") }
        // Set right again by A (its edit seals anew), the record arrives and leaves the list.
        try a.update("Timer", timers[1], ["name": "Box 1 again"])
        try eventually(20, "the record set right arrives") {
            try b.timer(timers[1])?["name"]?.stringValue == "Box 1 again"
                && !(b.syncStatus()["setAside"]?.arrayValue ?? []).contains { $0["uuid"]?.stringValue == timers[1] }
        }
        ServerRecords.inClearOnPurpose.formUnion(changed.keys)  // sealed, but not as the check reads them
    }

    /// A machine set up before encrypted fields (its sync.json names no key) in a zone that has
    /// one stops, says to set up again with the phrase, and loses nothing: what it made
    /// meanwhile goes once it has the key.
    func testAMachineWithoutTheKeyStopsAndLosesNothing() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "lou")
        let key = try ZoneKey.read(a.config + "/sync.key")
        let path = a.config + "/sync.json"
        var json = try XCTUnwrap(JSON.decode(String(contentsOfFile: path, encoding: .utf8)).objectValue)
        json["keyFile"] = nil
        try Data(JSON.object(json).encoded()).write(to: URL(fileURLWithPath: path))
        try FileManager.default.removeItem(atPath: a.config + "/sync.key")
        _ = try a.connection.call("org.seam.Sync.Reload")
        try eventually(20, "the worker says what to do") {
            (try a.syncStatus()["lastError"]?.stringValue ?? "").contains("this machine does not have")
        }
        let made = try a.addTimer("Made without the key")
        let admin = try PostgresConnection(server.adminConnection)
        XCTAssertEqual(try admin.query("SELECT count(*) FROM seam.records WHERE uuid = $1::uuid", [made]).first?[0], "0", "nothing sent")
        let joined = try Executables.run("seam", ["sync", "setup", server.url("lou"), "--password-stdin", "--key-stdin", "--config-dir",
                                                  a.config, "--socket", a.broker.socketPath],
                                         input: (server.passwords["lou"] ?? "") + "\n" + key.phrase + "\n")
        XCTAssertEqual(joined.status, 0, joined.stderr)
        try eventually(20, "what it made meanwhile reaches the server") { try ServerRecords.field(admin, made, "name") == "Made without the key" }
    }

    /// A record written in clear on the server (by an older build, or by hand) arrives, and is
    /// sealed by the next sync: the server keeps no name in clear for long.
    func testWhatArrivesInClearIsSealedByTheNextSync() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "jude")
        let admin = try PostgresConnection(server.adminConnection)
        let uuid = UUID().uuidString.lowercased()
        try admin.query(ZoneWrites.tagged("jude") + "INSERT INTO seam.records (zone, record_type, uuid, fields, versions, change_tag) "
                        + "SELECT 'jude', 'Timer', $1::uuid, $2::jsonb, '{}', last_tag FROM tag",
                        [uuid, #"{"name": "Written in clear elsewhere", "steps": [{"label": "Clear step", "seconds": 60}]}"#])
        try ZoneWrites.notify(admin, "jude")
        try eventually(20, "A has it, and the server holds it sealed") {
            let fields = try XCTUnwrap(try rawRecord(admin, uuid)["fields"])
            return try a.timer(uuid)?["name"]?.stringValue == "Written in clear elsewhere"
                && FieldSeal.isSealed(fields["name"] ?? .null) && FieldSeal.isSealed(fields["steps"] ?? .null)
        }
        XCTAssertEqual(try ServerRecords.field(admin, uuid, "name"), "Written in clear elsewhere", "the same value, sealed")
    }

    /// A new machine reads the whole zone in its first import and seals what it finds in clear
    /// then (it makes no pass over the zone before it): records written in clear before it
    /// joined — one with a sealed field beside one in clear — are on it, and sealed on the server.
    func testANewMachineSealsWhatItsFirstImportFindsInClear() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "jude")
        let admin = try PostgresConnection(server.adminConnection)
        let sealedOnA = try a.addTimer("Sealed by A")
        try eventually(20, "A's timer on the server") { !(try admin.query("SELECT 1 FROM seam.records WHERE uuid = $1::uuid", [sealedOnA])).isEmpty }
        _ = a.broker.stop()  // A would seal them too: B alone is left to
        let clear = UUID().uuidString.lowercased()
        try admin.query(ZoneWrites.tagged("jude") + "INSERT INTO seam.records (zone, record_type, uuid, fields, versions, change_tag) "
                        + "SELECT 'jude', 'Timer', $1::uuid, $2::jsonb, '{}', last_tag FROM tag",
                        [clear, #"{"name": "In clear before B", "steps": [{"label": "Clear step", "seconds": 60}]}"#])
        // A half-sealed record: A's, with its name put back in clear.
        try admin.query(ZoneWrites.tagged("jude") + "UPDATE seam.records SET fields = jsonb_set(fields, '{name}', '\"Half in clear\"'), "
                        + "change_tag = (SELECT last_tag FROM tag) WHERE zone = 'jude' AND uuid = $1::uuid", [sealedOnA])
        let b = try SyncMachine("b", server: server, user: "jude")
        // Sealed by the end of B's first cycle, the one that imported them (not by a later
        // cycle's pass over the zone).
        try eventually(20, "B's first cycle ended") { try b.syncStatus()["lastPull"]?.doubleValue != nil }
        XCTAssertEqual(try b.timer(clear)?["name"]?.stringValue, "In clear before B")
        XCTAssertEqual(try b.timer(sealedOnA)?["name"]?.stringValue, "Half in clear")
        for uuid in [clear, sealedOnA] {
            let fields = try rawRecord(admin, uuid)["fields"]
            XCTAssertTrue(FieldSeal.isSealed(fields?["name"] ?? .null) && FieldSeal.isSealed(fields?["steps"] ?? .null), "\(fields ?? .null)")
        }
        XCTAssertEqual(try ServerRecords.field(admin, clear, "name"), "In clear before B", "the same value, sealed")
    }

    /// A key file others may read stops the worker with what to do; set right, sync goes on.
    func testAKeyFileOthersMayReadStopsTheWorker() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "ivy")
        chmod(a.config + "/sync.key", 0o644)
        let kill = try XCTUnwrap(try a.syncWorkerPID())
        Foundation.kill(kill, SIGKILL)  // started again by seamd: it reads the key afresh
        try eventually(20, "the worker says why it stopped") {
            (try a.syncStatus()["lastError"]?.stringValue ?? "").contains("chmod 600")
        }
        let timer = try a.addTimer("Made while stopped")
        chmod(a.config + "/sync.key", 0o600)
        _ = try a.connection.call("org.seam.Sync.Reload")
        let admin = try PostgresConnection(server.adminConnection)
        try eventually(20, "the timer made meanwhile reaches the server") { try ServerRecords.field(admin, timer, "name") == "Made while stopped" }
    }

    /// `seam sync rotate-key` on A: every record is sealed with the new key (none with the old),
    /// A goes on syncing; B, with the old key, stops and says so, keeps its edits, and sends them
    /// once it joins again with the new phrase.
    func testARotationResealsEverythingAndTheOtherMachineJoinsAgain() throws {
        let server = try pg()
        let a = try SyncMachine("a", server: server, user: "kit")
        let b = try SyncMachine("b", server: server, user: "kit")
        let admin = try PostgresConnection(server.adminConnection)
        let timers = try (0..<3).map { try a.addTimer("Before rotation \($0)") }
        try eventually(20, "B has them") { try timers.allSatisfy { try b.timer($0) != nil } }
        let old = try ZoneKey.read(a.config + "/sync.key")
        let rotated = try Executables.run("seam", ["sync", "rotate-key", "--config-dir", a.config, "--socket", a.broker.socketPath])
        XCTAssertEqual(rotated.status, 0, rotated.stderr + rotated.stdout)
        let new = try ZoneKey.read(a.config + "/sync.key")
        XCTAssertNotEqual(new, old)
        XCTAssertTrue(rotated.stdout.contains(new.phrase), rotated.stdout)
        let stillOld = try admin.query("SELECT count(*) FROM seam.records WHERE zone = 'kit' AND "
                                       + "jsonb_path_exists(fields, '$.*.key ? (@ == $k)', jsonb_build_object('k', $1::text))", [old.id])
        XCTAssertEqual(stillOld.first?[0], "0", "nothing is sealed with the old key")
        ServerRecords.learn(configDirectory: a.config)
        XCTAssertEqual(try ServerRecords.field(admin, timers[0], "name"), "Before rotation 0")
        let onA = try a.addTimer("After rotation")
        try eventually(20, "A syncs with the new key") { try ServerRecords.field(admin, onA, "name") == "After rotation" }

        let kept = try b.addTimer("Made on B with the old key")
        try eventually(30, "B stops and says why") {
            (try b.syncStatus()["lastError"]?.stringValue ?? "").contains("is not this machine's")
        }
        XCTAssertNil(try ServerRecords.field(admin, kept, "name"), "B wrote nothing")
        let joined = try Executables.run("seam", ["sync", "setup", server.url("kit"), "--password-stdin", "--key-stdin", "--config-dir",
                                                  b.config, "--socket", b.broker.socketPath],
                                         input: (server.passwords["kit"] ?? "") + "\n" + new.phrase + "\n")
        XCTAssertEqual(joined.status, 0, joined.stderr)
        try eventually(30, "B's edit made meanwhile reaches A, and A's reaches B") {
            try a.timer(kept)?["name"]?.stringValue == "Made on B with the old key" && b.timer(onA) != nil
        }
    }
}
