import Foundation
import SeamSchema
import SeamStore
import SeamSystem
import SeamTestSupport
import SeamTimers
import XCTest

/// A disk that fills during a migration, on a real small tmpfs: the migration fails with a
/// `StoreError` that says the disk is full, the originals stay byte-identical, no copy or intent
/// is left to take up the little space there is, and once space is freed the same directory
/// migrates with every row.
///
/// Needs root (to mount); skipped with the reason otherwise.
final class DiskFullTests: XCTestCase {
    private typealias Support = BadInputSupport

    /// Rows per entity: enough that the copies are hundreds of KiB, so the sizing has slack.
    private static let rows = 3000

    /// A version-2 fixture on the ordinary disk, with the sizes its migrated files turn out to have.
    private struct Prepared {
        let directory: TemporaryDirectory
        var original: String { directory.file("original") }
        /// Bytes of `Cloud.sqlite` plus `Local.sqlite` as the old release wrote them.
        let originalBytes: Int
        /// Bytes of the migrated `Cloud.sqlite` and `Local.sqlite` (the copies a migration writes).
        let cloudCopyBytes: Int
        let localCopyBytes: Int
        /// Entity → uuids of the original.
        let uuids: [String: Set<String>]
        let files: [String: Data]
    }

    private func prepare() throws -> Prepared {
        let directory = TemporaryDirectory("seam-diskfull-src")
        let original = directory.file("original")
        let reference = directory.file("reference")
        try Support.writeFixture(timersVersion: 2, rows: Self.rows, to: original)
        var files: [String: Data] = [:]
        for name in ["Cloud.sqlite", "Local.sqlite"] { files[name] = try Support.bytes(original + "/" + name) }
        try FileManager.default.createDirectory(atPath: reference, withIntermediateDirectories: true)
        for name in files.keys { try Support.copy(original + "/" + name, to: reference + "/" + name) }
        _ = try StoreDirectory(path: reference, schema: TimerApp.schema).migrate()
        return Prepared(
            directory: directory, originalBytes: files.values.reduce(0) { $0 + $1.count },
            cloudCopyBytes: try Support.bytes(reference + "/Cloud.sqlite").count,
            localCopyBytes: try Support.bytes(reference + "/Local.sqlite").count,
            uuids: try Support.uuidsByEntity(timersVersion: 2, in: original), files: files)
    }

    /// A tmpfs of `sizeKiB` holding copies of the original files.
    private func mount(_ prepared: Prepared, sizeKiB: Int) throws -> TmpfsMount {
        let fs = try TmpfsMount(sizeKiB: sizeKiB, label: "seam-diskfull")
        addTeardownBlock { fs.unmount() }
        for (name, data) in prepared.files { try data.write(to: URL(fileURLWithPath: fs.path + "/" + name)) }
        return fs
    }

    /// The tmpfs is 1.3× the original files: they fit, the Cloud copy does not. `migrate()`
    /// throws a full-disk `StoreError` naming a path in the directory; the originals are
    /// byte-identical and still classified older; no `.X.sqlite.migrating*`, `migration.intent`
    /// or `migration.intent.tmp` remains. After the file system grows, `migrate()` succeeds,
    /// keeps the originals in backups/, and every row is there.
    func testDiskFullDuringTheCopyLeavesTheOriginalsAndNoTemporaries() throws {
        let prepared = try prepare()
        let sizeKiB = prepared.originalBytes * 13 / 10 / 1024
        let fs = try mount(prepared, sizeKiB: sizeKiB)
        XCTAssertLessThan(fs.freeBytes, Int64(prepared.cloudCopyBytes), "precondition: the Cloud copy must not fit")
        let store = StoreDirectory(path: fs.path, schema: TimerApp.schema)
        let before = try Support.snapshot(fs.path)

        let error = try XCTUnwrap(Support.refusal("migrate()") { () throws(StoreError) in try store.migrate() })
        assertDiskFull(error, in: fs.path)
        try Support.assertUnchanged(fs.path, since: before)
        XCTAssertEqual(Support.leftovers(in: fs.path), [], "a failed migration must not leave its copies on a full disk")
        XCTAssertEqual(try store.inspect().map(\.state), [.older, .older], "the originals stay in service")

        try fs.remount("size=\(sizeKiB * 4)k")
        try assertMigratesAfterSpaceIsFreed(store, prepared: prepared, path: fs.path)
    }

