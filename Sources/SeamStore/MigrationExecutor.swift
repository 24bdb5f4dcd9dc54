import Dispatch
import SeamSchema
import SeamSystem
import Synchronization

/// Where a migration is, reported through the progress callback.
public struct MigrationProgress: Sendable {
    public enum Phase: String, Sendable { case preparing, copying, indexing, verifying, swapping, done }
    public var phase: Phase
    public var configuration: String
    public var entity: String?
    /// Rows copied so far, across every file of the plan, and the total to copy.
    public var rowsDone: Int
    public var rowsTotal: Int
    /// Bytes written to the copies so far.
    public var bytesWritten: Int64
    /// Bytes to copy, when a copy is a byte copy (an additive change); 0 when rows are copied.
    public var bytesTotal: Int64 = 0

    public init(phase: Phase, configuration: String, entity: String? = nil, rowsDone: Int = 0, rowsTotal: Int = 0,
                bytesWritten: Int64 = 0, bytesTotal: Int64 = 0) {
        self.phase = phase
        self.configuration = configuration
        self.entity = entity
        self.rowsDone = rowsDone
        self.rowsTotal = rowsTotal
        self.bytesWritten = bytesWritten
        self.bytesTotal = bytesTotal
    }

    /// The fraction done (0…1): from rows, or from bytes for a byte copy; 1 once verified.
    public var fraction: Double {
        if phase == .swapping || phase == .done { return 1 }
        if rowsTotal > 0 { return min(1, Double(rowsDone) / Double(rowsTotal)) }
        if bytesTotal > 0 { return min(1, Double(bytesWritten) / Double(bytesTotal)) }
        return phase == .verifying ? 1 : 0
    }
}

public struct MigrationOptions: Sendable {
    /// Rows per `INSERT … SELECT` batch: bounds memory and sets how often progress is reported.
    public var batchSize = 20_000
    /// Run `PRAGMA integrity_check` on each copy instead of `quick_check` (about 10× slower).
    public var fullIntegrityCheck = false
    public var durability: Durability = .normal
    public init() {}
}

public struct MigrationReport: Sendable {
    public var configurations: [String]
    public var rowsCopied: Int
    public var backups: [String]
}

/// Runs a `MigrationPlan`: builds each file's copy from the read-only originals, verifies it, and
/// swaps every copy in as a set. A crash at any moment leaves the originals in service, or the
/// swap to be rolled forward from `migration.intent` on the next open.
enum MigrationExecutor {
    typealias Progress = (MigrationProgress) -> Void

    static func run(
        _ plan: MigrationPlan, layout: StoreLayout, options: MigrationOptions, progress: Progress
    ) throws(StoreError) -> MigrationReport {
        guard !plan.isEmpty else { return MigrationReport(configurations: [], rowsCopied: 0, backups: []) }
        var state = try build(plan, layout: layout, options: options, progress: progress)
        state.phase = .swapping
        progress(state)
        let backups = try swap(plan.files.map(\.configuration), layout: layout, keeping: generation(for: plan, layout: layout))
        state.phase = .done
        progress(state)
        return MigrationReport(configurations: plan.files.map(\.configuration), rowsCopied: state.rowsDone, backups: backups)
    }

