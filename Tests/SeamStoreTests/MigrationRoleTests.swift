import Foundation
import SeamClient
import SeamJSON
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import Synchronization
import XCTest

/// Migration as a role, with real processes: a real `seamd` on an outdated store starts
/// `seam-migrate` as its worker, serves the other store meanwhile, and swaps the copy in only
/// when it verifies. Workers that crash or hand over a bad copy are real processes too (a small
/// Python program speaking the protocol on fd 3, configured as the migrate role's command).
final class MigrationRoleTests: XCTestCase {
    /// An outdated Local store (Timers v4, beside a current Cloud) is migrated at start through
    /// the worker: Cloud serves throughout, Local comes back at the current version with every
    /// row, the original is kept as the backup, no temporary file is left, and `seam store info`
    /// says so.
    func testAnOutdatedStoreIsMigratedByTheWorkerAtStart() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try MigrationRoleSupport.writeOutdatedLocalFixture(rows: 300, to: data)
        let before = try MigrationRoleSupport.uuids(in: data)
        let current = TimerModel.history.current.version
        let broker = try BrokerProcess(dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        XCTAssertEqual(try c.count("Timer"), 300, "Cloud serves while Local migrates")
        try eventually(20, "Local is open at the current version") {
            try MigrationRoleSupport.store("Local", c)["state"]?.stringValue == "open"
        }
        let local = try MigrationRoleSupport.store("Local", c)
        XCTAssertEqual(local["versions"]?.arrayValue?.first?["version"]?.int64Value, Int64(current), "\(local)")
        XCTAssertEqual(local["backup"]?.stringValue, newestBackup(in: data, of: "Local"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: newestBackup(in: data, of: "Local")))
        XCTAssertEqual(try MigrationRoleSupport.store("Cloud", c)["backup"], .null, "Cloud was current: not migrated")
        XCTAssertEqual(try MigrationRoleSupport.uuids(in: data), before, "every row is there after the migration")
        XCTAssertEqual(try c.count("Session"), 300)
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
        let last = try c.status()["migration"]?["last"]
        XCTAssertEqual(last?["error"], .null, "\(String(describing: last))")
        let info = try Executables.run("seam", ["store", "info", "--socket", broker.socketPath])
        XCTAssertTrue(info.stdout.contains("Local: open") && info.stdout.contains("Timers v\(current) (current)")
                      && info.stdout.contains("backup: \(newestBackup(in: data, of: "Local"))")
                      && info.stdout.contains("backups (oldest first):") && info.stdout.contains("migration at"), info.stdout)
        XCTAssertTrue(broker.log.contains("migrated Local in"), broker.log)
        let again = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
        XCTAssertEqual(again.stdout, "Nothing to migrate: every store is current.\n", again.stderr)
    }

