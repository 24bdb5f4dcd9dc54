import Foundation
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// Bad input at every entry point of `StoreDirectory` (`inspect()`, `plan()`, `open()`,
/// `migrate()`): a file that is not SQLite, random pages, a truncated store, a corrupt page, a
/// store written by a newer build, an unknown store, a read-only directory.
///
/// Each must be refused with a `StoreError` whose description names the file and says what to
/// do, and must leave the directory exactly as it was: every file byte for byte, no new file
/// (SQLite's `-shm` index, and an empty `-wal`, that a read-only open may create are ignored:
/// they hold no data of the store).
final class StoreBadInputTests: XCTestCase {
    private typealias Support = BadInputSupport

    // MARK: - Not SQLite at all

    /// A store missing a column its version has (dropped by hand, or damaged) makes reads of it
    /// fail, naming the column. With SQLite's fallback for double-quoted names, the column's
    /// name came back as every row's value, and a migration copied it into the new store.
    func testAMissingColumnIsAnErrorNotItsName() throws {
        let tmp = TemporaryDirectory("seam-bad")
        let dir = tmp.file("data")
        try BadInputSupport.writeFixture(timersVersion: 6, rows: 3, to: dir)
        let db = try Database(path: dir + "/Cloud.sqlite")
        try db.execute("ALTER TABLE Timer DROP COLUMN sound")
        XCTAssertThrowsError(try db.rows(#"SELECT "uuid", "sound" FROM "Timer""#)) { error in
            XCTAssertTrue("\(error)".contains("no such column: sound"), "\(error)")
        }
    }

    /// A text file named `Cloud.sqlite` is refused by every entry point with `.notAStore`; the
    /// message starts with the file, says what is wrong (no SQLite header), that it was left
    /// untouched, and what to do; nothing in the directory changes (in particular `open()` does
    /// not create `Local.sqlite` beside it).
    func testTextFileNamedCloudSqliteIsRefusedEverywhere() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        let cloud = tmp.file("Cloud.sqlite")
        try Data("Timers and folders, one per line:\nTea 3m\nPasta 9m\n".utf8).write(to: URL(fileURLWithPath: cloud))
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        let before = try Support.snapshot(tmp.path)

        let refusals = Support.refusalsOfEveryEntryPoint(store)
        XCTAssertEqual(refusals.count, 4, "every entry point should refuse")
        for (entry, error) in refusals {
            Support.assertKind(error, "notAStore", entry)
            Support.assertMessage(error, names: cloud, mentions: ["no SQLite header"], entry)
        }
        try Support.assertUnchanged(tmp.path, since: before)
    }

    /// The advice names the copy backups/ keeps of the damaged file when there is one, and does
    /// not send a person to an empty backups/ when there is none.
    func testADamagedStoresAdviceNamesTheBackupThereIs() throws {
        let tmp = TemporaryDirectory("seam-badinput-advice")
        let cloud = tmp.file("Cloud.sqlite")
        try Data("not a store".utf8).write(to: URL(fileURLWithPath: cloud))
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        let none = try XCTUnwrap(Support.refusalsOfEveryEntryPoint(store).first?.1)
        XCTAssertTrue("\(none)".contains("backups/ keeps no copy of it: move it aside"), "\(none)")
        XCTAssertFalse("\(none)".contains("Restore it from"), "\(none)")

        // A copy an earlier Seam kept loose in backups/.
        try FileManager.default.createDirectory(atPath: tmp.file("backups"), withIntermediateDirectories: true)
        try Data("an older copy".utf8).write(to: URL(fileURLWithPath: tmp.file("backups/Cloud.sqlite")))
        let kept = try XCTUnwrap(Support.refusalsOfEveryEntryPoint(store).first?.1)
        XCTAssertTrue("\(kept)".contains("Restore it from \(tmp.file("backups/Cloud.sqlite"))"), "\(kept)")
    }

