import Foundation
import SeamClient
import SeamJSON
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// What a store file holds that is not Seam's — a person's table, index, trigger or view — is
/// carried through every migration, offline and through seamd, or the migration is refused
/// before it copies anything, naming the object. And every migration keeps its own generation
/// of backups.
final class ForeignObjectTests: XCTestCase {
    /// One object of each kind: a table with rows, and an index, a trigger and a view on it in
    /// both files; and on the model's own Timer table (whose `colour` every release has) an
    /// index, a trigger and a view.
    static let cloudObjects = """
        CREATE TABLE MyNotes(x TEXT, y INTEGER);
        INSERT INTO MyNotes VALUES ('keep me', 1), ('and me', 2);
        CREATE INDEX MyNotes_y ON MyNotes(y);
        CREATE TRIGGER MyNotes_stamp AFTER INSERT ON MyNotes BEGIN UPDATE MyNotes SET y = y + 100 WHERE rowid = new.rowid; END;
        CREATE VIEW MyNotesView AS SELECT x FROM MyNotes WHERE y > 0;
        CREATE INDEX MyTimerColours ON Timer(colour);
        CREATE VIEW MyTimerView AS SELECT uuid, colour FROM Timer;
        CREATE TRIGGER MyTimerWatch AFTER UPDATE OF colour ON Timer BEGIN INSERT INTO MyNotes VALUES ('colour', 0); END;
        """
    static let cloudNames: Set<String> = ["MyNotes", "MyNotes_y", "MyNotes_stamp", "MyNotesView", "MyTimerColours", "MyTimerView",
                                          "MyTimerWatch"]
    static let localObjects = """
        CREATE TABLE LocalNotes(x TEXT);
        INSERT INTO LocalNotes VALUES ('local');
        CREATE INDEX LocalNotes_x ON LocalNotes(x);
        CREATE VIEW LocalNotesView AS SELECT x FROM LocalNotes;
        """
    static let localNames: Set<String> = ["LocalNotes", "LocalNotes_x", "LocalNotesView"]

    static func addObjects(to directory: String) throws {
        for (file, sql) in [("Cloud", cloudObjects), ("Local", localObjects)] {
            let db = try Database(path: directory + "/\(file).sqlite")
            try db.execute(sql)
            db.close()
        }
    }

    /// The objects are all in the migrated files, with their rows, and they still work.
    static func assertCarried(_ directory: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
        for (name, expected, rows) in [("Cloud", cloudNames, 2), ("Local", localNames, 1)] {
            let db = try Database(path: directory + "/\(name).sqlite")
            defer { db.close() }
            let names = Set(try db.rows("SELECT name FROM sqlite_schema").compactMap { $0.first?.stringValue })
            XCTAssertTrue(expected.isSubset(of: names), "\(context): \(name) lacks \(expected.subtracting(names))", file: file, line: line)
            let table = name == "Cloud" ? "MyNotes" : "LocalNotes"
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM \(table)").integerValue, Int64(rows), context, file: file, line: line)
            XCTAssertEqual(try db.scalar("PRAGMA integrity_check").stringValue, "ok", context, file: file, line: line)
        }
        // The trigger on a model table still fires, into the table that is not Seam's.
        let cloud = try Database(path: directory + "/Cloud.sqlite")
        defer { cloud.close() }
        try cloud.execute("UPDATE Timer SET colour = 'teal' WHERE uuid = (SELECT min(uuid) FROM Timer)")
        XCTAssertEqual(try cloud.scalar("SELECT count(*) FROM MyNotes WHERE x = 'colour'").integerValue, 1, context, file: file, line: line)
        XCTAssertEqual(try cloud.scalar("SELECT count(*) FROM MyTimerView").integerValue,
                       try cloud.scalar("SELECT count(*) FROM Timer").integerValue, context, file: file, line: line)
    }

    /// The objects a dry run of version `version`'s files names: those of each file the plan
    /// changes (a file whose shape is the current one's, as Local from version 6 to 7, is not).
    static func named(byThePlanOf version: Int) -> Set<String> {
        let old = TimerModel.history.version(version)?.hashes.configurations, now = TimerModel.history.current.hashes.configurations
        return (old?["Cloud"] == now["Cloud"] ? [] : cloudNames).union(old?["Local"] == now["Local"] ? [] : localNames)
    }

