import SeamSchema
import SeamSystem

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

    /// The fraction done, from rows (0…1).
    public var fraction: Double { rowsTotal == 0 ? (phase == .done ? 1 : 0) : min(1, Double(rowsDone) / Double(rowsTotal)) }
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
        let sources = Set(plan.files.flatMap(\.sources))
        var counts: [String: Int] = [:]
        for configuration in sources {
            try foldWAL(layout.store(configuration))
        }
        var state = MigrationProgress(phase: .preparing, configuration: plan.files[0].configuration, entity: nil,
                                      rowsDone: 0, rowsTotal: 0, bytesWritten: 0)
        for f in plan.files {
            for c in f.copies {
                let n = try count(table: c.sourceTable, in: layout.store(c.sourceConfiguration))
                counts["\(f.configuration).\(c.entity)"] = n
                state.rowsTotal += n
            }
        }
        progress(state)
        for f in plan.files {
            try build(f, layout: layout, options: options, counts: counts, state: &state, progress: progress)
        }
        state.phase = .swapping
        progress(state)
        let backups = try swap(plan.files.map(\.configuration), layout: layout)
        state.phase = .done
        progress(state)
        return MigrationReport(configurations: plan.files.map(\.configuration), rowsCopied: state.rowsDone, backups: backups)
    }

    // MARK: - Building one copy

    private static func build(
        _ file: MigrationPlan.FilePlan, layout: StoreLayout, options: MigrationOptions, counts: [String: Int],
        state: inout MigrationProgress, progress: Progress
    ) throws(StoreError) {
        let path = layout.copy(file.configuration)
        do { try StoreLayout.removeDatabase(path) } catch { throw StoreError(.system(error), path: path) }
        state.configuration = file.configuration
        do {
            var o = Database.Options()
            o.wal = false
            o.uri = true
            let db = try Database(path: path, options: o)
            try db.execute("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000; PRAGMA temp_store=FILE")
            for configuration in file.sources.sorted() {
                try db.run("ATTACH DATABASE ? AS \(SchemaSQL.quote(MigrationPlan.Copy.schemaName(configuration)))",
                           [.string(Database.readOnlyURI(layout.store(configuration)))])
            }
            try db.execute("BEGIN")
            for sql in file.createTables { try db.execute(sql) }
            for copy in file.copies {
                state.phase = .copying
                state.entity = copy.entity
                if copy.stages.isEmpty {
                    try copyRows(copy, db: db, batch: options.batchSize, state: &state, progress: progress)
                } else {
                    try copyRowsThroughStages(copy, db: db, batch: options.batchSize, path: path, state: &state, progress: progress)
                }
            }
            state.phase = .indexing
            state.entity = nil
            progress(state)
            for sql in file.createIndexes { try db.execute(sql) }
            try file.metadata.write(to: db)
            try db.execute("COMMIT")
            for configuration in file.sources.sorted() {
                try db.execute("DETACH DATABASE \(SchemaSQL.quote(MigrationPlan.Copy.schemaName(configuration)))")
            }
            try db.execute("PRAGMA journal_mode=WAL")
            state.phase = .verifying
            progress(state)
            try verify(file, db: db, counts: counts, full: options.fullIntegrityCheck, path: path)
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.close()
            try FileSystem.sync(path)
            state.bytesWritten += FileSystem.size(path) ?? 0
        } catch let e as StoreError {
            try? StoreLayout.removeDatabase(path)
            throw e
        } catch let e as DatabaseError {
            try? StoreLayout.removeDatabase(path)
            throw StoreError(.database(e), path: layout.store(file.configuration))
        } catch let e as SystemError {
            try? StoreLayout.removeDatabase(path)
            throw StoreError(.system(e), path: path)
        } catch {
            try? StoreLayout.removeDatabase(path)
            throw StoreError(.stageFailed(detail: "\(error)"), path: layout.store(file.configuration))
        }
    }

    /// Copies rows with `INSERT … SELECT` in uuid order, one bounded batch at a time.
    private static func copyRows(
        _ copy: MigrationPlan.Copy, db: Database, batch: Int, state: inout MigrationProgress, progress: Progress
    ) throws(DatabaseError) {
        let source = "\(SchemaSQL.quote(MigrationPlan.Copy.schemaName(copy.sourceConfiguration))).\(SchemaSQL.quote(copy.sourceTable))"
        let boundary = try db.prepare("SELECT \"uuid\" FROM \(source) WHERE \"uuid\" > ?1 ORDER BY \"uuid\" LIMIT 1 OFFSET \(batch - 1)")
        let bounded = try db.prepare(copy.insertSQL(bounded: true))
        let rest = try db.prepare(copy.insertSQL(bounded: false))
        var low = AttributeValue.string("")
        while true {
            try boundary.bind([low])
            if try boundary.step() {
                let high = boundary.column(0, as: .string)
                boundary.reset()
                try bounded.bind([low, high])
                while try bounded.step() {}
                state.rowsDone += db.changes
                low = high
                progress(state)
            } else {
                boundary.reset()
                try rest.bind([low])
                while try rest.step() {}
                state.rowsDone += db.changes
                progress(state)
                return
            }
        }
    }

    /// Copies rows one by one through the custom stages, reading and writing in bounded batches.
    private static func copyRowsThroughStages(
        _ copy: MigrationPlan.Copy, db: Database, batch: Int, path: String, state: inout MigrationProgress, progress: Progress
    ) throws {
        let q = SchemaSQL.quote
        let source = "\(q(MigrationPlan.Copy.schemaName(copy.sourceConfiguration))).\(q(copy.sourceTable))"
        let select = try db.prepare(
            "SELECT " + (copy.expressions + copy.sourceColumns.map { q($0.name) }).joined(separator: ", ")
                + " FROM \(source) WHERE \"uuid\" > ?1 ORDER BY \"uuid\" LIMIT \(batch)")
        let insert = try db.prepare(
            "INSERT INTO main.\(q(copy.entity)) (\(copy.columns.map(q).joined(separator: ", "))) VALUES ("
                + copy.columns.indices.map { "?\($0 + 1)" }.joined(separator: ", ") + ")")
        let width = copy.columns.count
        var low = AttributeValue.string("")
        var uuidColumn = copy.sourceColumns.firstIndex { $0.name == Entity.identity } ?? 0
        uuidColumn += width
        while true {
            try select.bind([low])
            var rows = 0
            while try select.step() {
                var new = RowSnapshot()
                for (i, name) in copy.columns.enumerated() { new[name] = select.column(i, as: copy.targetTypes[i]) }
                var old = RowSnapshot()
                for (i, c) in copy.sourceColumns.enumerated() { old[c.name] = select.column(width + i, as: c.type) }
                for stage in copy.stages { try stage.transform(old, &new) }
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
                low = select.column(uuidColumn, as: .string)
                rows += 1
            }
            state.rowsDone += rows
            progress(state)
            if rows < batch { return }
        }
    }

    // MARK: - Verification

    private static func verify(
        _ file: MigrationPlan.FilePlan, db: Database, counts: [String: Int], full: Bool, path: String
    ) throws {
        let check = try db.rows(full ? "PRAGMA integrity_check" : "PRAGMA quick_check").compactMap { $0.first?.stringValue }
        guard check == ["ok"] else {
            throw StoreError(.verificationFailed(detail: check.prefix(3).joined(separator: "; ")), path: path)
        }
        let expected = try Database.schemaDefinitions(file.createTables + file.createIndexes)
        guard expected == (try db.userSchema()) else {
            throw StoreError(.verificationFailed(detail: "tables and indexes differ from the current version's"), path: path)
        }
        for copy in file.copies {
            let n = try db.scalar("SELECT count(*) FROM \(SchemaSQL.quote(copy.entity))").integerValue ?? -1
            let want = counts["\(file.configuration).\(copy.entity)"] ?? -1
            guard n == want else {
                throw StoreError(.verificationFailed(detail: "\(copy.entity) has \(n) rows, the original \(want)"), path: path)
            }
        }
        guard let metadata = try StoreMetadata.read(from: db),
              metadata.models.sorted(by: { $0.model < $1.model }) == file.metadata.models.sorted(by: { $0.model < $1.model })
        else {
            throw StoreError(.verificationFailed(detail: "recorded hashes differ from the plan's"), path: path)
        }
    }

    // MARK: - Swapping

    /// Records the intent to swap, then swaps every copy in, keeping each original in backups/.
    private static func swap(_ configurations: [String], layout: StoreLayout) throws(StoreError) -> [String] {
        do {
            let intent = CanonicalJSON.object([
                "format": .integer(1), "swap": .array(configurations.map(CanonicalJSON.string)),
            ]).text
            try FileSystem.syncDirectory(layout.directory)
            try FileSystem.writeAtomically(Array(intent.utf8), to: layout.intent)
        } catch {
            for c in configurations { try? StoreLayout.removeDatabase(layout.copy(c)) }
            throw StoreError(.system(error), path: layout.intent)
        }
        return try StoreDirectory.rollForward(layout: layout)
    }

    // MARK: - Helpers

    /// Folds a leftover WAL into its database, so that the file alone is the whole store
    /// (content is unchanged; this is what SQLite does on a clean close).
    static func foldWAL(_ path: String) throws(StoreError) {
        guard (FileSystem.size(path + "-wal") ?? 0) > 0 else { return }
        do {
            let db = try Database(path: path, options: { var o = Database.Options(); o.create = false; return o }())
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.close()
        } catch {
            throw StoreError(.database(error), path: path)
        }
    }

    private static func count(table: String, in path: String) throws(StoreError) -> Int {
        do {
            let db = try Database(path: path, options: { var o = Database.Options(); o.readOnly = true; return o }())
            return Int(try db.scalar("SELECT count(*) FROM \(SchemaSQL.quote(table))").integerValue ?? 0)
        } catch {
            throw StoreError(.database(error), path: path)
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

    /// `userSchema()` of a scratch in-memory database made from `statements`.
    static func schemaDefinitions(_ statements: [String]) throws(DatabaseError) -> [[String]] {
        let scratch = try Database(path: ":memory:")
        for s in statements { try scratch.execute(s) }
        return try scratch.userSchema()
    }
}