    /// Builds and verifies every copy of `plan`, leaving them beside the originals for `swap`
    /// (the migration worker stops here; the broker swaps). Returns the final progress.
    static func build(
        _ plan: MigrationPlan, layout: StoreLayout, options: MigrationOptions, progress: Progress
    ) throws(StoreError) -> MigrationProgress {
        // The copies a pending swap names are the only whole new versions of their stores: a
        // build would overwrite them (the same names) while the intent still says to swap them in.
        if FileSystem.exists(layout.intent) {
            throw StoreError(.swapPending(detail: "migration.intent names them"), path: layout.directory)
        }
        // And an intent whose removal is not on the disk yet (its sync after the last swap may
        // have failed) must not come back after a power cut beside a copy half built.
        do { try FileSystem.syncDirectory(layout.directory) } catch { throw StoreError(.system(error), path: layout.directory) }
        let sources = Set(plan.files.flatMap(\.sources)).union(plan.files.map(\.configuration))
        for configuration in sources.sorted() where FileSystem.exists(layout.store(configuration)) {
            try foldWAL(layout.store(configuration))
        }
        let state = MigrationProgress(phase: .preparing, configuration: plan.files[0].configuration, entity: nil,
                                      rowsDone: 0, rowsTotal: 0, bytesWritten: 0)
        progress(state)
        return try buildConcurrently(plan.files, layout: layout, options: options, start: state, progress: progress)
    }