    /// A store whose shape several versions share (release 4's Cloud file is the same from
    /// Timers v3 to v5) is shown as that range by `seam store info`, not as the newest alone.
    func testStoreInfoNamesTheRangeOfVersionsAShapeCovers() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: 4, rows: 10, to: data)
        let config = tmp.file("seamd.json")
        try #"{"roles": {"migrate": {"enabled": false}}}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let history = TimerModel.history.versions
        let shape = history[3].hashes.configurations["Cloud"]
        let sharing = history.filter { $0.hashes.configurations["Cloud"] == shape }.map(\.version)
        XCTAssertGreaterThan(sharing.count, 1, "release 4's Cloud shape is shared (else this test shows nothing)")
        let broker = try BrokerProcess(arguments: ["--config", config], dataDirectory: data)
        defer { _ = broker.stop() }
        let info = try Executables.run("seam", ["store", "info", "--socket", broker.socketPath])
        XCTAssertTrue(info.stdout.contains("Timers v\(sharing.first!)–v\(sharing.last!) (this build: v\(TimerModel.history.current.version))"
                                           + ": one shape, which these versions share"), info.stdout)
    }

    /// A directory of release 4 (Timers v4 in both files: version 6 changed Timer and Session)
    /// has both stores migrated at start through the worker, as one run: both come back at the
    /// current version with every row, both originals are kept as backups, no temporary file is
    /// left, and the timers and sessions have the new attributes' defaults.
    func testARelease4DirectoryHasBothStoresMigratedByTheWorkerAtStart() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: 4, rows: 300, to: data)
        let before = try MigrationRoleSupport.uuids(in: data)
        let current = TimerModel.history.current.version
        let broker = try BrokerProcess(dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(20, "both stores are open at the current version") {
            try ["Cloud", "Local"].allSatisfy { try MigrationRoleSupport.store($0, c)["state"]?.stringValue == "open" }
        }
        for name in ["Cloud", "Local"] {
            let store = try MigrationRoleSupport.store(name, c)
            let timers = store["versions"]?.arrayValue?.first { $0["model"]?.stringValue == TimerModel.name }
            XCTAssertEqual(timers?["version"]?.int64Value, Int64(current), "\(store)")
            XCTAssertEqual(store["backup"]?.stringValue, newestBackup(in: data, of: name), "\(store)")
            XCTAssertTrue(FileManager.default.fileExists(atPath: newestBackup(in: data, of: name)))
        }
        XCTAssertEqual(try MigrationRoleSupport.uuids(in: data), before, "every row is there after the migration")
        XCTAssertEqual(try c.count("Timer", where: #"sound == """#), 300)
        XCTAssertEqual(try c.count("Session", where: #"sound == "" AND note == """#), 300)
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
        XCTAssertEqual(try c.status()["migration"]?["last"]?["error"], .null)
        XCTAssertTrue(broker.log.contains("migrated Cloud, Local in"), broker.log)
    }

    /// While a worker copies, a call that needs the migrating store fails at once with
    /// StoreUnavailable and the percentage the worker last reported; the other store serves;
    /// `seam status` shows the store migrating. When the worker dies, its half-written copy is
    /// removed, the original serves again at its old version, the error is in `seam status`
    /// and the log, and a channel on the store resumes with a fresh result. `seam migrate`
    /// then retries (with the real worker) and succeeds, with a progress line per phase.
    func testAWorkerThatDiesLeavesTheOriginalInServiceAndALaterMigrateRetries() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try MigrationRoleSupport.writeOutdatedLocalFixture(rows: 200, to: data)
        let before = try MigrationRoleSupport.uuids(in: data)
        let fake = try MigrationRoleSupport.FakeWorker(in: tmp, mode: "crash")
        let broker = try BrokerProcess(arguments: ["--config", fake.config], dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try eventually(10, "the worker reported 42%") {
            try MigrationRoleSupport.store("Local", c)["state"]?.stringValue == "migrating"
                && c.status()["migration"]?["progress"]?["rowsDone"]?.int64Value == 42
        }
        XCTAssertThrowsError(try c.fetch("Session", limit: 1)) { error in
            let e = error as? ClientError
            XCTAssertEqual(e?.remoteName, "org.seam.Store.StoreUnavailable", "\(error)")
            XCTAssertTrue("\(error)".contains("42% done"), "\(error)")
        }
        XCTAssertThrowsError(try c.save([.insert(entity: "Session", values: ["name": .string("x")])])) { error in
            XCTAssertEqual((error as? ClientError)?.remoteName, "org.seam.Store.StoreUnavailable", "\(error)")
        }
        XCTAssertEqual(try c.count("Timer"), 200, "Cloud serves while Local migrates")
        let status = try Executables.run("seam", ["status", "--socket", broker.socketPath])
        XCTAssertTrue(status.stdout.contains("Local: migrating"), status.stdout)

        try fake.go()
        try eventually(10, "the worker's death is handled") { try c.status()["migration"]?["running"]?.boolValue == false }
        // Served at its old version, once its check at open has run.
        try eventually(10, "Local is served at its old version") { try MigrationRoleSupport.store("Local", c)["state"]?.stringValue == "outdated" }
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [], "the half-written copy is removed")
        XCTAssertEqual(try c.count("Session"), 200)
        let error = try c.status()["migration"]?["last"]?["error"]?.stringValue ?? ""
        XCTAssertTrue(error.contains("exited with status 3"), error)
        let printed = try Executables.run("seam", ["status", "--socket", broker.socketPath])
        XCTAssertTrue(printed.stdout.contains("the last migration failed"), printed.stdout)
        XCTAssertTrue(broker.log.contains("migration of Local failed"), broker.log)

        // Channels opened on the old version resume across the migration that follows: two on
        // one entity (each is rebuilt against the entity as migrated, none against the old).
        let subscriber = try RawClient(broker.socketPath)
        subscriber.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session","limit":1,"sort":"uuid"},"more":true}"#)
        let first = subscriber.readFrame() ?? ""
        XCTAssertTrue(first.contains(#""kind":"result""#), first)
        let resultSequence = try XCTUnwrap(try JSON.decode(Array(first.utf8))["parameters"]?["sequence"]?.int64Value)
        let another = try RawClient(broker.socketPath)
        another.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session","predicate":"stepIndex >= 0","limit":2,"sort":"-uuid"},"more":true}"#)
        XCTAssertTrue(another.readFrame()?.contains(#""kind":"result""#) == true)

        try fake.setMode("real")
        let retry = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
        XCTAssertEqual(retry.status, 0, retry.stderr)
        XCTAssertTrue(retry.stdout.hasPrefix("migrated Local in "), retry.stdout)
        XCTAssertTrue(retry.stderr.contains("Local copying") || retry.stderr.contains("Local verifying"), retry.stderr)
        for drawn in ["[#", "[.", "\r", "\u{1B}"] { XCTAssertFalse(retry.stderr.contains(drawn), "a bar in a pipe: \(retry.stderr)") }
        let resumed = subscriber.readFrame() ?? ""
        XCTAssertTrue(resumed.contains(#""kind":"resync""#) && resumed.contains(#""note":"""#) && resumed.contains(#""sound":"""#),
                      resumed)
        let resumedToo = another.readFrame() ?? ""
        XCTAssertTrue(resumedToo.contains(#""kind":"resync""#) && resumedToo.contains(#""sound":"""#), resumedToo)
        // The migration has a sequence number of its own: the resync stands at a new one, and a
        // subscriber from before that resumes from the old one gets a fresh result, not an empty
        // diff on rows of the old shape.
        let after = try XCTUnwrap(try JSON.decode(Array(resumed.utf8))["parameters"]?["sequence"]?.int64Value)
        XCTAssertGreaterThan(after, resultSequence)
        let late = try RawClient(broker.socketPath)
        late.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session","limit":1,"sort":"uuid","since":\#(resultSequence)},"more":true}"#)
        let lateReply = late.readFrame() ?? ""
        XCTAssertFalse(lateReply.contains(#""kind":"diff""#), lateReply)
        XCTAssertTrue(lateReply.contains(#""sound":"""#), lateReply)
        XCTAssertEqual(try MigrationRoleSupport.store("Local", c)["state"]?.stringValue, "open")
        XCTAssertEqual(try MigrationRoleSupport.uuids(in: data), before)
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
    }

    /// A store that does not open again after its swap (here the process has no file
    /// descriptor left for it: a preloaded library fails its open with EMFILE while the backup
    /// the swap made exists) stays closed, saying why, and seamd tries again, logging each
    /// failure, rather than leave it closed until it restarts. Once it opens, it serves at the
    /// current version, and a channel on it from before the migration resumes with a fresh
    /// result at a new sequence number, as after any migration.
    func testAStoreThatDoesNotOpenAfterItsSwapIsTriedAgainUntilItDoes() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try MigrationRoleSupport.writeOutdatedLocalFixture(rows: 20, to: data)
        let config = tmp.file("seamd.json")
        try Data(#"{"roles":{"ticker":{"enabled":false},"migrate":{"enabled":false}}}"#.utf8).write(to: URL(fileURLWithPath: config))
        // Armed from the swap on (backups/ is made for it), disarmed when the test removes it.
        let backup = data + "/backups"
        let faults = try FaultInjection.environment(["SEAM_FAIL_OPEN_SUFFIX": "/data/Local.sqlite"], armed: backup, in: tmp)
        let broker = try BrokerProcess(arguments: ["--config", config], dataDirectory: data, environment: faults)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let subscriber = try RawClient(broker.socketPath)
        subscriber.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session","limit":1,"sort":"uuid"},"more":true}"#)
        let first = subscriber.readFrame() ?? ""
        XCTAssertTrue(first.contains(#""kind":"result""#), first)
        let resultSequence = try XCTUnwrap(try JSON.decode(Array(first.utf8))["parameters"]?["sequence"]?.int64Value)

        // Migrated, and not open: `seam migrate` says so, and fails (it used to report success alone).
        let migrated = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
        XCTAssertEqual(migrated.status, 1, migrated.stderr)
        XCTAssertTrue(migrated.stdout.contains("migrated Local"), migrated.stdout)
        XCTAssertTrue(migrated.stderr.contains("Local is migrated but not open: it could not be opened again")
                      && migrated.stderr.contains("seamd tries again"), migrated.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: newestBackup(in: data, of: "Local")), "swapped")
        try eventually(10, "a second try failed too") { broker.log.contains("Local store did not open again (try 2)") }
        let local = try MigrationRoleSupport.store("Local", c)
        XCTAssertEqual(local["state"]?.stringValue, "closed", "\(local)")
        XCTAssertTrue(local["reason"]?.stringValue?.contains("seamd tries again") == true, "\(local)")
        XCTAssertThrowsError(try c.count("Session")) { error in
            XCTAssertEqual((error as? ClientError)?.remoteName, "org.seam.Store.StoreUnavailable", "\(error)")
        }
        XCTAssertEqual(try c.count("Timer"), 20, "Cloud serves")
        XCTAssertNil(subscriber.readFrame(timeout: 0.2), "the channel waits for its store")

        try FileManager.default.removeItem(atPath: backup)  // the open works again
        try eventually(10, "Local serves again") { try MigrationRoleSupport.store("Local", c)["state"]?.stringValue == "open" }
        let versions = try MigrationRoleSupport.store("Local", c)["versions"]?.arrayValue?.first
        XCTAssertEqual(versions?["version"]?.int64Value, Int64(TimerModel.history.current.version))
        XCTAssertEqual(try c.count("Session"), 20)
        XCTAssertTrue(broker.log.contains("Local store is open again, after"), broker.log)
        let resumed = subscriber.readFrame() ?? ""
        XCTAssertTrue(resumed.contains(#""kind":"resync""#) && resumed.contains(#""sound":"""#), resumed)
        let after = try XCTUnwrap(try JSON.decode(Array(resumed.utf8))["parameters"]?["sequence"]?.int64Value)
        XCTAssertGreaterThan(after, resultSequence)
        XCTAssertEqual(broker.stop(), 0)
    }

    /// A Cloud store of release 2 (its runs still in it) with no Local store beside it: the
    /// migration builds Local from Cloud's runs. When that migration fails, Local is not created
    /// empty meanwhile — the next migration would find it current and leave the runs behind —
    /// and the retry brings every run.
    func testAStoreWaitingToBeFilledIsNotCreatedWhenTheMigrationFails() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        let made = try Executables.run("seam-fixture", ["--version", "2", "--rows", "30", data])
        XCTAssertEqual(made.status, 0, made.stderr)
        try FileManager.default.removeItem(atPath: data + "/Local.sqlite")
        let before = try MigrationRoleSupport.uuids(in: data)
        XCTAssertEqual(before["Session"]?.count, 30, "thirty runs in Cloud")
        let fake = try MigrationRoleSupport.FakeWorker(in: tmp, mode: "crash")
        let broker = try BrokerProcess(arguments: ["--config", fake.config], dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try eventually(10, "the worker started") { try c.status()["migration"]?["running"]?.boolValue == true }
        try fake.go()
        try eventually(10, "the worker's death is handled") { try c.status()["migration"]?["running"]?.boolValue == false }
        XCTAssertFalse(FileManager.default.fileExists(atPath: data + "/Local.sqlite"), "Local waits, uncreated")
        let local = try MigrationRoleSupport.store("Local", c)
        XCTAssertTrue(local["reason"]?.stringValue?.contains("waiting") == true, "\(local)")

        try fake.setMode("real")
        let retry = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
        XCTAssertEqual(retry.status, 0, retry.stderr)
        XCTAssertEqual(try c.count("Session"), 30, "every run arrived")
        XCTAssertEqual(try MigrationRoleSupport.uuids(in: data)["Session"], before["Session"])
    }

    /// A release-2 directory (30 rows) whose migration's swap will stop part way: keeping the
    /// original of Local in backups/ fails (an I/O error on its link, injected while the file
    /// `obstacle` exists; seamd must be started with `faults`). `onlyLocal`: only Local is
    /// outdated (Timers v4 beside a current Cloud), so the swap names Local alone.
    func stopASwapPartWay(in data: String, tmp: TemporaryDirectory, onlyLocal: Bool = false) throws
        -> (before: [String: Set<String>], obstacle: String, faults: [String: String]) {
        if onlyLocal {
            try MigrationRoleSupport.writeOutdatedLocalFixture(rows: 30, to: data)
        } else {
            let made = try Executables.run("seam-fixture", ["--version", "2", "--rows", "30", data])
            XCTAssertEqual(made.status, 0, made.stderr)
        }
        let before = try MigrationRoleSupport.uuids(in: data)
        let obstacle = tmp.file("obstacle")
        try Data("x".utf8).write(to: URL(fileURLWithPath: obstacle))
        let faults = try FaultInjection.environment(["SEAM_FAIL_LINK_SUFFIX": "/Local.sqlite"], armed: obstacle, in: tmp)
        return (before, obstacle, faults)
    }

    /// `stopASwapPartWay`, and a seamd run until its migration's swap has stopped part way (its
    /// intent left); the obstacle still stands.
    func leaveASwapStoppedPartWay(in data: String, tmp: TemporaryDirectory, onlyLocal: Bool = false) throws
        -> (before: [String: Set<String>], obstacle: String, faults: [String: String]) {
        let stopped = try stopASwapPartWay(in: data, tmp: tmp, onlyLocal: onlyLocal)
        let broker = try BrokerProcess(dataDirectory: data, environment: stopped.faults)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(20, "the migration ended") { try c.status()["migration"]?["last"]?["error"]?.stringValue != nil }
        XCTAssertTrue(FileManager.default.fileExists(atPath: data + "/migration.intent"), "the swap stopped part way")
        XCTAssertEqual(broker.stop(), 0)
        return stopped
    }

    /// A swap that stops part way (here the original of Local cannot be linked into backups/:
    /// an I/O error) keeps the copies the swap still needs and serves neither
    /// half; the next start, the obstacle gone, finishes the swap, and every row is there.
    func testASwapThatStopsPartWayKeepsItsCopiesAndIsFinishedAtTheNextStart() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        let (before, obstacle, faults) = try stopASwapPartWay(in: data, tmp: tmp)
        var broker = try BrokerProcess(dataDirectory: data, environment: faults)
        var c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(20, "the migration ended") {
            try c.status()["migration"]?["last"]?["error"]?.stringValue != nil
        }
        let error = try c.status()["migration"]?["last"]?["error"]?.stringValue ?? ""
        XCTAssertTrue(error.contains("stopped part way"), error)
        XCTAssertTrue(FileManager.default.fileExists(atPath: data + "/migration.intent"), "the intent stays")
        XCTAssertTrue(FileManager.default.fileExists(atPath: data + "/.Local.sqlite.migrating"), "Local's copy is kept")
        for name in ["Cloud", "Local"] {
            XCTAssertNotEqual(try MigrationRoleSupport.store(name, c)["state"]?.stringValue, "open", "\(name) is not served half swapped")
        }
        XCTAssertEqual(broker.stop(), 0)

        try FileManager.default.removeItem(atPath: obstacle)
        broker = try BrokerProcess(dataDirectory: data, environment: faults)
        c = try SeamConnection.connect(path: broker.socketPath)
        for name in ["Cloud", "Local"] { XCTAssertEqual(try MigrationRoleSupport.store(name, c)["state"]?.stringValue, "open") }
        XCTAssertEqual(try c.count("Session"), 30, "every run arrived")
        XCTAssertEqual(try MigrationRoleSupport.uuids(in: data), before)
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
        XCTAssertEqual(broker.stop(), 0)
    }

    /// A swap that stopped part way and still cannot finish when seamd next starts (the
    /// obstacle stands) does not keep seamd from starting: the store it names (Local) stays
    /// closed, untouched, with a reason that says what to do — calls on it get StoreUnavailable
    /// with it, `seam status` shows it, the log has it as an error — while the other store
    /// (Cloud) serves and takes saves, and the ticker waits for Local rather than dying. Once the
    /// obstacle is gone, `seam migrate` finishes the swap and Local serves every row.
    func testASwapThatCannotFinishAtStartKeepsItsStoreClosedAndTheOtherServes() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        let (before, obstacle, faults) = try leaveASwapStoppedPartWay(in: data, tmp: tmp, onlyLocal: true)
        let original = try BadInputSupport.bytes(data + "/Local.sqlite")
        let copy = try BadInputSupport.bytes(data + "/.Local.sqlite.migrating")

        let config = tmp.file("seamd.json")
        try Data(#"{"roles":{"ticker":{"enabled":true}}}"#.utf8).write(to: URL(fileURLWithPath: config))
        let broker = try BrokerProcess(arguments: ["--config", config], dataDirectory: data, environment: faults)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        XCTAssertEqual(try c.count("Timer"), 30, "Cloud serves")
        XCTAssertNoThrow(try c.save([.insert(entity: "Timer", values: ["name": "Kettle", "steps": [["label": "Boil", "seconds": 60]]])]))
        XCTAssertThrowsError(try c.count("Session")) { error in
            XCTAssertEqual((error as? ClientError)?.remoteName, "org.seam.Store.StoreUnavailable", "\(error)")
            XCTAssertTrue("\(error)".contains("swap stopped part way") && "\(error)".contains("seam migrate"), "\(error)")
        }
        let local = try MigrationRoleSupport.store("Local", c)
        XCTAssertEqual(local["state"]?.stringValue, "closed", "\(local)")
        let shown = try Executables.run("seam", ["status", "--socket", broker.socketPath]).stdout
        XCTAssertTrue(shown.contains("Local: closed") && shown.contains("run `seam migrate`"), shown)
        XCTAssertTrue(broker.log.contains("error: Local store closed: a migration's swap stopped part way"), broker.log)
        XCTAssertTrue(broker.log.contains("still cannot finish"), "the migration at start says why it cannot run: \(broker.log)")
        try eventually(10, "the ticker was refused Local") { broker.log.contains("the subscription failed: org.seam.Store.StoreUnavailable") }
        // Refused again a second later (it tries again, less and less often), and running still.
        try eventually(10, "the ticker was refused Local twice") { broker.log.contains("trying again in 2 s") }
        let ticker = try c.status()["roles"]?.arrayValue?.first { $0["role"]?.stringValue == "ticker" }
        XCTAssertEqual(ticker?["state"]?.stringValue, "running", "\(String(describing: ticker))")
        XCTAssertEqual(ticker?["restarts"]?.int64Value, 0, "\(String(describing: ticker))")
        XCTAssertEqual(try BadInputSupport.bytes(data + "/Local.sqlite"), original, "the half-swapped store is untouched")
        XCTAssertEqual(try BadInputSupport.bytes(data + "/.Local.sqlite.migrating"), copy, "the copy the swap needs is kept")
        XCTAssertTrue(FileManager.default.fileExists(atPath: data + "/migration.intent"))

        try FileManager.default.removeItem(atPath: obstacle)
        let done = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
        XCTAssertEqual(done.status, 0, done.stderr)
        XCTAssertTrue(broker.log.contains("finished the swap of Local that had stopped part way"), broker.log)
        XCTAssertEqual(try MigrationRoleSupport.store("Local", c)["state"]?.stringValue, "open")
        XCTAssertEqual(try c.count("Session"), 30, "every run is there")
        XCTAssertEqual(try MigrationRoleSupport.uuids(in: data)["Session"], before["Session"])
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
        XCTAssertEqual(broker.stop(), 0)
    }

    /// The sync worker, started while the Cloud store is closed (here half swapped, with
    /// Local, by a migration whose swap cannot finish), waits for the store instead of exiting
    /// to be started again and again: it stays up, says what it waits for, and once `seam
    /// migrate` has finished the swap it goes on to the server (which cannot be reached here).
    func testTheSyncWorkerWaitsForACloudStoreClosedAtStart() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        let (_, obstacle, faults) = try leaveASwapStoppedPartWay(in: data, tmp: tmp)

        let config = tmp.file("config")
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try Data(#"{"roles":{"ticker":{"enabled":false}}}"#.utf8).write(to: URL(fileURLWithPath: config + "/seamd.json"))
        try Data(#"{"url":"postgresql://seam@127.0.0.1:1/seam"}"#.utf8).write(to: URL(fileURLWithPath: config + "/sync.json"))
        let broker = try BrokerProcess(arguments: ["--config", config + "/seamd.json"], dataDirectory: data, environment: faults)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        XCTAssertEqual(try MigrationRoleSupport.store("Cloud", c)["state"]?.stringValue, "closed")
        var firstTry: JSON?
        try eventually(10, "the worker waits for the Cloud store") {
            let status = try c.call("org.seam.Sync.Status")
            firstTry = status["nextTry"]
            return status["state"]?.stringValue == "waiting for the Cloud store" && firstTry?.doubleValue != nil
        }
        // Refused again, after its pause: still waiting, in the same process.
        try eventually(10, "the worker tried again") {
            let status = try c.call("org.seam.Sync.Status")
            return status["state"]?.stringValue == "waiting for the Cloud store" && status["nextTry"]?.doubleValue != nil && status["nextTry"] != firstTry
        }
        // And a person asking is told when.
        let shown = try Executables.run("seam", ["sync", "status"], environment: ["SEAM_SOCKET": broker.socketPath]).stdout
        XCTAssertTrue(shown.contains("waiting for the Cloud store") && shown.contains("trying again in"), shown)
        let worker = try c.status()["roles"]?.arrayValue?.first { $0["role"]?.stringValue == "sync" }
        XCTAssertEqual(worker?["state"]?.stringValue, "running", "\(String(describing: worker)): \(broker.log)")
        XCTAssertEqual(worker?["restarts"]?.int64Value, 0, "\(String(describing: worker)): \(broker.log)")

        try FileManager.default.removeItem(atPath: obstacle)
        let done = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
        XCTAssertEqual(done.status, 0, done.stderr)
        XCTAssertEqual(try MigrationRoleSupport.store("Cloud", c)["state"]?.stringValue, "open")
        _ = try c.call("org.seam.Sync.Now")  // rather than wait for its next look
        try eventually(10, "the worker goes on to the server") {
            try c.call("org.seam.Sync.Status")["lastError"]?.stringValue?.contains("cannot reach the server") == true
        }
        XCTAssertEqual(try c.status()["roles"]?.arrayValue?.first { $0["role"]?.stringValue == "sync" }?["restarts"]?.int64Value, 0)
        XCTAssertEqual(broker.stop(), 0)
    }

    /// Where the originals go (`backups`) is a file: the swap could not keep them, so it never
    /// begins. The copies go and both stores serve on at their old versions, with no intent
    /// left behind (before, both stayed closed, and seamd would not start again).
    func testASwapThatCannotKeepTheOriginalsNeverBegins() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        let made = try Executables.run("seam-fixture", ["--version", "5", "--rows", "10", data])
        XCTAssertEqual(made.status, 0, made.stderr)
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: data + "/backups"))
        let broker = try BrokerProcess(dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(20, "the migration ended") { try c.status()["migration"]?["last"]?["error"]?.stringValue != nil }
        let error = try c.status()["migration"]?["last"]?["error"]?.stringValue ?? ""
        XCTAssertTrue(error.contains("backups") && error.contains("Not a directory"), error)
        // Said as what it is: the copies were fine, the swap could not begin.
        XCTAssertTrue(error.hasPrefix("the verified copies could not be swapped in"), error)
        XCTAssertFalse(FileManager.default.fileExists(atPath: data + "/migration.intent"), "no swap began")
        for name in ["Cloud", "Local"] {
            XCTAssertEqual(try MigrationRoleSupport.store(name, c)["state"]?.stringValue, "outdated", "\(name) serves at its old version")
        }
        XCTAssertEqual(try c.count("Timer"), 10)
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
        XCTAssertEqual(broker.stop(), 0)
    }

    /// `seam migrate` after a swap stopped part way finishes that swap rather than building new
    /// copies over the ones it names (a crash during that build swapped half-built copies in at
    /// the next start). While the obstacle stands, it says the swap still cannot finish and
    /// starts no worker; once it is gone, the swap finishes and both stores serve, in service.
    func testMigrateAfterASwapStoppedPartWayFinishesThatSwap() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        let (before, obstacle, faults) = try stopASwapPartWay(in: data, tmp: tmp)
        let broker = try BrokerProcess(dataDirectory: data, environment: faults)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(20, "the migration ended") { try c.status()["migration"]?["last"]?["error"]?.stringValue != nil }
        let copy = try FileManager.default.attributesOfItem(atPath: data + "/.Local.sqlite.migrating")[.modificationDate] as? Date

        let blocked = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
        XCTAssertNotEqual(blocked.status, 0)
        XCTAssertTrue(blocked.stderr.contains("still cannot finish"), blocked.stderr)
        XCTAssertEqual(broker.log.components(separatedBy: "started migrate").count, 2, "one worker only: \(broker.log)")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: data + "/.Local.sqlite.migrating")[.modificationDate] as? Date,
                       copy, "the copy the intent names is untouched")

        try FileManager.default.removeItem(atPath: obstacle)
        let done = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
        XCTAssertEqual(done.status, 0, done.stderr)
        XCTAssertTrue(broker.log.contains("finished the swap of Cloud, Local that had stopped part way"), broker.log)
        for name in ["Cloud", "Local"] { XCTAssertEqual(try MigrationRoleSupport.store(name, c)["state"]?.stringValue, "open") }
        XCTAssertEqual(try c.count("Session"), 30, "every run arrived")
        XCTAssertEqual(try MigrationRoleSupport.uuids(in: data), before)
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
        XCTAssertEqual(broker.stop(), 0)
    }

    /// The ticker, started while Local is closed for a migration, is refused its subscription
    /// and tries again; once Local serves again (here at its old version: the worker died) it
    /// follows sessions, and a flash timer started then finishes on time. Start works on the old
    /// version too: the session copies its timer but for the sound, which Local cannot hold yet.
    func testTheTickerFollowsSessionsOnceTheMigratingStoreReturns() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try MigrationRoleSupport.writeOutdatedLocalFixture(rows: 10, to: data)
        let fake = try MigrationRoleSupport.FakeWorker(in: tmp, mode: "crash", ticker: true)
        let broker = try BrokerProcess(arguments: ["--config", fake.config], dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try eventually(10, "the ticker was refused while Local migrates") {
            broker.log.contains("the subscription failed: org.seam.Store.StoreUnavailable")
        }
        try fake.go()
        try eventually(10, "Local serves again") { try MigrationRoleSupport.store("Local", c)["state"]?.stringValue == "outdated" }
        let flash = try c.call("org.seam.Timers.Flash", ["seconds": 1])
        let session = try XCTUnwrap(flash["session"]?.stringValue)
        // The ticker tries again within a second of its refusal, then ends the 1 s step.
        try eventually(5, "the ticker finishes the flash on the old-version store") {
            try c.row("Session", uuid: session)?["state"]?.stringValue == "finished"
        }

        let timer = try c.save([.insert(entity: "Timer", values: ["name": "Kettle", "steps": [["label": "Boil", "seconds": 60]],
                                                                   "sound": "whistle"])]).inserted[0]
        let started = try XCTUnwrap(try c.call("org.seam.Timers.Start", ["timer": .string(timer)])["session"]?.stringValue)
        let row = try XCTUnwrap(try c.row("Session", uuid: started))
        XCTAssertEqual(row["name"]?.stringValue, "Kettle", "\(row)")
        XCTAssertNil(row["sound"], "a Session of Timers v4 has no sound: \(row)")
        XCTAssertEqual(try c.row("Timer", uuid: timer)?["sound"]?.stringValue, "whistle")
    }

    /// A stream resuming while its store is closed for a migration (seamd restarted, or the
    /// connection broke meanwhile) waits for the store, then resumes: it does not fail.
    func testAResumingSubscriptionWaitsForItsMigratingStore() async throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try MigrationRoleSupport.writeOutdatedLocalFixture(rows: 10, to: data)
        let fake = try MigrationRoleSupport.FakeWorker(in: tmp, mode: "crash")
        let broker = try BrokerProcess(arguments: ["--config", fake.config], dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try eventually(10, "Local is migrating") { try MigrationRoleSupport.store("Local", c)["state"]?.stringValue == "migrating" }
        // Through a relay that counts the broker's refusals.
        let refusals = Mutex(0)
        let proxy = try FrameProxy(upstream: broker.socketPath, in: tmp, drop: { frame in
            if frame.contains("org.seam.Store.StoreUnavailable") { refusals.withLock { $0 += 1 } }
            return false
        })
        defer { proxy.stop() }
        let subscriber = try SeamSubscriber.connect(path: proxy.socketPath)
        defer { subscriber.close() }
        var updates = subscriber.subscribe(LiveQuery("Session"), since: 1).makeAsyncIterator()
        try eventually(10, "refused, and tried again, at least once") { refusals.withLock { $0 } >= 2 }
        try fake.go()
        let next = try await updates.next()
        let first = try XCTUnwrap(next)
        XCTAssertTrue([.resync, .result].contains(first.kind), "\(first)")
        XCTAssertEqual(first.rows.count, try c.count("Session"))
        XCTAssertGreaterThan(first.rows.count, 0)
    }

    /// A Local store left at Timers v3 (its sessions are Runs) by a migration that failed is
    /// served as it is: its link rules are its own version's, so a timer can be deleted (the
    /// current version's rule, on a Session it does not have, refused every timer's delete). While
    /// it migrates, a delete whose rule would reach into it is refused, as before.
    func testAStoreServedAtAnOlderVersionUsesItsOwnLinkRules() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: TimerModel.history.current.version, rows: 5, to: data)
        let older = data + "-v3"
        try BadInputSupport.writeFixture(timersVersion: 3, rows: 5, to: older)
        try FileManager.default.removeItem(atPath: data + "/Local.sqlite")
        try FileManager.default.copyItem(atPath: older + "/Local.sqlite", toPath: data + "/Local.sqlite")
        let fake = try MigrationRoleSupport.FakeWorker(in: tmp, mode: "crash")
        let broker = try BrokerProcess(arguments: ["--config", fake.config], dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try eventually(10, "Local is migrating") { try MigrationRoleSupport.store("Local", c)["state"]?.stringValue == "migrating" }
        let timers = try c.fetch("Timer", limit: 2).compactMap { $0["uuid"]?.stringValue }
        XCTAssertEqual(timers.count, 2)
        XCTAssertThrowsError(try c.save([.delete(entity: "Timer", uuid: timers[0])])) { error in
            XCTAssertEqual((error as? ClientError)?.remoteName, "org.seam.Store.StoreUnavailable", "\(error)")
        }
        try fake.go()
        try eventually(10, "Local serves again, at v3") { try MigrationRoleSupport.store("Local", c)["state"]?.stringValue == "outdated" }
        XCTAssertNoThrow(try c.save([.delete(entity: "Timer", uuid: timers[0])]))
        XCTAssertNil(try c.row("Timer", uuid: timers[0]))
    }

    /// A worker that hands over a copy that does not verify (here: the original itself, at the
    /// old version) is refused: Finished fails with MigrationFailed, nothing is swapped, the
    /// copy is removed, the original serves at its old version, byte for byte as it was.
    func testACopyThatFailsVerificationIsNeverSwappedIn() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try MigrationRoleSupport.writeOutdatedLocalFixture(rows: 100, to: data)
        let original = try BadInputSupport.bytes(data + "/Local.sqlite")
        let fake = try MigrationRoleSupport.FakeWorker(in: tmp, mode: "stale-copy")
        let broker = try BrokerProcess(arguments: ["--config", fake.config], dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(10, "the migration ends") {
            try c.status()["migration"]?["last"] != nil && c.status()["migration"]?["running"]?.boolValue == false
        }
        let error = try c.status()["migration"]?["last"]?["error"]?.stringValue ?? ""
        XCTAssertTrue(error.contains("refused") && error.contains("verif"), error)
        // seamd counts the migration ended as it replies; the worker writes down the reply after.
        try eventually(10, "the worker has written down Finished's reply") { try !fake.output().isEmpty }
        let output = try fake.output()
        XCTAssertTrue(output.contains("org.seam.Migration.MigrationFailed"), output)
        XCTAssertEqual(try MigrationRoleSupport.store("Local", c)["state"]?.stringValue, "outdated")
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: newestBackup(in: data, of: "Local")), "nothing was swapped")
        XCTAssertEqual(try c.count("Session"), 100)
        broker.stop()
        XCTAssertEqual(try BadInputSupport.bytes(data + "/Local.sqlite"), original)
    }

    /// A store written by a newer build is never touched: seamd keeps it closed, says which
    /// version it holds, serves the other store, and plans no migration of it.
    func testAStoreFromANewerBuildStaysClosedAndTheOtherServes() throws {
        let tmp = TemporaryDirectory("seam-role")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: TimerModel.history.current.version, rows: 20, to: data)
        try BadInputSupport.rewriteModelRecord("Timers", in: data + "/Cloud.sqlite", version: 99,
                                       configurationHash: String(repeating: "0f", count: 32))
        let cloud = try BadInputSupport.bytes(data + "/Cloud.sqlite")
        let broker = try BrokerProcess(dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        XCTAssertEqual(try c.count("Session"), 20, "Local serves")
        XCTAssertThrowsError(try c.count("Timer")) { error in
            XCTAssertEqual((error as? ClientError)?.remoteName, "org.seam.Store.StoreUnavailable", "\(error)")
            XCTAssertTrue("\(error)".contains("newer build (Timers v99)"), "\(error)")
        }
        let store = try MigrationRoleSupport.store("Cloud", c)
        XCTAssertEqual(store["state"]?.stringValue, "closed")
        let plan = try Executables.run("seam", ["migrate", "--dry-run", "--socket", broker.socketPath])
        XCTAssertTrue(plan.stdout.contains("Nothing to migrate"), plan.stdout + plan.stderr)
        XCTAssertTrue(broker.log.contains("Cloud store closed: written by a newer build"), broker.log)
        broker.stop()
        XCTAssertEqual(try BadInputSupport.bytes(data + "/Cloud.sqlite"), cloud, "untouched")
    }

    /// A full disk during the copy (a 1 MiB-short tmpfs; root only) fails the migration
    /// cleanly: the original serves at its old version and no partial copy is left.
    func testAFullDiskLeavesTheOriginalInService() throws {
        let tmp = TemporaryDirectory("seam-role")
        let source = tmp.file("source")
        try MigrationRoleSupport.writeOutdatedLocalFixture(rows: 3000, to: source)
        let sizes = ["Cloud.sqlite", "Local.sqlite"].map { (try? FileManager.default.attributesOfItem(atPath: source + "/" + $0)[.size] as? Int) ?? 0 }
        let mountPoint = tmp.file("small")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        // Room for both stores and half a copy of Local.
        let size = (sizes[0] + sizes[1] + sizes[1] / 2) / 4096 * 4096 + 64 * 1024
        let mounted = try Executables.runTool("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint])
        guard mounted.status == 0 else { throw XCTSkip("cannot mount a small tmpfs here (not root?): \(mounted.stderr)") }
        defer { _ = try? Executables.runTool("/usr/bin/umount", ["-l", mountPoint]) }
        let data = mountPoint + "/data"
        try FileManager.default.copyItem(atPath: source, toPath: data)
        let broker = try BrokerProcess(dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(20, "the migration ends") {
            try c.status()["migration"]?["last"] != nil && c.status()["migration"]?["running"]?.boolValue == false
        }
        let error = try c.status()["migration"]?["last"]?["error"]?.stringValue ?? ""
        XCTAssertTrue(error.lowercased().contains("space") || error.lowercased().contains("full"), error)
        XCTAssertEqual(try MigrationRoleSupport.store("Local", c)["state"]?.stringValue, "outdated")
        XCTAssertEqual(MigrationRoleSupport.temporaries(in: data), [])
        XCTAssertEqual(try c.count("Session"), 3000)
        broker.stop()
    }
}

/// What the migration role tests share.
enum MigrationRoleSupport {
    /// Stores where only Local is outdated: Cloud as the newest release wrote it, Local as
    /// Timers v4 wrote it (same rows and seed, so sessions still link to the timers). No release
    /// left such a pair since version 6 changed both files, but it is what a test needs where
    /// one store serves while the other migrates (and what the fake worker pretends to copy).
    static func writeOutdatedLocalFixture(rows: Int, to directory: String) throws {
        try BadInputSupport.writeFixture(timersVersion: TimerModel.history.current.version, rows: rows, to: directory)
        let older = directory + "-v4"
        try BadInputSupport.writeFixture(timersVersion: 4, rows: rows, to: older)
        try FileManager.default.removeItem(atPath: directory + "/Local.sqlite")
        try FileManager.default.copyItem(atPath: older + "/Local.sqlite", toPath: directory + "/Local.sqlite")
        try FileManager.default.removeItem(atPath: older)
    }

    /// One store's entry in `Status`.
    /// Store `name` as Status reports it, once its check at open (which runs each time it opens
    /// again) has ended: "checking" is the state for those few milliseconds.
    static func store(_ name: String, _ c: SeamConnection) throws -> JSON {
        let deadline = Date().addingTimeInterval(10)
        while true {
            let store = try XCTUnwrap(c.status()["stores"]?.arrayValue?.first { $0["name"]?.stringValue == name })
            if store["state"]?.stringValue != "checking" || Date() > deadline { return store }
            usleep(10_000)
        }
    }

    /// Leftovers of a migration in a store directory: copies, their companions, a swap intent.
    static func temporaries(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.contains(".migrating") || $0.hasPrefix("migration.intent") }.sorted()
    }

    /// Every row's uuid, by the entity it is (or becomes: Run → Session) at the current version.
    static func uuids(in directory: String) throws -> [String: Set<String>] {
        var out: [String: Set<String>] = [:]
        for file in ["Cloud.sqlite", "Local.sqlite"] where FileManager.default.fileExists(atPath: directory + "/" + file) {
            var o = Database.Options()
            o.readOnly = true
            let db = try Database(path: directory + "/" + file, options: o)
            let tables = try db.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'seam\\_%' ESCAPE '\\' "
                                     + "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").compactMap { $0.first?.stringValue }
            for table in tables {
                let name = ["Run": "Session", "Folder": "UserGroup"][table] ?? table
                for row in try db.rows("SELECT uuid FROM \"\(table)\"", types: [.string]) {
                    if let u = row.first?.stringValue { out[name, default: []].insert(u) }
                }
            }
            db.close()
        }
        return out
    }

    /// A stand-in for seam-migrate, configured as the migrate role's command: a Python program
    /// that speaks the protocol on fd 3 as seamd's worker, and misbehaves as its mode says —
    /// "crash" (report 42%, leave half a copy, exit 3 when told), "stale-copy" (hand over the
    /// original as the copy), or "real" (run the real seam-migrate).
    struct FakeWorker {
        let config: String
        let modeFile: String
        let goFile: String
        let outputFile: String

        init(in tmp: TemporaryDirectory, mode: String, ticker: Bool = false) throws {
            let script = tmp.file("fake-worker.py")
            modeFile = tmp.file("fake-mode")
            goFile = tmp.file("fake-go")
            outputFile = tmp.file("fake-output")
            config = tmp.file("seamd.json")
            try Data(Self.program.utf8).write(to: URL(fileURLWithPath: script))
            try Data(mode.utf8).write(to: URL(fileURLWithPath: modeFile))
            let json: JSON = ["roles": ["ticker": ["enabled": .bool(ticker)],
                                        "migrate": ["command": .array([.string("python3"), .string(script)]),
                                                    "environment": ["FAKE_MODE": .string(modeFile), "FAKE_GO": .string(goFile),
                                                                    "FAKE_OUTPUT": .string(outputFile),
                                                                    "SEAM_MIGRATE": .string(Executables.path("seam-migrate"))]]]]
            try Data(json.encoded()).write(to: URL(fileURLWithPath: config))
        }

        func go() throws { try Data().write(to: URL(fileURLWithPath: goFile)) }
        func setMode(_ mode: String) throws { try Data(mode.utf8).write(to: URL(fileURLWithPath: modeFile)) }
        func output() throws -> String { (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? "" }

        static let program = #"""
            import json, os, shutil, socket, sys, time
            args = sys.argv[1:]
            mode = open(os.environ["FAKE_MODE"]).read().strip()
            if mode == "real":
                os.execv(os.environ["SEAM_MIGRATE"], ["seam-migrate"] + args)
            directory = args[-1]
            broker = socket.socket(fileno=int(os.environ["SEAM_FD"]))
            def call(method, parameters):
                broker.sendall(json.dumps({"method": method, "parameters": parameters}).encode() + b"\0")
                reply = b""
                while not reply.endswith(b"\0"):
                    chunk = broker.recv(65536)
                    if not chunk:
                        sys.exit("seamd closed the connection")
                    reply += chunk
                return json.loads(reply[:-1])
            call("org.seam.Migration.Report", {"phase": "copying", "store": "Local", "entity": "Session", "rowsDone": 42,
                                               "rowsTotal": 100, "bytesWritten": 0, "bytesTotal": 0})
            copy = os.path.join(directory, ".Local.sqlite.migrating")
            if mode == "stale-copy":
                shutil.copyfile(os.path.join(directory, "Local.sqlite"), copy)
                reply = call("org.seam.Migration.Finished", {})
                with open(os.environ["FAKE_OUTPUT"] + ".part", "w") as f:
                    f.write(json.dumps(reply))
                os.replace(os.environ["FAKE_OUTPUT"] + ".part", os.environ["FAKE_OUTPUT"])  # whole or not at all
                sys.exit(0)
            with open(copy, "wb") as f:
                f.write(b"SQLite format 3\0" + b"half a copy" * 100)
            while not os.path.exists(os.environ["FAKE_GO"]):
                time.sleep(0.02)
            print("dying on purpose", flush=True)
            os._exit(3)
            """#
    }
}
