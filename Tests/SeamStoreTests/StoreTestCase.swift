import Foundation
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// Shared helpers for store tests: fixtures, row dumps, file snapshots.
class StoreTestCase: XCTestCase {
    var temp: TemporaryDirectory!

    override func setUp() {
        super.setUp()
        temp = TemporaryDirectory("seam-store")
    }

    override func tearDown() {
        temp = nil
        super.tearDown()
    }

    /// Writes the timer app's stores as release `release` (1-based) wrote them.
    func fixture(release: Int, rows: Int, in name: String, seed: UInt64 = 7) throws -> String {
        let r = TimerApp.releases[release - 1]
        let dir = temp.file(name)
        try FixtureWriter(schema: TimerApp.schema, versions: [TimerModel.name: r.timers, SyncMetadataModel.name: r.syncMetadata],
                          rowsPerEntity: rows, seed: seed).write(to: dir)
        return dir
    }

    /// A directory whose Cloud file is as release `cloud` wrote it and whose Local file is as
    /// release `local` wrote it (same rows and seed, so links between the files still match):
    /// the one way to have a single file outdated now that every release changes both.
    func mixedFixture(cloud: Int, local: Int, rows: Int, in name: String, seed: UInt64 = 7) throws -> String {
        let dir = try fixture(release: cloud, rows: rows, in: name, seed: seed)
        let other = try fixture(release: local, rows: rows, in: name + "-local", seed: seed)
        try FileManager.default.removeItem(atPath: dir + "/Local.sqlite")
        try FileManager.default.copyItem(atPath: other + "/Local.sqlite", toPath: dir + "/Local.sqlite")
        try FileManager.default.removeItem(atPath: other)
        return dir
    }

    func open(_ path: String) throws -> Database {
        var o = Database.Options()
        o.readOnly = true
        return try Database(path: path, options: o)
    }

    /// Every row of `table`, as text, sorted: for comparing data across stores.
    func dump(_ path: String, _ table: String, columns: [String]? = nil) throws -> [String] {
        let db = try open(path)
        let cols = columns.map { $0.map(SchemaSQL.quote).joined(separator: ", ") } ?? "*"
        return try db.rows("SELECT \(cols) FROM \(SchemaSQL.quote(table)) ORDER BY uuid").map { row in
            row.map { "\($0)" }.joined(separator: "|")
        }
    }

    func count(_ path: String, _ table: String) throws -> Int {
        Int(try open(path).scalar("SELECT count(*) FROM \(SchemaSQL.quote(table))").integerValue ?? -1)
    }

    func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// Files in `dir` whose names show an unfinished migration.
    func leftovers(_ dir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains(".migrating") || $0.hasPrefix("migration.intent") }
    }

    /// Migrates `dir` and checks it against a fresh store: tables, indexes, metadata, row counts.
    func migrateAndCompare(_ dir: String, file: StaticString = #filePath, line: UInt = #line) throws -> MigrationReport {
        let fresh = temp.file("fresh-\(UUID().uuidString.prefix(6))")
        let freshStores = try StoreDirectory(path: fresh, schema: TimerApp.schema).open()
        var last = 0
        let report = try StoreDirectory(path: dir, schema: TimerApp.schema).migrate { p in
            XCTAssertGreaterThanOrEqual(p.rowsDone, last, "progress never goes back", file: file, line: line)
            last = p.rowsDone
        }
        for configuration in ["Cloud", "Local"] {
            let migrated = try open(dir + "/\(configuration).sqlite")
            XCTAssertEqual(try migrated.userSchema(), try freshStores[configuration]!.userSchema(),
                           "\(configuration): tables and indexes as a fresh store's", file: file, line: line)
            let a = try XCTUnwrap(StoreMetadata.read(from: migrated))
            let b = try XCTUnwrap(StoreMetadata.read(from: freshStores[configuration]!))
            // Shapes must agree; a file whose shape never changed keeps the label of the version that wrote it.
            func shapes(_ m: StoreMetadata) -> [String] {
                m.models.sorted { $0.model < $1.model }.map { "\($0.model) \($0.configurationHash) \($0.entityHashes.sorted { $0.key < $1.key })" }
            }
            XCTAssertEqual(shapes(a), shapes(b), "\(configuration): hashes as a fresh store's", file: file, line: line)
            XCTAssertEqual(try migrated.scalar("PRAGMA journal_mode"), .string("wal"), file: file, line: line)
        }
        XCTAssertEqual(try StoreDirectory(path: dir, schema: TimerApp.schema).inspect().map(\.state), [.current, .current])
        XCTAssertEqual(try leftovers(dir), [], "no temporary file remains", file: file, line: line)
        return report
    }

}