    /// Every release's files, with one object of each kind added, migrate offline with every
    /// object kept; the dry run lists each first.
    func testEveryReleaseKeepsWhatIsNotSeamsOffline() throws {
        for version in 1..<TimerModel.history.current.version {
            let tmp = TemporaryDirectory("seam-foreign-\(version)")
            let data = tmp.file("data")
            try BadInputSupport.writeFixture(timersVersion: version, rows: 40, to: data)
            try Self.addObjects(to: data)
            let dry = try Executables.run("seam-migrate", ["--dry-run", data])
            XCTAssertEqual(dry.status, 0, dry.stderr)
            for name in Self.named(byThePlanOf: version) {
                XCTAssertTrue(dry.stdout.contains(" \(name)"), "v\(version): the dry run does not name \(name):\n\(dry.stdout)")
            }
            XCTAssertTrue(dry.stdout.contains("table MyNotes (2 rows)"), dry.stdout)
            let run = try Executables.run("seam-migrate", [data])
            XCTAssertEqual(run.status, 0, "v\(version): \(run.stderr)")
            try Self.assertCarried(data, "v\(version) offline")
            let classifications = try StoreDirectory(path: data, schema: TimerApp.schema).inspect()
            XCTAssertEqual(classifications.map(\.state), [.current, .current], "v\(version)")
        }
    }

    /// The same through seamd's worker (`seam migrate`): `seam migrate --dry-run` names each
    /// object, and after the run every one is there.
    func testEveryReleaseKeepsWhatIsNotSeamsThroughSeamd() throws {
        for version in 1..<TimerModel.history.current.version {
            let tmp = TemporaryDirectory("seam-foreign-d\(version)")
            let data = tmp.file("data")
            try BadInputSupport.writeFixture(timersVersion: version, rows: 40, to: data)
            try Self.addObjects(to: data)
            let config = tmp.file("seamd.json")
            try Data(#"{"roles":{"ticker":{"enabled":false},"migrate":{"enabled":false}}}"#.utf8).write(to: URL(fileURLWithPath: config))
            let broker = try BrokerProcess(arguments: ["--config", config], dataDirectory: data)
            let dry = try Executables.run("seam", ["migrate", "--dry-run", "--socket", broker.socketPath])
            XCTAssertEqual(dry.status, 0, dry.stderr)
            for name in Self.named(byThePlanOf: version) {
                XCTAssertTrue(dry.stdout.contains(" \(name)"), "v\(version): seam migrate --dry-run does not name \(name):\n\(dry.stdout)")
            }
            let run = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
            XCTAssertEqual(run.status, 0, "v\(version): \(run.stderr)\n\(broker.log)")
            XCTAssertEqual(broker.stop(), 0)
            try Self.assertCarried(data, "v\(version) through seamd")
        }
    }

    /// An index on a column the new version no longer has cannot be carried: the migration is
    /// refused before any copy is made, naming the index and what to do; the files stay as
    /// they were, byte for byte. Through seamd, the same plan is refused with the same words,
    /// and seamd does not say a retry will help.
    func testAnObjectThatCannotBeCarriedIsRefusedBeforeAnyCopy() throws {
        let tmp = TemporaryDirectory("seam-foreign-refused")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: 1, rows: 40, to: data)
        let db = try Database(path: data + "/Cloud.sqlite")
        try db.execute("CREATE INDEX TimerTitles ON Timer(title)")  // v2 renamed title to name
        db.close()
        let before = try BadInputSupport.snapshot(data)
        do {
            _ = try StoreDirectory(path: data, schema: TimerApp.schema).migrate()
            XCTFail("the migration should be refused")
        } catch {
            guard case .cannotCarry(let object, let detail) = error.kind else { return XCTFail("\(error)") }
            XCTAssertEqual(object.name, "TimerTitles")
            XCTAssertTrue(detail.contains("title"), detail)
            XCTAssertTrue(error.description.contains(#"DROP INDEX "TimerTitles""#) && error.description.contains("nothing was copied"),
                          error.description)
        }
        try BadInputSupport.assertUnchanged(data, since: before)
        XCTAssertEqual(BadInputSupport.leftovers(in: data), [])
        let dry = try Executables.run("seam-migrate", ["--dry-run", data])
        XCTAssertEqual(dry.status, 1)
        XCTAssertTrue(dry.stderr.contains("index TimerTitles on Timer"), dry.stderr)

        let config = tmp.file("seamd.json")
        try Data(#"{"roles":{"ticker":{"enabled":false}}}"#.utf8).write(to: URL(fileURLWithPath: config))
        let broker = try BrokerProcess(arguments: ["--config", config], dataDirectory: data)
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(10, "the migration at start was refused") { broker.log.contains("TimerTitles") }
        XCTAssertFalse(broker.log.contains("tries again"), broker.log)
        let run = try Executables.run("seam", ["migrate", "--socket", broker.socketPath])
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("index TimerTitles on Timer") && run.stderr.contains("DROP INDEX"), run.stderr)
        XCTAssertEqual(try c.count("Timer"), 40, "Cloud serves at its old version")
        XCTAssertEqual(broker.stop(), 0)
    }

    /// Each migration keeps the files it replaced in a generation of its own, named by time and
    /// the versions they held; a second migration does not overwrite the first's.
    func testEveryMigrationKeepsAGenerationOfItsOwn() throws {
        let tmp = TemporaryDirectory("seam-generations")
        let data = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: 2, rows: 10, to: data)
        let original = try BadInputSupport.bytes(data + "/Cloud.sqlite")
        _ = try StoreDirectory(path: data, schema: TimerApp.schema).migrate()
        let layout = StoreLayout(directory: data)
        var generations = Backups.list(layout)
        XCTAssertEqual(generations.count, 1)
        let first = try XCTUnwrap(generations.first)
        XCTAssertEqual(first.reason, "migration")
        XCTAssertEqual(first.versions[TimerModel.name], 2)
        XCTAssertTrue(first.name.contains("migration-") && first.name.contains("Timers-v2"), first.name)
        XCTAssertEqual(Set(first.stores), ["Cloud", "Local"])
        XCTAssertEqual(try BadInputSupport.bytes(first.file("Cloud")), original)

        // Put release 2's files back and migrate again: a second generation, the first intact.
        for name in ["Cloud", "Local"] {
            try StoreLayout.removeDatabase(layout.store(name))
            try BadInputSupport.copy(first.file(name), to: layout.store(name))
        }
        _ = try StoreDirectory(path: data, schema: TimerApp.schema).migrate()
        generations = Backups.list(layout)
        XCTAssertEqual(generations.count, 2, generations.map(\.name).joined(separator: ", "))
        XCTAssertEqual(try BadInputSupport.bytes(generations[0].file("Cloud")), original)
        XCTAssertNotEqual(generations[0].name, generations[1].name)
    }