    /// Builds every file's copy at once, one thread per file (each reads only the read-only
    /// originals and writes only its own copy). Progress from the workers is gathered on a board
    /// and handed to `progress` on the calling thread. If any copy fails, every copy is removed.
    private static func buildConcurrently(
        _ files: [MigrationPlan.FilePlan], layout: StoreLayout, options: MigrationOptions,
        start: MigrationProgress, progress: Progress
    ) throws(StoreError) -> MigrationProgress {
        let board = ProgressBoard(start)
        let group = DispatchGroup()
        for file in files {
            DispatchQueue.global().async(group: group) {
                var local = start
                local.rowsDone = 0
                local.rowsTotal = 0
                do throws(StoreError) {
                    try build(file, layout: layout, options: options, state: &local) {
                        board.publish(file.configuration, $0)
                    }
                } catch {
                    board.fail(error)
                }
            }
        }
        var last: MigrationProgress?
        while group.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
            let now = board.snapshot
            if now.phase != last?.phase || now.rowsDone != last?.rowsDone || now.entity != last?.entity
                || now.bytesWritten != last?.bytesWritten
            {
                progress(now)
                last = now
            }
        }
        if let error = board.error {
            for f in files { try? StoreLayout.removeDatabase(layout.copy(f.configuration)) }
            throw error
        }
        let end = board.snapshot
        if end.rowsDone != last?.rowsDone || end.bytesWritten != last?.bytesWritten { progress(end) }
        return end
    }

    // MARK: - Building one copy

    private static func build(
        _ file: MigrationPlan.FilePlan, layout: StoreLayout, options: MigrationOptions,
        state: inout MigrationProgress, progress: Progress
    ) throws(StoreError) {
        let path = layout.copy(file.configuration)
        do { try StoreLayout.removeDatabase(path) } catch { throw StoreError(.system(error), path: path) }
        state.configuration = file.configuration
        do {
            if case .alter(let statements) = file.method {
                try alter(file, statements: statements, original: layout.store(file.configuration), copy: path, options: options,
                          state: &state, progress: progress)
                return
            }
            var o = Database.Options()
            o.wal = false
            o.uri = true
            let db = try Database(path: path, options: o)
            try db.execute("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000; PRAGMA temp_store=FILE")
            let own = layout.store(file.configuration)
            let attached = file.sources.union(FileSystem.exists(own) ? [file.configuration] : [])
            for configuration in attached.sorted() {
                let name = SchemaSQL.quote(MigrationPlan.Copy.schemaName(configuration))
                try db.run("ATTACH DATABASE ? AS \(name)", [.string(Database.readOnlyURI(layout.store(configuration)))])
            }
            // Each thread counts its own sources (in parallel): the progress total, and what the
            // copy must match.
            var counts: [String: Int] = [:]
            for copy in file.copies {
                let source = "\(SchemaSQL.quote(MigrationPlan.Copy.schemaName(copy.sourceConfiguration))).\(SchemaSQL.quote(copy.sourceTable))"
                let n = Int(try db.scalar("SELECT count(*) FROM \(source)").integerValue ?? 0)
                counts["\(file.configuration).\(copy.entity)"] = n
                state.rowsTotal += n
            }
            progress(state)
            try db.execute("BEGIN")
            for sql in file.createTables { try db.execute(sql) }
            var copied: [String: Int] = [:]
            for copy in file.copies {
                state.phase = .copying
                state.entity = copy.entity
                do {
                    if copy.swiftStages.isEmpty {
                        copied[copy.entity] = try copyRows(copy, db: db, batch: options.batchSize, state: &state, progress: progress)
                    } else {
                        copied[copy.entity] = try copyRowsThroughStages(copy, db: db, batch: options.batchSize, path: path,
                                                                        state: &state, progress: progress)
                    }
                } catch let e as DatabaseError where e.resultCode.isDamage {
                    // Reading is where damage shows: name the original, not the copy.
                    throw StoreError(.notAStore(detail: "damaged: \(e.message) in table \(copy.sourceTable)"),
                                     path: layout.store(copy.sourceConfiguration))
                }
            }
            // What is not Seam's: its tables with their rows, as they are.
            let original = SchemaSQL.quote(MigrationPlan.Copy.schemaName(file.configuration))
            for o in file.carried where o.kind == .table {
                try db.execute(o.sql)
                try db.execute("INSERT INTO main.\(SchemaSQL.quote(o.name)) SELECT * FROM \(original).\(SchemaSQL.quote(o.name))")
                copied["carried." + o.name] = db.changes
                counts["\(file.configuration).carried.\(o.name)"] = Int(try db.scalar("SELECT count(*) FROM \(original).\(SchemaSQL.quote(o.name))").integerValue ?? -1)
            }
            state.phase = .indexing
            state.entity = nil
            progress(state)
            for copy in file.copies { for sql in copy.afterCopy { try db.execute(sql) } }
            for sql in file.createIndexes { try db.execute(sql) }
            // Its indexes, triggers and views once every row is in (a trigger made sooner would fire).
            for o in file.carried where o.kind != .table { try db.execute(o.sql) }
            try file.metadata.write(to: db)
            if attached.contains(file.configuration) {
                try carryBookkeeping(from: MigrationPlan.Copy.schemaName(file.configuration), into: db)
            }
            try db.execute("COMMIT")
            for configuration in attached.sorted() {
                try db.execute("DETACH DATABASE \(SchemaSQL.quote(MigrationPlan.Copy.schemaName(configuration)))")
            }
            try db.execute("PRAGMA journal_mode=WAL")
            state.phase = .verifying
            progress(state)
            try verify(file, db: db, counts: counts, copied: copied, full: options.fullIntegrityCheck, path: path)
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.close()
            try FileSystem.sync(path)
            state.bytesWritten += FileSystem.size(path) ?? 0
        } catch let e as StoreError {
            try? StoreLayout.removeDatabase(path)
            throw e
        } catch let e as DatabaseError {
            try? StoreLayout.removeDatabase(path)
            throw StoreError(.copyFailed(e), path: layout.store(file.configuration))
        } catch let e as SystemError {
            try? StoreLayout.removeDatabase(path)
            throw StoreError(.copyFailedInFileSystem(e), path: layout.store(file.configuration))
        } catch {
            try? StoreLayout.removeDatabase(path)
            throw StoreError(.stageFailed(detail: "\(error)"), path: layout.store(file.configuration))
        }
    }

    /// Carries what is not schema over to a rebuilt copy: the `seam_store` keys beyond the layout
    /// (the save sequence) and the `seam_`-prefixed bookkeeping tables (history, save journal)
    /// as they are.
    private static func carryBookkeeping(from source: String, into db: Database) throws(DatabaseError) {
        let s = SchemaSQL.quote(source)
        try db.execute("INSERT OR IGNORE INTO main.seam_store SELECT key, value FROM \(s).seam_store")
        let tables = try db.rows("SELECT name, sql FROM \(s).sqlite_schema WHERE type = 'table' AND name LIKE 'seam\\_%' ESCAPE '\\' "
                                 + "AND name NOT IN ('seam_store', 'seam_models')", types: [.string, .string])
        for t in tables {
            guard let name = t[0].stringValue, let sql = t[1].stringValue else { continue }
            try db.execute(sql)
            try db.execute("INSERT INTO main.\(SchemaSQL.quote(name)) SELECT * FROM \(s).\(SchemaSQL.quote(name))")
        }
    }

    /// Makes the copy as a byte copy of the original changed in place (additions and renames only).
    private static func alter(
        _ file: MigrationPlan.FilePlan, statements: [String], original: String, copy path: String, options: MigrationOptions,
        state: inout MigrationProgress, progress: Progress
    ) throws {
        state.phase = .copying
        let written = state.bytesWritten
        state.bytesTotal += FileSystem.size(original) ?? 0
        progress(state)
        try FileSystem.copyFile(original, to: path) { copied in
            state.bytesWritten = written + copied
            progress(state)
        }
        let db = try Database(path: path, options: { var o = Database.Options(); o.create = false; o.memoryMapped = false; return o }())
        try db.execute("BEGIN IMMEDIATE")
        for sql in statements { try db.execute(sql) }
        try file.metadata.write(to: db)
        try db.execute("COMMIT")
        state.phase = .verifying
        progress(state)
        try verify(file, db: db, counts: [:], copied: nil, full: options.fullIntegrityCheck, path: path)
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        try FileSystem.sync(path)
        state.bytesWritten = written + (FileSystem.size(path) ?? 0)
    }

    /// Copies rows with `INSERT … SELECT` in uuid order, one bounded batch at a time. Returns
    /// the number of rows inserted.
    private static func copyRows(
        _ copy: MigrationPlan.Copy, db: Database, batch: Int, state: inout MigrationProgress, progress: Progress
    ) throws(DatabaseError) -> Int {
        let insert = try db.prepare(copy.insertSQL(batch: batch))
        let last = try db.prepare("SELECT max(\"uuid\") FROM main.\(SchemaSQL.quote(copy.entity))")
        var low = AttributeValue.string("")
        var total = 0
        while true {
            try insert.bind([low])
            while try insert.step() {}
            let n = db.changes
            total += n
            state.rowsDone += n
            progress(state)
            if n < batch { return total }
            last.reset()
            guard try last.step() else { return total }
            low = last.column(0, as: .string)
        }
    }

    /// Copies rows one by one through the Swift stages, reading and writing in bounded batches.
    private static func copyRowsThroughStages(
        _ copy: MigrationPlan.Copy, db: Database, batch: Int, path: String, state: inout MigrationProgress, progress: Progress
    ) throws -> Int {
        let q = SchemaSQL.quote
        let select = try db.prepare(copy.selectSQL(batch: batch))
        let insert = try db.prepare(
            "INSERT INTO main.\(q(copy.entity)) (\(copy.columns.map(q).joined(separator: ", "))) VALUES ("
                + copy.columns.indices.map { "?\($0 + 1)" }.joined(separator: ", ") + ")")
        let width = copy.columns.count
        let uuidColumn = copy.columns.firstIndex(of: Entity.identity) ?? 0
        var low = AttributeValue.string("")
        var total = 0
        while true {
            try select.bind([low])
            var rows = 0
            while try select.step() {
                var new = RowSnapshot()
                for (i, name) in copy.columns.enumerated() { new[name] = select.column(i, as: copy.targetTypes[i]) }
                var old = RowSnapshot()
                for (i, c) in copy.sourceColumns.enumerated() { old[c.name] = select.column(width + i, as: c.type) }
                low = select.column(uuidColumn, as: .string)
                try copy.runSwiftStages(old: old, new: &new)
                var values: [AttributeValue] = []
                values.reserveCapacity(width)
                for (i, name) in copy.columns.enumerated() {
                    let v = new[name]
                    if let t = v.type, t != copy.targetTypes[i] {
                        throw StoreError(.stageFailed(detail: "stage set \(copy.entity).\(name) to a \(t.rawValue), "
                                                      + "but it is \(copy.targetTypes[i].rawValue)"), path: path)
                    }
                    values.append(v)
                }
                try insert.bind(values)
                while try insert.step() {}
                rows += 1
            }
            total += rows
            state.rowsDone += rows
            progress(state)
            if rows < batch { return total }
        }
    }

    // MARK: - Verification

    private static func verify(
        _ file: MigrationPlan.FilePlan, db: Database, counts: [String: Int], copied: [String: Int]?, full: Bool, path: String
    ) throws {
        let check = try db.rows(full ? "PRAGMA integrity_check" : "PRAGMA quick_check").compactMap { $0.first?.stringValue }
        guard check == ["ok"] else {
            throw StoreError(.verificationFailed(detail: check.prefix(3).joined(separator: "; ")), path: path)
        }
        let expected = (try Database.schemaDefinitions(file.createTables + file.createIndexes)
            + file.carried.map { [$0.kind.rawValue, $0.name, $0.sql] }).sorted { $0[1] < $1[1] }
        let found = try db.userSchema()
        guard expected == found else {
            throw StoreError(.verificationFailed(detail: Self.shapeDifference(expected: expected, found: found)), path: path)
        }
        for copy in copied == nil ? [] : file.copies {
            let n = copied?[copy.entity] ?? -1
            let want = counts["\(file.configuration).\(copy.entity)"] ?? -1
            guard n == want else {
                throw StoreError(.verificationFailed(detail: "\(n) rows of \(copy.entity) copied, the original has \(want)"),
                                 path: path)
            }
        }
        for o in file.carried where o.kind == .table && copied != nil {
            let n = copied?["carried." + o.name] ?? -1
            let want = counts["\(file.configuration).carried.\(o.name)"] ?? -1
            guard n == want else {
                throw StoreError(.verificationFailed(detail: "\(n) rows of table \(o.name) (not Seam's) kept, the original has \(want)"),
                                 path: path)
            }
        }
        guard let metadata = try StoreMetadata.read(from: db),
              metadata.models.sorted(by: { $0.model < $1.model }) == file.metadata.models.sorted(by: { $0.model < $1.model })
        else {
            throw StoreError(.verificationFailed(detail: "recorded hashes differ from the plan's"), path: path)
        }
    }

    /// Which tables, indexes, triggers and views differ between what a copy should hold and what
    /// it holds, by name: the first few of each side.
    static func shapeDifference(expected: [[String]], found: [[String]]) -> String {
        let missing = expected.filter { !found.contains($0) }.map { "\($0[0]) \($0[1])" }
        let extra = found.filter { !expected.contains($0) }.map { "\($0[0]) \($0[1])" }
        var parts: [String] = []
        if !missing.isEmpty { parts.append("missing or different: " + missing.prefix(5).joined(separator: ", ")) }
        if !extra.isEmpty { parts.append("unexpected: " + extra.prefix(5).joined(separator: ", ")) }
        return "tables, indexes, triggers and views differ from what the plan lays out (\(parts.joined(separator: "; ")))"
    }

    /// Checks copies someone else built (the broker, of the worker's copies) before they are
    /// swapped in: each exists, passes quick_check, has exactly the current tables and indexes,
    /// records the plan's models and hashes, and holds as many rows of each entity as the
    /// original it came from.
    static func verifyBuilt(_ plan: MigrationPlan, layout: StoreLayout) throws(StoreError) {
        for file in plan.files {
            let path = layout.copy(file.configuration)
            guard (FileSystem.size(path) ?? 0) > 0 else {
                throw StoreError(.verificationFailed(detail: "the copy is missing or empty"), path: path)
            }
            do {
                var o = Database.Options()
                o.readOnly = true
                o.uri = true
                let db = try Database(path: Database.readOnlyURI(path), options: o)
                defer { db.close() }
                let attached = file.sources.union(file.carried.contains { $0.kind == .table } ? [file.configuration] : [])
                for configuration in attached.sorted() {
                    let name = SchemaSQL.quote(MigrationPlan.Copy.schemaName(configuration))
                    try db.run("ATTACH DATABASE ? AS \(name)", [.string(Database.readOnlyURI(layout.store(configuration)))])
                }
                var counts: [String: Int] = [:]
                var copied: [String: Int] = [:]
                let own = SchemaSQL.quote(MigrationPlan.Copy.schemaName(file.configuration))
                for o in file.carried where o.kind == .table {
                    let table = SchemaSQL.quote(o.name)
                    counts["\(file.configuration).carried.\(o.name)"] = Int(try db.scalar("SELECT count(*) FROM \(own).\(table)").integerValue ?? 0)
                    copied["carried." + o.name] = Int(try db.scalar("SELECT count(*) FROM main.\(table)").integerValue ?? 0)
                }
                for copy in file.copies {
                    let source = "\(SchemaSQL.quote(MigrationPlan.Copy.schemaName(copy.sourceConfiguration))).\(SchemaSQL.quote(copy.sourceTable))"
                    counts["\(file.configuration).\(copy.entity)"] = Int(try db.scalar("SELECT count(*) FROM \(source)").integerValue ?? 0)
                    copied[copy.entity] = Int(try db.scalar("SELECT count(*) FROM main.\(SchemaSQL.quote(copy.entity))").integerValue ?? 0)
                }
                try verify(file, db: db, counts: counts, copied: copied, full: false, path: path)
            } catch let e as StoreError {
                throw e
            } catch {
                throw StoreError(.verificationFailed(detail: "\(error)"), path: path)
            }
        }
    }

    // MARK: - Swapping

    /// The generation of `backups/` that keeps what `plan` replaces, named by the versions its
    /// files hold now.
    static func generation(for plan: MigrationPlan, layout: StoreLayout) -> BackupGeneration {
        var versions: [String: Int] = [:]
        for f in plan.files { versions.merge(f.fromVersions) { max($0, $1) } }
        return Backups.newGeneration(layout, reason: "migration", stores: plan.files.map(\.configuration), versions: versions)
    }

    /// Records the intent to swap, then swaps every copy in, keeping each original in a new
    /// generation of backups/.
    static func swap(_ configurations: [String], layout: StoreLayout, keeping generation: BackupGeneration) throws(StoreError) -> [String] {
        // A swap that does not begin leaves no copy behind.
        func dropCopies() { for c in configurations { try? StoreLayout.removeDatabase(layout.copy(c)) } }
        // Where the originals go, made before the intent: a swap that cannot keep them never
        // begins, and the originals serve on at their versions.
        do {
            try FileSystem.makeDirectory(layout.backups)
            try Backups.make(generation)
        } catch {
            dropCopies()
            throw StoreError(.system(error), path: generation.path)
        }
        // The build folded each WAL in; one written since holds commits the copy lacks, and
        // the swap would remove it. Nothing is swapped then, and the copies go.
        if let written = configurations.first(where: { (FileSystem.size(layout.store($0) + "-wal") ?? 0) > 0 }) {
            dropCopies()
            throw StoreError(.inUse(detail: "it was written after its migrated copy was built; the copy was dropped, and "
                                    + "the migration can run again"), path: layout.store(written))
        }
        do {
            let intent = CanonicalJSON.object([
                "format": .integer(1), "swap": .array(configurations.map(CanonicalJSON.string)), "backups": .string(generation.name),
            ]).text
            try FileSystem.syncDirectory(layout.directory)
            try FileSystem.writeAtomically(Array(intent.utf8), to: layout.intent)
        } catch {
            dropCopies()
            throw StoreError(.system(error), path: layout.intent)
        }
        return try StoreDirectory.rollForward(layout: layout)
    }

    // MARK: - Helpers

    /// Folds a leftover WAL into its database, so that the file alone is the whole store
    /// (content is unchanged; this is what SQLite does on a clean close). The copy is built from
    /// the file alone, and the swap removes the WAL: a fold that could not finish (another
    /// process's read transaction holds back the last commits) stops the migration, or those
    /// commits would be lost.
    static func foldWAL(_ path: String) throws(StoreError) {
        guard (FileSystem.size(path + "-wal") ?? 0) > 0 else { return }
        let result: [Int64]
        do {
            let db = try Database(path: path, options: { var o = Database.Options(); o.create = false; return o }())
            // busy, frames in the WAL, frames folded in
            result = (try db.rows("PRAGMA wal_checkpoint(TRUNCATE)", types: [.integer, .integer, .integer]).first ?? [])
                .map { $0.integerValue ?? -1 }
            db.close()
        } catch {
            throw StoreError(.database(error), path: path)
        }
        let left = FileSystem.size(path + "-wal") ?? 0
        guard result.count == 3, result[0] == 0, result[1] == result[2], left == 0 else {
            throw StoreError(.inUse(detail: "its last commits could not be folded in from \(path)-wal: another process's read "
                                    + "transaction holds them back"), path: path)
        }
    }
}

