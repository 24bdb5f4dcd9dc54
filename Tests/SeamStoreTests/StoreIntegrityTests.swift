import Foundation
import SeamClient
import SeamJSON
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// Store files that are damaged, vanish, are replaced or can only be read, as a user meets them
/// through a real seamd: never served as if whole, nothing acknowledged lost.
final class StoreIntegrityTests: XCTestCase {
    static func status(_ c: SeamConnection, _ name: String) throws -> JSON {
        try XCTUnwrap(c.status()["stores"]?.arrayValue?.first { $0["name"]?.stringValue == name })
    }

    /// Overwrites `count` bytes at three quarters of `path` with noise.
    static func damage(_ path: String, count: Int = 3000) throws {
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(size * 3 / 4))
        var generator = SystemRandomNumberGenerator()
        try handle.write(contentsOf: Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        try handle.close()
    }

    /// (b) A damaged Local.sqlite at start: its check at open finds it, it is shown as damaged
    /// with the next steps, saves into it are refused, and Cloud serves and takes saves.
    func testADamagedStoreIsClosedNotServedAndTheOtherServes() throws {
        let tmp = TemporaryDirectory("seam-damaged")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: TimerModel.history.current.version, rows: 2000, to: data)
        try Self.damage(data + "/Local.sqlite")
        let before = try BadInputSupport.bytes(data + "/Local.sqlite")
        let broker = try BrokerProcess(dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try eventually(10, "Local is found damaged") { try Self.status(c, "Local")["state"]?.stringValue == "damaged" }
        let local = try Self.status(c, "Local")
        let reason = local["reason"]?.stringValue ?? ""
        XCTAssertTrue(reason.contains("damaged") && reason.contains("seam check") && reason.contains("seam restore"), reason)
        XCTAssertThrowsError(try c.save([.insert(entity: "Session", values: ["name": "x", "startedAt": 1])])) { error in
            XCTAssertEqual((error as? ClientError)?.remoteName, "org.seam.Store.StoreUnavailable", "\(error)")
        }
        let flash = try Executables.run("seam", ["flash", "1m", "--socket", broker.socketPath])
        XCTAssertNotEqual(flash.status, 0, "nothing is written into a damaged store")
        XCTAssertNoThrow(try c.save([.insert(entity: "Timer", values: ["name": "Kettle"])]), "Cloud takes saves")
        let shown = try Executables.run("seam", ["status", "--socket", broker.socketPath]).stdout
        XCTAssertTrue(shown.contains("Local: damaged"), shown)
        XCTAssertTrue(broker.log.contains("error: Local store closed: damaged"), broker.log)
        XCTAssertEqual(broker.stop(), 0)
        XCTAssertEqual(try BadInputSupport.bytes(data + "/Local.sqlite"), before, "the damaged file is left as it was")
    }

    /// Damage that appears while seamd serves (a page overwritten under it): the first read that
    /// meets it closes the store at once, and no later write reaches it.
    func testDamageFoundAtRunTimeClosesTheStoreAtOnce() throws {
        let tmp = TemporaryDirectory("seam-damaged-later")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: TimerModel.history.current.version, rows: 2000, to: data)
        let broker = try BrokerProcess(dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try eventually(10, "Local is checked") { try Self.status(c, "Local")["state"]?.stringValue == "open" }
        let timers = try c.count("Timer")
        try BadInputSupport.corruptMiddleLeafPage(of: "Session", in: data + "/Local.sqlite")
        var refused = false
        for _ in 0..<20 where !refused {  // a fetch of every row reads the damaged page
            do { _ = try c.call("org.seam.Store.Fetch", ["entity": "Session"]) } catch { refused = true }
        }
        XCTAssertTrue(refused, "a read met the damage")
        XCTAssertEqual(try Self.status(c, "Local")["state"]?.stringValue, "damaged")
        XCTAssertThrowsError(try c.save([.insert(entity: "Session", values: ["name": "x", "startedAt": 1])]))
        XCTAssertEqual(try c.count("Timer"), timers, "Cloud serves")
        XCTAssertEqual(broker.stop(), 0)
    }