    /// The 16-byte SQLite magic followed by random bytes is refused as `.notAStore`, naming the
    /// file, by every entry point; the file stays byte-identical.
    func testRandomBytesAfterTheSQLiteMagicAreRefused() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        let cloud = tmp.file("Cloud.sqlite")
        var generator = SplitMix64(seed: 0x5EA4_0001)
        let bytes = Array("SQLite format 3\u{0}".utf8) + Support.randomBytes(64 * 1024, using: &generator)
        try Data(bytes).write(to: URL(fileURLWithPath: cloud))
        try assertRefusedAsNotAStore(tmp, cloud: cloud)
    }

    /// A real store's 100-byte header (page size and page count intact, so the file is not
    /// "truncated") followed by random pages is refused as `.notAStore` by every entry point.
    func testRandomPagesBehindARealHeaderAreRefused() throws {
        let source = TemporaryDirectory("seam-badinput-src")
        try Support.writeFixture(timersVersion: 4, rows: 200, to: source.path)
        let original = try Support.bytes(source.file("Cloud.sqlite"))
        let tmp = TemporaryDirectory("seam-badinput")
        let cloud = tmp.file("Cloud.sqlite")
        var generator = SplitMix64(seed: 0x5EA4_0002)
        let bytes = Array(original.prefix(100)) + Support.randomBytes(original.count - 100, using: &generator)
        try Data(bytes).write(to: URL(fileURLWithPath: cloud))
        try assertRefusedAsNotAStore(tmp, cloud: cloud)
    }

    // MARK: - Truncated

    /// A current store (version 6, 2,000 rows per entity, so many pages) cut to half its size is
    /// refused as `.notAStore` by every entry point, with a message that says it is truncated and
    /// gives both sizes; the file and its sibling stay byte-identical.
    func testTruncatedStoreIsRefusedAndSaysTruncated() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        try Support.writeFixture(timersVersion: 6, rows: 2000, to: tmp.path)
        let cloud = tmp.file("Cloud.sqlite")
        let size = try Support.bytes(cloud).count
        XCTAssertGreaterThan(size, 64 * 4096, "the fixture should span many pages")
        XCTAssertEqual(truncate(cloud, off_t(size / 2)), 0, "truncate \(cloud)")
        try assertRefusedAsNotAStore(tmp, cloud: cloud) { entry, error in
            XCTAssertTrue(error.description.contains("truncated"), "\(entry): \(error)")
            XCTAssertTrue(error.description.contains("\(size / 2) bytes"), "\(entry): \(error)")
        }
    }

    // MARK: - A corrupt page

    /// A store at an older version (2, 2,000 rows) with one leaf page of its `Timer` table
    /// overwritten: `migrate()` and `open(migrate: true)` fail with a `StoreError` that names
    /// `Cloud.sqlite` and says the page is damaged; the original is byte-identical afterwards
    /// and no copy is left behind. `inspect()` and `plan()` may either classify it (they read
    /// only the metadata) or refuse it as `.notAStore`.
    func testCorruptPageInACopiedTableFailsTheMigrationAndLeavesTheOriginal() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        try Support.writeFixture(timersVersion: 2, rows: 2000, to: tmp.path)
        let cloud = tmp.file("Cloud.sqlite")
        try Support.corruptMiddleLeafPage(of: "Timer", in: cloud)
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        let before = try Support.snapshot(tmp.path)

        assertClassifiesOrRefuses(store, cloud: cloud)
        for (entry, error) in refusalsOfMigration(store) {
            assertNamesTheDamagedFile(error, cloud: cloud, entry)
        }
        try Support.assertUnchanged(tmp.path, since: before)
        XCTAssertEqual(Support.leftovers(in: tmp.path), [])
    }

    /// The same corruption, but in the `Run` table of `Cloud.sqlite`, which the migration reads
    /// while it builds the *Local* copy (runs move to `Local` in version 3): the error must still
    /// name the damaged file, `Cloud.sqlite`, not `Local.sqlite` nor a migration copy.
    func testCorruptPageInAMovedTableNamesTheDamagedFile() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        try Support.writeFixture(timersVersion: 2, rows: 2000, to: tmp.path)
        let cloud = tmp.file("Cloud.sqlite")
        try Support.corruptMiddleLeafPage(of: "Run", in: cloud)
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        let before = try Support.snapshot(tmp.path)

        for (entry, error) in refusalsOfMigration(store) {
            assertNamesTheDamagedFile(error, cloud: cloud, entry)
        }
        try Support.assertUnchanged(tmp.path, since: before, ignoringLeftovers: true)
    }

    /// A migration whose Local copy fails (it reads a corrupt `Run` page of `Cloud.sqlite`) also
    /// removes the Cloud copy, which builds and verifies fine on its own: no
    /// `.Cloud.sqlite.migrating` is left on the disk.
    func testFailedMigrationLeavesNoCopyOfAnEarlierFileBehind() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        try Support.writeFixture(timersVersion: 2, rows: 2000, to: tmp.path)
        try Support.corruptMiddleLeafPage(of: "Run", in: tmp.file("Cloud.sqlite"))
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)

        XCTAssertNotNil(Support.refusal("migrate()") { () throws(StoreError) in try store.migrate() })
        XCTAssertEqual(Support.leftovers(in: tmp.path), [], "a failed migrate() must remove every copy it made")
    }

    /// The error for a corrupt page says that the original was left untouched and what to do
    /// (restore it from backups/, or move it aside), like every other refusal.
    func testCorruptPageErrorSaysWhatToDo() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        try Support.writeFixture(timersVersion: 2, rows: 2000, to: tmp.path)
        try Support.corruptMiddleLeafPage(of: "Timer", in: tmp.file("Cloud.sqlite"))
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)

        let error = try XCTUnwrap(Support.refusal("migrate()") { () throws(StoreError) in try store.migrate() })
        Support.assertMessage(error, names: tmp.file("Cloud.sqlite"), mentions: [], "migrate()")
    }

    /// A store of a model whose only change is an added attribute, which migrates by the in-place
    /// path (a byte copy of the file, then `ALTER TABLE`; no shipped timer release takes it), with a
    /// corrupt leaf page: `migrate()` and `open(migrate: true)` fail with an error about the damaged
    /// original, `Cloud.sqlite`, not about the copy; it stays byte-identical and no copy is left.
    func testCorruptPageInAStoreChangedInPlaceNamesTheOriginal() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        let schema = try Support.additiveSchema()
        try FixtureWriter(schema: schema, versions: [Support.additiveModel: 1], rowsPerEntity: 3000).write(to: tmp.path)
        let cloud = tmp.file("Cloud.sqlite")
        try Support.corruptMiddleLeafPage(of: "Note", in: cloud)
        let store = StoreDirectory(path: tmp.path, schema: schema)
        let method = try store.plan().files.first?.method
        guard case .alter? = method else {
            return XCTFail("precondition: the plan should change a copy in place, not \(String(describing: method))")
        }
        let before = try Support.snapshot(tmp.path)

        for (entry, error) in refusalsOfMigration(store) {
            assertNamesTheDamagedFile(error, cloud: cloud, entry)
        }
        try Support.assertUnchanged(tmp.path, since: before)
        XCTAssertEqual(Support.leftovers(in: tmp.path), [])
    }

    // MARK: - Written by a newer build

    /// A current store whose `seam_models` row for Timers says version 99 with a hash this build
    /// has never seen: `inspect()` classifies it `.newer` without throwing; `plan()`, `open()` and
    /// `migrate()` refuse it with `.newer(Timers, 99, 6)` and a message that starts with the file,
    /// names the model, both versions, says it was left untouched and to use a newer Seam; both
    /// files stay byte-identical.
    func testStoreWrittenByANewerBuildIsRefusedUntouched() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        try Support.writeFixture(timersVersion: 6, rows: 50, to: tmp.path)
        let cloud = tmp.file("Cloud.sqlite")
        try Support.rewriteModelRecord("Timers", in: cloud, version: 99, configurationHash: String(repeating: "0f", count: 32))
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        let known = try XCTUnwrap(TimerApp.schema.model(TimerModel.name)).current.version
        let before = try Support.snapshot(tmp.path)

        let classifications = try store.inspect()
        let cloudClass = try XCTUnwrap(classifications.first { $0.configuration == "Cloud" })
        XCTAssertEqual(cloudClass.state, .newer, cloudClass.summary)
        let timersStatus = cloudClass.models.first { $0.name == "Timers" }?.status
        guard case .newer(label: 99)? = timersStatus else {
            return XCTFail("Timers should be newer (99): \(cloudClass.summary)")
        }

        for (entry, error) in refusalsExceptInspect(store) {
            guard case .newer(let model, let stored, let knownVersion) = error.kind else {
                XCTFail("\(entry): expected .newer, got \(error.kind): \(error)")
                continue
            }
            XCTAssertEqual(model, "Timers", entry)
            XCTAssertEqual(stored, 99, entry)
            XCTAssertEqual(knownVersion, known, entry)
            Support.assertMessage(error, names: cloud, mentions: ["Timers", "version 99", "version \(known)", "newer Seam"], entry)
        }
        try Support.assertUnchanged(tmp.path, since: before)
    }

    // MARK: - Unknown, with no usable embedded model

    /// A store whose Timers record has an unknown hash at a version label this build knows, and
    /// whose embedded canonical JSON is garbled: `inspect()` classifies it `.unknown`; `plan()`,
    /// `open()` and `migrate()` refuse it with `.unknown`, starting with the file, naming the model
    /// and saying it was left untouched; both files stay byte-identical.
    func testUnknownStoreWithoutUsableEmbeddedModelIsRefused() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        let cloud = try makeUnknownStore(tmp)
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        let before = try Support.snapshot(tmp.path)

        let cloudClass = try XCTUnwrap(try store.inspect().first { $0.configuration == "Cloud" })
        XCTAssertEqual(cloudClass.state, .unknown, cloudClass.summary)

        for (entry, error) in refusalsExceptInspect(store) {
            Support.assertKind(error, "unknown", entry)
            Support.assertMessage(error, names: cloud, mentions: ["Timers"], saysWhatToDo: false, entry)
        }
        try Support.assertUnchanged(tmp.path, since: before)
    }

    /// The refusal of an unknown store says what to do about it (as `StoreError` promises of
    /// every refusal): e.g. use the build that wrote it, restore it from backups/, or move it aside.
    func testUnknownStoreErrorSaysWhatToDo() throws {
        let tmp = TemporaryDirectory("seam-badinput")
        _ = try makeUnknownStore(tmp)
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        let error = try XCTUnwrap(Support.refusal("migrate()") { () throws(StoreError) in try store.migrate() })
        Support.assertSaysWhatToDo(error, "migrate()")
    }

    // MARK: - A read-only directory

    /// An older store on a read-only file system (a tmpfs remounted `ro`: as root, mode 0555
    /// would not stop anything): `migrate()` and `open(migrate: true)` fail with a `StoreError`
    /// naming a path in the directory; nothing changes; once the file system is writable again
    /// the same directory migrates, so the store was never harmed.
    func testReadOnlyDirectoryIsRefusedAndLeftAsItWas() throws {
        let fs = try readOnlyOlderStore()
        addTeardownBlock { fs.unmount() }
        let store = StoreDirectory(path: fs.path, schema: TimerApp.schema)
        let before = try Support.snapshot(fs.path)

        for (entry, error) in refusalsOfMigration(store) {
            XCTAssertTrue(error.path.hasPrefix(fs.path), "\(entry) should name a path in \(fs.path): \(error)")
            XCTAssertTrue(error.description.contains(fs.path), "\(entry): \(error)")
        }
        try Support.assertUnchanged(fs.path, since: before)

        try fs.remount("rw")
        let report = try store.migrate()
        XCTAssertEqual(Set(report.configurations), ["Cloud", "Local"])
        XCTAssertTrue(try store.inspect().allSatisfy { $0.state == .current })
    }

    /// The errors for a read-only directory say that it is read-only (it is not the store that
    /// is at fault): no entry point calls a good store "not a usable Seam store" and advises moving
    /// it aside. `inspect()`, which writes nothing, may instead succeed and classify it `.older`.
    func testReadOnlyDirectoryErrorSaysReadOnly() throws {
        let fs = try readOnlyOlderStore()
        addTeardownBlock { fs.unmount() }
        let store = StoreDirectory(path: fs.path, schema: TimerApp.schema)

        do {
            let classifications = try store.inspect()
            XCTAssertEqual(classifications.first { $0.configuration == "Cloud" }?.state, .older)
        } catch {
            assertSaysReadOnly(error, "inspect()")
        }
        for (entry, error) in refusalsOfMigration(store) {
            assertSaysReadOnly(error, entry)
        }
    }

    // MARK: - Helpers

    /// Every entry point refuses the file at `cloud` as `.notAStore` with a message that starts
    /// with it, says it was left untouched and what to do; the directory is unchanged afterwards.
    private func assertRefusedAsNotAStore(
        _ tmp: TemporaryDirectory, cloud: String, file: StaticString = #filePath, line: UInt = #line,
        _ more: (String, StoreError) -> Void = { _, _ in }
    ) throws {
        let store = StoreDirectory(path: tmp.path, schema: TimerApp.schema)
        let before = try Support.snapshot(tmp.path)
        let refusals = Support.refusalsOfEveryEntryPoint(store, file: file, line: line)
        XCTAssertEqual(refusals.count, 4, "every entry point should refuse", file: file, line: line)
        for (entry, error) in refusals {
            Support.assertKind(error, "notAStore", entry, file: file, line: line)
            Support.assertMessage(error, names: cloud, mentions: [], entry, file: file, line: line)
            more(entry, error)
        }
        try Support.assertUnchanged(tmp.path, since: before, file: file, line: line)
    }

    /// `inspect()` and `plan()` of a store with a damaged data page either succeed or refuse it
    /// as `.notAStore` naming it.
    private func assertClassifiesOrRefuses(_ store: StoreDirectory, cloud: String) {
        do { _ = try store.inspect() } catch {
            Support.assertKind(error, "notAStore", "inspect()")
            XCTAssertEqual(error.path, cloud, "inspect()")
        }
        do { _ = try store.plan() } catch {
            Support.assertKind(error, "notAStore", "plan()")
            XCTAssertEqual(error.path, cloud, "plan()")
        }
    }

    /// The errors of `migrate()` and `open(migrate: true)`, each of which must throw.
    private func refusalsOfMigration(_ store: StoreDirectory) -> [(String, StoreError)] {
        var out: [(String, StoreError)] = []
        if let e = Support.refusal("migrate()", { () throws(StoreError) in try store.migrate() }) { out.append(("migrate()", e)) }
        if let e = Support.refusal("open(migrate: true)", { () throws(StoreError) in try store.open(migrate: true) }) {
            out.append(("open(migrate: true)", e))
        }
        return out
    }

    /// The errors of `plan()`, `open()` and `migrate()`, each of which must throw.
    private func refusalsExceptInspect(_ store: StoreDirectory) -> [(String, StoreError)] {
        Support.refusalsOfEveryEntryPoint(store, includingInspect: false)
    }

    /// A damaged page is reported against the damaged file, as damage (SQLite's "malformed").
    private func assertNamesTheDamagedFile(_ error: StoreError, cloud: String, _ entry: String,
                                           file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(error.path, cloud, "\(entry) should name the damaged file: \(error)", file: file, line: line)
        XCTAssertTrue(error.description.hasPrefix(cloud), "\(entry) should start with the damaged file: \(error)",
                      file: file, line: line)
        if let e = Support.databaseError(in: error.kind) {
            XCTAssertTrue(e.resultCode.matches(.corrupt), "\(entry): \(error)", file: file, line: line)
        } else {
            Support.assertKind(error, "notAStore", entry, file: file, line: line)
        }
        XCTAssertTrue(error.description.contains("malformed") || error.description.contains("damaged")
                          || error.description.contains("corrupt"), "\(entry) should say the file is damaged: \(error)",
                      file: file, line: line)
    }

    private func assertSaysReadOnly(_ error: StoreError, _ entry: String, file: StaticString = #filePath, line: UInt = #line) {
        if case .notAStore = error.kind {
            XCTFail("\(entry) calls a good store on a read-only file system not a store: \(error)", file: file, line: line)
        }
        let text = error.description.lowercased()
        XCTAssertTrue(["read-only", "readonly", "not writable", "cannot be written"].contains { text.contains($0) },
                      "\(entry) should say the directory is read-only: \(error)", file: file, line: line)
    }

    /// A current fixture whose Timers record claims version 6 with an unknown hash and garbled
    /// canonical JSON. Returns the path of its `Cloud.sqlite`.
    private func makeUnknownStore(_ tmp: TemporaryDirectory) throws -> String {
        try Support.writeFixture(timersVersion: 6, rows: 50, to: tmp.path)
        let cloud = tmp.file("Cloud.sqlite")
        try Support.rewriteModelRecord("Timers", in: cloud, version: 6, configurationHash: String(repeating: "ab", count: 32),
                                       canonicalJSON: "{\"model\":\"Timers\",\"entities\":[{\"na")
        return cloud
    }

    /// A tmpfs holding a version-2 fixture, remounted read-only.
    private func readOnlyOlderStore() throws -> TmpfsMount {
        let fs = try TmpfsMount(sizeKiB: 8192, label: "seam-readonly")
        try Support.writeFixture(timersVersion: 2, rows: 200, to: fs.path)
        try fs.remount("ro")
        XCTAssertNotEqual(access(fs.path, W_OK), 0, "the remounted tmpfs should refuse writes, even to root")
        return fs
    }
}