extension Database {
    /// The tables and indexes of this database outside Seam's and SQLite's own, as
    /// (type, name, SQL) sorted by name: what "same shape" means when comparing stores.
    public func userSchema() throws(DatabaseError) -> [[String]] {
        try rows("SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'seam\\_%' ESCAPE '\\' "
                 + "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name", types: [.string, .string, .string])
            .map { $0.map { $0.stringValue ?? "" } }
    }

    /// `userSchema()` of a scratch in-memory database made from `statements`: the shape those
    /// statements produce, to compare with a file's.
    public static func schemaFromStatements(_ statements: [String]) throws(DatabaseError) -> [[String]] {
        try schemaDefinitions(statements)
    }

    /// `userSchema()` of a scratch in-memory database made from `statements`.
    static func schemaDefinitions(_ statements: [String]) throws(DatabaseError) -> [[String]] {
        let scratch = try Database(path: ":memory:")
        for s in statements { try scratch.execute(s) }
        return try scratch.userSchema()
    }
}

/// Where each file's build stands; written by the workers, read by the thread that reports.
final class ProgressBoard: Sendable {
    private struct State {
        var perFile: [String: MigrationProgress] = [:]
        var latest: MigrationProgress
        var error: StoreError?
    }

    private let state: Mutex<State>
    private let start: MigrationProgress

    init(_ start: MigrationProgress) {
        self.start = start
        state = Mutex(State(latest: start))
    }

    func publish(_ configuration: String, _ p: MigrationProgress) {
        state.withLock {
            $0.perFile[configuration] = p
            $0.latest = p
        }
    }

    func fail(_ error: StoreError) {
        state.withLock { if $0.error == nil { $0.error = error } }
    }

    var error: StoreError? { state.withLock { $0.error } }

    /// The latest phase and entity, with rows and bytes summed over every file.
    var snapshot: MigrationProgress {
        state.withLock { s in
            var p = s.latest
            p.rowsTotal = s.perFile.values.reduce(0) { $0 + $1.rowsTotal }
            p.rowsDone = s.perFile.values.reduce(0) { $0 + $1.rowsDone }
            p.bytesWritten = s.perFile.values.reduce(0) { $0 + $1.bytesWritten }
            p.bytesTotal = s.perFile.values.reduce(0) { $0 + $1.bytesTotal }
            return p
        }
    }
}