    /// The tmpfs is sized so that either copy alone would fit but not both (the Cloud copy plus
    /// half the Local one): whichever copy runs out of space fails the migration, and the other,
    /// even when finished and verified, must not stay behind on the full disk. The originals
    /// are byte-identical; after growing the file system the migration succeeds with every row.
    func testDiskFullWhenOnlyOneCopyFitsLeavesNoCopyBehind() throws {
        let prepared = try prepare()
        let slack = 128 * 1024 // the -shm files SQLite keeps beside the originals and the copies
        let sizeKiB = (prepared.originalBytes + prepared.cloudCopyBytes + prepared.localCopyBytes / 2 + slack) / 1024
        let fs = try mount(prepared, sizeKiB: sizeKiB)
        XCTAssertGreaterThan(fs.freeBytes, Int64(max(prepared.cloudCopyBytes, prepared.localCopyBytes) + slack / 2),
                             "precondition: either copy alone fits")
        XCTAssertLessThan(fs.freeBytes, Int64(prepared.cloudCopyBytes + prepared.localCopyBytes), "precondition: both do not")
        let store = StoreDirectory(path: fs.path, schema: TimerApp.schema)
        let before = try Support.snapshot(fs.path)

        let error = try XCTUnwrap(Support.refusal("migrate()") { () throws(StoreError) in try store.migrate() })
        assertDiskFull(error, in: fs.path)
        try Support.assertUnchanged(fs.path, since: before, ignoringLeftovers: true)
        XCTAssertEqual(Support.leftovers(in: fs.path), [],
                       "a failed migration must remove every copy, finished ones too, not leave them on a full disk")

        try fs.remount("size=\(sizeKiB * 4)k")
        try assertMigratesAfterSpaceIsFreed(store, prepared: prepared, path: fs.path)
    }

    /// The in-place path (a byte copy of the file, then `ALTER TABLE`, for a model whose only
    /// change is an added attribute) on a tmpfs 1.3× the store: the byte copy cannot fit.
    /// `migrate()` fails saying the disk is full, that the original is untouched and what to do;
    /// the original is byte-identical and no copy remains; after growing, it migrates with every row.
    func testDiskFullDuringAnInPlaceCopyLeavesTheOriginalAndSaysWhatToDo() throws {
        let schema = try Support.additiveSchema()
        let source = TemporaryDirectory("seam-diskfull-src")
        try FixtureWriter(schema: schema, versions: [Support.additiveModel: 1], rowsPerEntity: 6000).write(to: source.path)
        let original = try Support.bytes(source.file("Cloud.sqlite"))
        let uuids = try Support.uuids(of: "Note", in: source.file("Cloud.sqlite"))
        let sizeKiB = original.count * 13 / 10 / 1024
        let fs = try TmpfsMount(sizeKiB: sizeKiB, label: "seam-diskfull")
        addTeardownBlock { fs.unmount() }
        try original.write(to: URL(fileURLWithPath: fs.path + "/Cloud.sqlite"))
        let store = StoreDirectory(path: fs.path, schema: schema)
        let method = try store.plan().files.first?.method
        guard case .alter? = method else {
            return XCTFail("precondition: the plan should change a copy in place, not \(String(describing: method))")
        }
        let before = try Support.snapshot(fs.path)

        let error = try XCTUnwrap(Support.refusal("migrate()") { () throws(StoreError) in try store.migrate() })
        assertDiskFull(error, in: fs.path)
        Support.assertMessage(error, names: fs.path + "/Cloud.sqlite", mentions: [], "migrate()")
        try Support.assertUnchanged(fs.path, since: before)
        XCTAssertEqual(Support.leftovers(in: fs.path), [])

        try fs.remount("size=\(sizeKiB * 4)k")
        _ = try store.migrate()
        XCTAssertEqual(try store.inspect().map(\.state), [.current])
        XCTAssertEqual(try Support.uuids(of: "Note", in: fs.path + "/Cloud.sqlite"), uuids)
        XCTAssertEqual(try Support.bytes(newestBackup(in: fs.path, of: "Cloud")), original)
    }