// MARK: - Helpers shared by the bad-input, disk-full and crash tests

/// Fixtures, snapshots and assertions for tests that feed store directories bad input.
enum BadInputSupport {
    /// The four entry points' errors for `store`, in order; each entry point that does not throw
    /// is a test failure. `open()` is called without `migrate`.
    static func refusalsOfEveryEntryPoint(
        _ store: StoreDirectory, includingInspect: Bool = true, file: StaticString = #filePath, line: UInt = #line
    ) -> [(String, StoreError)] {
        var out: [(String, StoreError)] = []
        if includingInspect, let e = refusal("inspect()", file: file, line: line, { () throws(StoreError) in try store.inspect() }) {
            out.append(("inspect()", e))
        }
        if let e = refusal("plan()", file: file, line: line, { () throws(StoreError) in try store.plan() }) {
            out.append(("plan()", e))
        }
        if let e = refusal("open()", file: file, line: line, { () throws(StoreError) in try store.open() }) {
            out.append(("open()", e))
        }
        if let e = refusal("migrate()", file: file, line: line, { () throws(StoreError) in try store.migrate() }) {
            out.append(("migrate()", e))
        }
        return out
    }

    /// The error `body` throws; a failure (and `nil`) when it returns instead.
    static func refusal<T>(
        _ entry: String, file: StaticString = #filePath, line: UInt = #line, _ body: () throws(StoreError) -> T
    ) -> StoreError? {
        do {
            let result = try body()
            XCTFail("\(entry) succeeded (\(result)) where it should have refused", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// The case name of `kind` ("notAStore", "newer", …), read from its description so that
    /// cases added later need no change here.
    static func kindName(_ kind: StoreError.Kind) -> String {
        String(String(describing: kind).prefix { $0 != "(" })
    }

    /// The SQLite error inside `kind`, whichever case carries it.
    static func databaseError(in kind: StoreError.Kind) -> DatabaseError? {
        let mirror = Mirror(reflecting: kind)
        return mirror.children.first.flatMap { child in
            child.value as? DatabaseError ?? Mirror(reflecting: child.value).children.first?.value as? DatabaseError
        }
    }

    static func assertKind(
        _ error: StoreError, _ expected: String, _ entry: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(kindName(error.kind), expected, "\(entry): \(error)", file: file, line: line)
    }

    /// Phrases (lowercased) by which a refusal tells its reader what to do next.
    static let advice = [
        "move it aside", "restore it from backups/", "use a newer seam", "with the seam build that wrote it", "run `seam-migrate`",
        "free some space", "free space", "make it writable",
    ]

    /// The qualities every refusal's message must have: it starts with the file it is about (and
    /// `path` is that file), mentions each of `mentions`, says that the file was left untouched
    /// and, unless `saysWhatToDo` is false, what to do next.
    static func assertMessage(
        _ error: StoreError, names path: String, mentions: [String], saysWhatToDo: Bool = true, _ entry: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let text = error.description
        XCTAssertEqual(error.path, path, "\(entry) should be about \(path): \(error)", file: file, line: line)
        XCTAssertTrue(text.hasPrefix(path + " ") || text.hasPrefix(path + ":"), "\(entry) should start with the file: \(error)",
                      file: file, line: line)
        for m in mentions { XCTAssertTrue(text.contains(m), "\(entry) should mention \"\(m)\": \(error)", file: file, line: line) }
        XCTAssertTrue(text.contains("untouched") || text.lowercased().contains("nothing was changed"),
                      "\(entry) should say the file was left untouched: \(error)", file: file, line: line)
        if saysWhatToDo { assertSaysWhatToDo(error, entry, file: file, line: line) }
    }

    static func assertSaysWhatToDo(_ error: StoreError, _ entry: String, file: StaticString = #filePath, line: UInt = #line) {
        let text = error.description.lowercased()
        XCTAssertTrue(advice.contains { text.contains($0) }, "\(entry) should say what to do (one of \(advice)): \(error)",
                      file: file, line: line)
    }

    // MARK: Fixtures

    /// Writes the timer app's files as the first release with Timers at `timersVersion` wrote them.
    static func writeFixture(timersVersion: Int, rows: Int, seed: UInt64 = 1, to directory: String) throws {
        let release = try XCTUnwrap(TimerApp.release(where: TimerModel.name, is: timersVersion),
                                    "no release with Timers v\(timersVersion)")
        try FixtureWriter(schema: TimerApp.schema, versions: release, rowsPerEntity: rows, seed: seed).write(to: directory)
    }

    static func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    static func copy(_ from: String, to: String) throws {
        try? FileManager.default.removeItem(atPath: to)
        try FileManager.default.copyItem(atPath: from, toPath: to)
    }

    static func randomBytes(_ count: Int, using generator: inout SplitMix64) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    /// Overwrites the middle leaf page of `table`'s b-tree (found with `dbstat`) with seeded
    /// garbage whose first byte is no valid page type.
    static func corruptMiddleLeafPage(of table: String, in path: String) throws {
        var options = Database.Options()
        options.readOnly = true
        let db = try Database(path: path, options: options)
        let pages = try db.rows("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno", [.string(table)])
            .compactMap { $0.first?.integerValue }
        let pageSize = try XCTUnwrap(try db.scalar("PRAGMA page_size").integerValue)
        db.close()
        XCTAssertGreaterThan(pages.count, 4, "\(table) should span several leaf pages")
        let page = pages[pages.count / 2]
        var generator = SplitMix64(seed: UInt64(page))
        var garbage = randomBytes(Int(pageSize), using: &generator)
        garbage[0] = 0xFF
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64((page - 1) * pageSize))
        try handle.write(contentsOf: garbage)
        try handle.synchronize()
    }

    /// Rewrites one model's record in `seam_models` (through SQLite, closed cleanly afterwards).
    static func rewriteModelRecord(
        _ model: String, in path: String, version: Int, configurationHash: String, canonicalJSON: String? = nil
    ) throws {
        let db = try Database(path: path)
        try db.run("UPDATE seam_models SET version = ?, configurationHash = ? WHERE model = ?",
                   [.integer(Int64(version)), .string(configurationHash), .string(model)])
        XCTAssertEqual(db.changes, 1, "no seam_models row for \(model) in \(path)")
        if let canonicalJSON {
            try db.run("UPDATE seam_models SET canonicalJSON = ? WHERE model = ?", [.string(canonicalJSON), .string(model)])
        }
        db.close()
    }

    /// The model of `additiveSchema()`.
    static let additiveModel = "Notes"

    /// A two-version model whose only change is an added optional attribute (and an index), so
    /// that its migration takes the in-place path: a byte copy of the file, altered.
    static func additiveSchema() throws -> Schema {
        var v1 = ModelDraft(model: additiveModel)
        try v1.addConfiguration("Cloud")
        try v1.addEntity(
            Entity("Note", attributes: [
                Attribute("uuid", .uuid), Attribute("title", .string), Attribute("createdAt", .date, default: .date(0)),
            ]),
            in: "Cloud")
        var v2 = v1.next()
        try v2.modify("Note") { e throws(SchemaError) in
            try e.add(Attribute("body", .string, optional: true))
            try e.addIndex(Index("createdAt"))
        }
        return try Schema([try VersionedModel([v1, v2])])
    }

    // MARK: Snapshots

    /// Every file under a directory, by relative path, with its bytes; and its subdirectories.
    /// SQLite's `-shm` files and empty `-wal` files are left out: a read-only open creates them
    /// and they hold no data of the store.
    struct Snapshot: Equatable {
        var files: [String: Data]
        var directories: Set<String>

        func differences(from old: Snapshot) -> [String] {
            var out: [String] = []
            for name in Set(files.keys).union(old.files.keys).sorted() {
                switch (old.files[name], files[name]) {
                case (nil, let new?): out.append("added \(name) (\(new.count) bytes)")
                case (let was?, nil): out.append("removed \(name) (\(was.count) bytes)")
                case (let was?, let new?) where was != new: out.append("changed \(name) (\(was.count) → \(new.count) bytes)")
                default: break
                }
            }
            for d in directories.subtracting(old.directories).sorted() { out.append("added directory \(d)") }
            for d in old.directories.subtracting(directories).sorted() { out.append("removed directory \(d)") }
            return out
        }
    }

    static func snapshot(_ directory: String) throws -> Snapshot {
        var snapshot = Snapshot(files: [:], directories: [])
        let fm = FileManager.default
        for name in try fm.subpathsOfDirectory(atPath: directory) {
            let path = directory + "/" + name
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue { snapshot.directories.insert(name); continue }
            let data = try bytes(path)
            if name.hasSuffix("-shm") || (name.hasSuffix("-wal") && data.isEmpty) { continue }
            snapshot.files[name] = data
        }
        return snapshot
    }

    /// Fails, listing what differs, unless `directory` holds what it held at `before`.
    static func assertUnchanged(
        _ directory: String, since before: Snapshot, ignoringLeftovers: Bool = false,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        var now = try snapshot(directory)
        if ignoringLeftovers { now.files = now.files.filter { !isLeftover($0.key) } }
        let differences = now.differences(from: before)
        XCTAssertEqual(differences, [], "\(directory) changed", file: file, line: line)
    }

    /// Whether `name` is something a migration leaves only while it runs.
    static func isLeftover(_ name: String) -> Bool {
        (name.hasPrefix(".") && name.contains(".migrating")) || name == "migration.intent" || name == "migration.intent.tmp"
    }

    /// The names in `directory` (not below it) that a finished or abandoned migration must not leave.
    static func leftovers(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter(isLeftover).sorted()
    }

    // MARK: Rows

    /// Where each entity of any old version lives in the current version: renames followed
    /// (`Folder` → `UserGroup`, `Run` → `Session`), `nil` for removed ones (`Setting`, gone in v2).
    static let currentName: [String: String?] = [
        "Timer": "Timer", "Folder": "UserGroup", "Run": "Session", "Setting": nil,
        "UserGroup": "UserGroup", "Session": "Session", "SyncToken": "SyncToken", "SyncRecord": "SyncRecord",
    ]

    /// The uuids of every entity of the release with Timers at `timersVersion`, read from that
    /// release's files in `directory`: entity name → uuids.
    static func uuidsByEntity(timersVersion: Int, in directory: String) throws -> [String: Set<String>] {
        let release = try XCTUnwrap(TimerApp.release(where: TimerModel.name, is: timersVersion))
        var out: [String: Set<String>] = [:]
        for (modelName, label) in release {
            let version = try XCTUnwrap(TimerApp.schema.model(modelName)?.version(label))
            for e in version.entities {
                let configuration = try XCTUnwrap(version.configuration(of: e.name))
                out[e.name] = try uuids(of: e.name, in: directory + "/\(configuration).sqlite")
            }
        }
        return out
    }

    static func uuids(of table: String, in path: String) throws -> Set<String> {
        var options = Database.Options()
        options.readOnly = true
        let db = try Database(path: path, options: options)
        defer { db.close() }
        return Set(try db.rows("SELECT \"uuid\" FROM \"\(table)\"").compactMap { $0.first?.stringValue })
    }

    static func tables(in path: String) throws -> Set<String> {
        var options = Database.Options()
        options.readOnly = true
        let db = try Database(path: path, options: options)
        defer { db.close() }
        return Set(try db.rows("SELECT name FROM sqlite_schema WHERE type = 'table'").compactMap { $0.first?.stringValue })
    }

    /// Every row of `original` (entity → uuids, as an old version named them) is in the current
    /// files of `directory`, under the entity's current name and in its current file; removed
    /// entities are gone from every file.
    static func assertEveryRowSurvived(
        _ original: [String: Set<String>], in directory: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        XCTAssertFalse(original.isEmpty, "no original rows to compare", file: file, line: line)
        for (oldName, oldUUIDs) in original.sorted(by: { $0.key < $1.key }) {
            let mapped = try XCTUnwrap(currentName[oldName], "no known fate for entity \(oldName)", file: file, line: line)
            guard let newName = mapped else {
                for configuration in TimerApp.schema.configurations {
                    let path = directory + "/\(configuration).sqlite"
                    XCTAssertFalse(try tables(in: path).contains(oldName), "removed entity \(oldName) is still in \(path)",
                                   file: file, line: line)
                }
                continue
            }
            let configuration = try XCTUnwrap(TimerApp.schema.entity(newName)?.configuration, file: file, line: line)
            let now = try uuids(of: newName, in: directory + "/\(configuration).sqlite")
            XCTAssertEqual(now.count, oldUUIDs.count, "\(oldName) → \(configuration).\(newName): row count", file: file, line: line)
            XCTAssertTrue(oldUUIDs.isSubset(of: now),
                          "\(oldName) → \(configuration).\(newName): \(oldUUIDs.subtracting(now).count) rows missing",
                          file: file, line: line)
        }
    }
}

/// A small tmpfs mounted on a fresh directory for one test; unmounted (and the directory
/// removed) by `unmount()` or when released. Throws `XCTSkip` where mounting is impossible.
final class TmpfsMount: @unchecked Sendable {
    private let parent: TemporaryDirectory
    let path: String
    private var mounted = false

    init(sizeKiB: Int, label: String) throws {
        guard getuid() == 0 else {
            throw XCTSkip("mounting a tmpfs needs root (running as uid \(getuid())); mode bits cannot stand in for it")
        }
        parent = TemporaryDirectory(label)
        path = parent.file("mnt")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let result = try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(sizeKiB)k,mode=0700", "tmpfs", path])
        guard result.status == 0 else {
            throw XCTSkip("cannot mount a tmpfs here (mount exited \(result.status): \(result.output)); "
                          + "this test needs a real small file system")
        }
        mounted = true
    }

    /// `mount -o remount,OPTIONS`, e.g. `ro`, `rw` or `size=4096k`.
    func remount(_ options: String) throws {
        let result = try Self.run("/bin/mount", ["-o", "remount,\(options)", path])
        guard result.status == 0 else {
            throw XCTSkip("cannot remount \(path) with \(options) (mount exited \(result.status): \(result.output))")
        }
    }

    /// Unmounts the file system and removes its mount point (XCTest may keep this object alive
    /// until the whole run ends, so the directory is not left to `deinit`).
    func unmount() {
        guard mounted else { return }
        if (try? Self.run("/bin/umount", [path]))?.status != 0 { _ = try? Self.run("/bin/umount", ["-l", path]) }
        mounted = false
        try? FileManager.default.removeItem(atPath: parent.path)
    }

    deinit { unmount() }

    /// Free bytes on the file system.
    var freeBytes: Int64 {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return -1 }
        return Int64(st.f_bavail) * Int64(st.f_frsize)
    }

    private static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