    /// (c) Local.sqlite removed while seamd serves: the next save puts the data back at its
    /// path (from the file seamd still has open) and goes on; after a restart every session is
    /// there, and the log says what happened.
    func testAStoreFileRemovedWhileServingIsPutBackBeforeTheNextSave() throws {
        let broker = try BrokerProcess()
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        for i in 0..<5 { try c.save([.insert(entity: "Session", values: ["name": .string("s\(i)"), "startedAt": 1])]) }
        try FileManager.default.removeItem(atPath: broker.dataDirectory + "/Local.sqlite")
        let started = try Executables.run("seam", ["flash", "1m", "--name", "after", "--socket", broker.socketPath])
        XCTAssertEqual(started.status, 0, started.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: broker.dataDirectory + "/Local.sqlite"))
        XCTAssertTrue(broker.log.contains("Local: its file") && broker.log.contains("was removed while seamd served it"), broker.log)
        let again = try broker.restarted()
        let d = try SeamConnection.connect(path: again.socketPath)
        XCTAssertEqual(try d.count("Session"), 6, "every session, before and after the removal")
        XCTAssertEqual(again.stop(), 0)
    }

    /// A store file replaced by another while seamd serves (an older copy moved over it): seamd's
    /// data is put back and the other file moved aside, not lost, not deleted; the upkeep notices
    /// it within a second or two even when nothing is saved.
    func testAStoreFileReplacedWhileServingIsPutBackAndTheOtherKeptAside() throws {
        let broker = try BrokerProcess()
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try c.save([.insert(entity: "Session", values: ["name": "early", "startedAt": 1])])
        let store = broker.dataDirectory + "/Local.sqlite"
        let older = broker.directory.file("older.sqlite")
        let db = try Database(path: store, options: { var o = Database.Options(); o.readOnly = true; return o }())
        try db.backup(to: older)
        db.close()
        for i in 0..<3 { try c.save([.insert(entity: "Session", values: ["name": .string("late\(i)"), "startedAt": 1])]) }
        XCTAssertEqual(rename(older, store), 0)
        try eventually(5, "the upkeep puts the file back") { broker.log.contains("was replaced by another file") }
        let aside = try FileManager.default.contentsOfDirectory(atPath: broker.dataDirectory).filter { $0.hasPrefix("Local.sqlite.replaced-") }
        XCTAssertEqual(aside.filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }.count, 1, "\(aside)")
        XCTAssertEqual(try c.count("Session"), 4)
        let again = try broker.restarted()
        XCTAssertEqual(try SeamConnection.connect(path: again.socketPath).count("Session"), 4)
        XCTAssertEqual(again.stop(), 0)
    }

    /// (d) A store file that can only be read (a read-only bind mount of the file; the directory
    /// stays writable): shown as open, read-only, with the reason; reads work; a save into it
    /// fails with StoreReadOnly naming the file, and the other store takes saves.
    func testAReadOnlyStoreIsServedForReadingAndSavesIntoItAreRefusedByName() throws {
        guard getuid() == 0 else { throw XCTSkip("a read-only bind mount needs root (running as uid \(getuid()))") }
        let tmp = TemporaryDirectory("seam-read-only")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: TimerModel.history.current.version, rows: 40, to: data)
        let store = data + "/Local.sqlite"
        let sessions = try XCTUnwrap(try Database(path: store).scalar("SELECT count(*) FROM Session").integerValue)
        guard try Executables.runTool("/bin/mount", ["--bind", store, store]).status == 0 else { throw XCTSkip("cannot bind-mount here") }
        defer { _ = try? Executables.runTool("/bin/umount", [store]) }
        guard try Executables.runTool("/bin/mount", ["-o", "remount,ro,bind", store]).status == 0 else {
            throw XCTSkip("cannot remount read-only here")
        }
        let broker = try BrokerProcess(dataDirectory: data)
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let local = try Self.status(c, "Local")
        XCTAssertEqual(local["state"]?.stringValue, "open")
        XCTAssertEqual(local["readOnly"]?.boolValue, true)
        XCTAssertTrue(local["readOnlyReason"]?.stringValue?.contains("Read-only") == true, "\(local)")
        XCTAssertEqual(Int64(try c.count("Session")), sessions, "reads work")
        XCTAssertThrowsError(try c.save([.insert(entity: "Session", values: ["name": "x", "startedAt": 1])])) { error in
            guard case .remote(let v)? = (error as? ClientError)?.kind else { return XCTFail("\(error)") }
            XCTAssertEqual(v.name, "org.seam.Store.StoreReadOnly")
            XCTAssertEqual(v.parameters["path"]?.stringValue, store)
            XCTAssertFalse(v.description.contains("[SQL"), "said plainly: \(v)")
        }
        XCTAssertNoThrow(try c.save([.insert(entity: "Timer", values: ["name": "Kettle"])]))
        let shown = try Executables.run("seam", ["status", "--socket", broker.socketPath]).stdout
        XCTAssertTrue(shown.contains("Local: open, read-only"), shown)
    }

    /// A store path that is no plain file — a directory, a symbolic link, a FIFO — is left
    /// untouched and closed with what it is (a FIFO must not hang seamd's start); the other
    /// store serves.
    func testAStorePathThatIsNoPlainFileIsRefusedUntouched() throws {
        for kind in ["directory", "link", "fifo"] {
            let tmp = TemporaryDirectory("seam-not-a-file")
            let data = tmp.file("data")
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            let store = data + "/Local.sqlite"
            switch kind {
            case "directory": try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
            case "link":
                try BadInputSupport.writeFixture(timersVersion: TimerModel.history.current.version, rows: 10, to: tmp.file("elsewhere"))
                try FileManager.default.createSymbolicLink(atPath: store, withDestinationPath: tmp.file("elsewhere/Local.sqlite"))
            default: XCTAssertEqual(mkfifo(store, 0o600), 0)
            }
            let broker = try BrokerProcess(dataDirectory: data)
            let c = try SeamConnection.connect(path: broker.socketPath)
            try c.hello()
            let local = try Self.status(c, "Local")
            XCTAssertEqual(local["state"]?.stringValue, "closed", "\(kind): \(local)")
            let reason = local["reason"]?.stringValue ?? ""
            XCTAssertTrue(reason.contains("not a store file") && reason.contains(kind == "link" ? "symbolic link" : kind == "fifo" ? "FIFO" : "directory"),
                          "\(kind): \(reason)")
            XCTAssertNoThrow(try c.save([.insert(entity: "Timer", values: ["name": "Kettle"])]), kind)
            XCTAssertEqual(broker.stop(), 0)
            XCTAssertEqual(FileManager.default.fileExists(atPath: store), true, "\(kind) left where it was")
        }
    }

    // MARK: - Backup, check, restore

    /// `seam backup DIR` while seamd serves and saves go on; `seam check`; `seam restore DIR`
    /// puts the set back: the sessions saved after the backup are gone, the replaced files kept
    /// in backups/, and a subscriber from before gets a resync.
    func testBackupCheckAndRestoreWhileSeamdServes() throws {
        let broker = try BrokerProcess()
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        for i in 0..<10 { try c.save([.insert(entity: "Session", values: ["name": .string("kept\(i)"), "startedAt": 1])]) }
        let set = broker.directory.file("set")
        let backup = try Executables.run("seam", ["backup", set, "--json", "--socket", broker.socketPath])
        XCTAssertEqual(backup.status, 0, backup.stderr)
        let taken = try JSON.decode(Array(backup.stdout.utf8))
        XCTAssertEqual(taken["stores"]?.arrayValue?.count, 2, backup.stdout)
        for name in ["Cloud.sqlite", "Local.sqlite", "seam-backup.json", "sequence.lease"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: set + "/" + name), name)
        }
        for i in 0..<5 { try c.save([.insert(entity: "Session", values: ["name": .string("later\(i)"), "startedAt": 1])]) }
        let check = try Executables.run("seam", ["check", "--socket", broker.socketPath])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertTrue(check.stdout.contains("Cloud: ok") && check.stdout.contains("Local: ok"), check.stdout)

        let subscriber = try RawClient(broker.socketPath)
        subscriber.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session","sort":"name"},"more":true}"#)
        XCTAssertTrue((subscriber.readFrame() ?? "").contains(#""kind":"result""#))
        let restore = try Executables.run("seam", ["restore", set, "--socket", broker.socketPath])
        XCTAssertEqual(restore.status, 0, restore.stderr)
        XCTAssertEqual(try c.count("Session"), 10)
        XCTAssertTrue((subscriber.readFrame() ?? "").contains(#""kind":"resync""#), "a subscriber from before resyncs")
        let kept = Backups.list(StoreLayout(directory: broker.dataDirectory))
        XCTAssertEqual(kept.last?.reason, "restore")
        XCTAssertEqual(Set(kept.last?.stores ?? []), ["Cloud", "Local"])
        XCTAssertEqual(broker.stop(), 0)
    }

    /// A Backup or Check called without `more` gets one reply, at the end — no progress on the
    /// way — and the connection's next call gets its own.
    func testMaintenanceWithoutMoreRepliesOnceAtTheEnd() throws {
        let broker = try BrokerProcess()
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try c.save((0..<500).map { .insert(entity: "Session", values: ["name": .string("s\($0)"), "startedAt": 1]) })
        let raw = try RawClient(broker.socketPath)
        raw.send(#"{"method":"org.seam.Store.Hello","parameters":{"version":1,"role":"cli"}}"#)
        XCTAssertTrue((raw.readFrame() ?? "").contains("parameters"))
        let set = broker.directory.file("set")
        for call in [#"{"method":"org.seam.Maintenance.Backup","parameters":{"directory":"\#(set)"}}"#,
                     #"{"method":"org.seam.Maintenance.Check"}"#] {
            raw.send(call)
            let reply = raw.readFrame() ?? ""
            XCTAssertTrue(reply.contains(#""state":"done""#) && !reply.contains("continues"), reply)
            raw.send(#"{"method":"org.seam.Store.Count","parameters":{"entity":"Session"}}"#)
            let count = raw.readFrame() ?? ""
            XCTAssertTrue(count.contains(#""count":500"#), count)
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: set + "/Local.sqlite"))
        XCTAssertEqual(broker.stop(), 0)
    }

    /// Sets that cannot be put back are refused, nothing changed: one with a file missing, one
    /// from another data directory (unless --from-elsewhere), one written by a newer build; and
    /// a backup into a directory that is not empty.
    func testRestoreRefusesSetsThatCannotBePutBack() throws {
        let broker = try BrokerProcess()
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try c.save([.insert(entity: "Timer", values: ["name": "Kettle"])])
        let set = broker.directory.file("set")
        XCTAssertEqual(try Executables.run("seam", ["backup", set, "--socket", broker.socketPath]).status, 0)
        let full = try Executables.run("seam", ["backup", set, "--socket", broker.socketPath])
        XCTAssertNotEqual(full.status, 0)
        XCTAssertTrue(full.stderr.contains("is not empty"), full.stderr)

        func refused(_ directory: String, _ words: String, extra: [String] = []) throws {
            let r = try Executables.run("seam", ["restore", directory, "--socket", broker.socketPath] + extra)
            XCTAssertNotEqual(r.status, 0, directory)
            XCTAssertTrue(r.stderr.contains(words) && r.stderr.contains("nothing was changed"), r.stderr)
            XCTAssertEqual(try c.count("Timer"), 1)
        }
        let missing = broker.directory.file("missing")
        try FileManager.default.copyItem(atPath: set, toPath: missing)
        try FileManager.default.removeItem(atPath: missing + "/Local.sqlite")
        try refused(missing, "lacks Local.sqlite")

        let elsewhere = broker.directory.file("elsewhere")
        try FileManager.default.copyItem(atPath: set, toPath: elsewhere)
        let manifest = try String(contentsOfFile: elsewhere + "/seam-backup.json", encoding: .utf8)
            .replacingOccurrences(of: broker.dataDirectory, with: "/somewhere/else")
        try Data(manifest.utf8).write(to: URL(fileURLWithPath: elsewhere + "/seam-backup.json"))
        try refused(elsewhere, "was taken from /somewhere/else")
        let anyway = try Executables.run("seam", ["restore", elsewhere, "--from-elsewhere", "--socket", broker.socketPath])
        XCTAssertEqual(anyway.status, 0, anyway.stderr + anyway.stdout + broker.log)

        let newer = broker.directory.file("newer")
        try FileManager.default.copyItem(atPath: set, toPath: newer)
        try BadInputSupport.rewriteModelRecord(TimerModel.name, in: newer + "/Local.sqlite", version: TimerModel.history.current.version + 1,
                                               configurationHash: String(repeating: "f", count: 64))
        try refused(newer, "newer Seam")
        XCTAssertEqual(broker.stop(), 0)
    }

    /// With no seamd, the same commands work on the data directory itself (its lock taken).
    func testBackupAndRestoreOffline() throws {
        let tmp = TemporaryDirectory("seam-offline")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: TimerModel.history.current.version, rows: 40, to: data)
        let env = ["SEAM_SOCKET": tmp.file("none.sock"), "SEAM_DATA_DIR": data]
        let set = tmp.file("set")
        let backup = try Executables.run("seam", ["backup", set], environment: env)
        XCTAssertEqual(backup.status, 0, backup.stderr)
        let original = try BadInputSupport.uuidsByEntity(timersVersion: TimerModel.history.current.version, in: data)
        let db = try Database(path: data + "/Cloud.sqlite")
        try db.execute("DELETE FROM Timer")
        db.close()
        let check = try Executables.run("seam", ["check"], environment: env)
        XCTAssertEqual(check.status, 0, check.stderr)
        let restore = try Executables.run("seam", ["restore", set], environment: env)
        XCTAssertEqual(restore.status, 0, restore.stderr)
        XCTAssertEqual(try BadInputSupport.uuidsByEntity(timersVersion: TimerModel.history.current.version, in: data), original)
        XCTAssertEqual(Backups.list(StoreLayout(directory: data)).last?.reason, "restore")
    }

    /// `seam restore` while a migration runs is refused, and the migration goes on.
    func testRestoreWhileAMigrationRunsIsRefused() throws {
        let tmp = TemporaryDirectory("seam-restore-migrating")
        let data = tmp.file("data")
        try MigrationRoleSupport.writeOutdatedLocalFixture(rows: 20, to: data)
        let fake = try MigrationRoleSupport.FakeWorker(in: tmp, mode: "crash")  // it waits for go
        let broker = try BrokerProcess(arguments: ["--config", fake.config], dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try eventually(10, "the migration runs") { try c.status()["migration"]?["running"]?.boolValue == true }
        let set = tmp.file("set")
        try FileManager.default.createDirectory(atPath: set, withIntermediateDirectories: true)
        let r = try Executables.run("seam", ["restore", set, "--socket", broker.socketPath])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("a migration is running"), r.stderr)
        XCTAssertEqual(try c.status()["migration"]?["running"]?.boolValue, true, "the migration goes on")
        try fake.go()
        try eventually(20, "the migration ends") { try c.status()["migration"]?["running"]?.boolValue == false }
        XCTAssertEqual(broker.stop(), 0)
    }
}