    /// The bound seamd.json sets prunes the oldest generations only, and the log says which; a
    /// bad bound is a configuration problem, not a reason to prune.
    func testSeamdPrunesTheOldestGenerationsPastItsBound() throws {
        let tmp = TemporaryDirectory("seam-prune")
        let data = tmp.file("data")
        let layout = StoreLayout(directory: data)
        for (i, day) in ["20260101", "20260201", "20260301"].enumerated() {
            let g = tmp.file("data/backups/\(day)-000000-migration-Timers-v\(i + 1)")
            try FileManager.default.createDirectory(atPath: g, withIntermediateDirectories: true)
            try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: g + "/Cloud.sqlite"))
            try Data(#"{"createdAt":\#(1_767_225_600 + i * 2_678_400),"format":1,"reason":"migration","stores":["Cloud"],"versions":{"Timers":\#(i + 1)}}"#.utf8)
                .write(to: URL(fileURLWithPath: g + "/backup.json"))
        }
        XCTAssertEqual(Backups.list(layout).map { $0.versions["Timers"] }, [1, 2, 3])
        let config = tmp.file("seamd.json")
        try Data(#"{"roles":{"ticker":{"enabled":false}},"backups":{"keep":2}}"#.utf8).write(to: URL(fileURLWithPath: config))
        let broker = try BrokerProcess(arguments: ["--config", config], dataDirectory: data)
        try eventually(10, "the oldest generation is pruned") { Backups.list(layout).count == 2 }
        XCTAssertEqual(Backups.list(layout).map { $0.versions["Timers"] }, [2, 3])
        XCTAssertTrue(broker.log.contains("removed the backup 20260101-000000-migration-Timers-v1"), broker.log)
        let info = try Executables.run("seam", ["store", "info", "--socket", broker.socketPath])
        XCTAssertTrue(info.stdout.contains("20260201-000000-migration-Timers-v2: migration at 2026-02-01"), info.stdout)
        XCTAssertEqual(broker.stop(), 0)

        try Data(#"{"roles":{"ticker":{"enabled":false}},"backups":{"keep":0,"bytes":5}}"#.utf8).write(to: URL(fileURLWithPath: config))
        let again = try BrokerProcess(arguments: ["--config", config], dataDirectory: data)
        let problems = try SeamConnection.connect(path: again.socketPath).status()["configurationProblems"]?.arrayValue ?? []
        XCTAssertTrue(problems.contains { $0.stringValue?.contains("backups.keep") == true }, "\(problems)")
        XCTAssertTrue(problems.contains { $0.stringValue?.contains("backups.bytes") == true }, "\(problems)")
        XCTAssertEqual(Backups.list(layout).count, 2, "nothing pruned by a bound that is not one")
        XCTAssertEqual(again.stop(), 0)
    }

    func testPruningKeepsTheNewestAndGoesOldestFirst() {
        func g(_ name: String, _ t: Double, _ bytes: Int64) -> BackupGeneration {
            BackupGeneration(name: name, path: "/b/" + name, reason: "migration", createdAt: t, stores: ["Cloud"], versions: [:], bytes: bytes)
        }
        let all = [g("c", 3, 100), g("a", 1, 100), g("b", 2, 100)]
        XCTAssertEqual(Backups.toPrune(all, bound: .init(keep: 2)).map(\.name), ["a"])
        XCTAssertEqual(Backups.toPrune(all, bound: .init(maxBytes: 150)).map(\.name), ["a", "b"])
        XCTAssertEqual(Backups.toPrune(all, bound: .init(maxBytes: 0)).map(\.name), ["a", "b"], "the newest is always kept")
        XCTAssertEqual(Backups.toPrune(all, bound: .init()).map(\.name), [])
    }
}