    /// SQLite reports a `-shm` file that cannot grow on a full disk as an I/O error
    /// (`SQLITE_IOERR_SHMSIZE`), not `SQLITE_FULL`: the error still says the disk is full, from
    /// the `errno` behind it. A WAL database made on a tmpfs, closed (its `-shm` removed), the
    /// file system filled with a ballast file, then opened and read: the read fails, `isDiskFull`.
    func testAnIOErrorFromAFullDiskSaysTheDiskIsFull() throws {
        let fs = try TmpfsMount(sizeKiB: 256, label: "seam-diskfull")
        addTeardownBlock { fs.unmount() }
        let path = fs.path + "/Full.sqlite"
        do {
            let db = try Database(path: path)
            try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-shm"), "precondition: closing removed the -shm file")
        let ballast = fs.path + "/ballast"
        let filler = Data(count: 4096)
        _ = FileManager.default.createFile(atPath: ballast, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: ballast))
        while fs.freeBytes > 0, (try? handle.write(contentsOf: filler)) != nil {}
        try handle.close()

        do {
            let db = try Database(path: path)
            _ = try db.scalar("SELECT count(*) FROM t")
            XCTFail("a read that needs a -shm file on a full disk should fail")
        } catch {
            XCTAssertTrue(error.isDiskFull, "\(error)")
            XCTAssertTrue(error.description.contains("No space left on device"), "\(error)")
        }
    }

    // MARK: - Helpers

    /// SQLite's `SQLITE_FULL` or the system's `ENOSPC`, reported against a path in `directory`,
    /// in words a person understands.
    private func assertDiskFull(_ error: StoreError, in directory: String, file: StaticString = #filePath, line: UInt = #line) {
        if let e = Support.databaseError(in: error.kind) {
            XCTAssertTrue(e.isDiskFull, "expected SQLITE_FULL or an I/O error from ENOSPC: \(error)", file: file, line: line)
        } else if case .system(let e) = error.kind {
            XCTAssertEqual(e.errno, SystemError.noSpace, "\(error)", file: file, line: line)
        } else if case .copyFailedInFileSystem(let e) = error.kind {
            XCTAssertEqual(e.errno, SystemError.noSpace, "\(error)", file: file, line: line)
        } else {
            XCTFail("expected SQLITE_FULL or ENOSPC, got \(error)", file: file, line: line)
        }
        XCTAssertTrue(error.path.hasPrefix(directory + "/"), "should name a file in \(directory): \(error)", file: file, line: line)
        XCTAssertTrue(error.description.contains(error.path), "\(error)", file: file, line: line)
        XCTAssertTrue(error.description.contains("full") || error.description.contains("No space"),
                      "should say the disk is full: \(error)", file: file, line: line)
    }

    private func assertMigratesAfterSpaceIsFreed(
        _ store: StoreDirectory, prepared: Prepared, path: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let report = try store.migrate()
        XCTAssertEqual(Set(report.configurations), ["Cloud", "Local"], file: file, line: line)
        XCTAssertEqual(try store.inspect().map(\.state), [.current, .current], file: file, line: line)
        XCTAssertEqual(Support.leftovers(in: path), [], file: file, line: line)
        for (name, data) in prepared.files {
            XCTAssertEqual(try Support.bytes(newestBackup(in: path, of: String(name.dropLast(".sqlite".count)))), data, "backups/\(name) is the original",
                           file: file, line: line)
        }
        try Support.assertEveryRowSurvived(prepared.uuids, in: path, file: file, line: line)
    }
}
