import SeamSchema
import SeamSystem

/// A directory of store files for one schema: the place where stores are found, classified,
/// created, migrated and opened.
///
/// Every entry point first finishes or cleans up what a crash may have left: a recorded swap
/// (`migration.intent`) is rolled forward; copies without an intent are deleted. A swap that
/// cannot be rolled forward stops the entry point, except a broker's open
/// (`recoverForService`), which serves the stores the swap does not name and keeps the others
/// closed until it is finished.
public struct StoreDirectory: Sendable {
    public let layout: StoreLayout
    public let schema: Schema

    public init(path: String, schema: Schema) {
        layout = StoreLayout(directory: path)
        self.schema = schema
    }

    // MARK: - Recovery

    /// Finishes an interrupted swap, or removes the leftovers of an interrupted migration.
    /// Returns what it did, in words (empty when there was nothing to do). A swap that cannot
    /// be finished now throws `swapPending`, before anything else is done.
    @discardableResult
    public func recover() throws(StoreError) -> [String] {
        try recover(leavingUnfinishedSwap: false).done
    }

    /// What `recoverForService` did, and the swap it had to leave.
    public struct Recovery: Sendable {
        /// What it did, in words.
        public var done: [String] = []
        /// A swap that stopped part way and cannot be finished now: the stores it names (each may
        /// be half swapped: none may be opened until it is finished) and what stops it (`swapPending`).
        public var unfinishedSwap: (stores: [String], error: StoreError)?
        /// Saves finished in their second file (`SaveJournal.replay`): what each changed there
        /// was told under no number, so whoever serves the stores takes a new one.
        public var replayed = 0
    }

    /// `recover`, for a broker that serves what it can: a swap that cannot be finished now is
    /// left as it is — its intent and copies kept, its stores untouched (no save replayed into
    /// them) — and reported, not thrown; everything else is recovered as usual.
    public func recoverForService() throws(StoreError) -> Recovery {
        try recover(leavingUnfinishedSwap: true)
    }

    private func recover(leavingUnfinishedSwap: Bool) throws(StoreError) -> Recovery {
        guard FileSystem.isDirectory(layout.directory) else { return Recovery() }
        var recovery = Recovery()
        if FileSystem.exists(layout.intent) {
            do {
                let swapped = try Self.rollForward(layout: layout)
                recovery.done.append("finished an interrupted migration swap (\(swapped.count) backups kept)")
            } catch {
                let pending = StoreError(.swapPending(detail: "finishing the swap failed: \(error)"), path: layout.directory)
                guard leavingUnfinishedSwap else { throw pending }
                // An intent that cannot even be read may name any store.
                let named = (try? Self.intentConfigurations(layout)) ?? schema.configurations
                recovery.unfinishedSwap = (named.sorted(), pending)
            }
        }
        let swapping = Set(recovery.unfinishedSwap?.stores ?? [])
        let replayed = try SaveJournal.replay(layout: layout, configurations: schema.configurations.filter { !swapping.contains($0) }) {
            target in
            guard !swapping.contains(target) else { return false }
            // An older store is served (and saved to) at its version until it is migrated.
            let state = (try? classify(target))?.state
            return state == .current || state == .older
        }
        if replayed > 0 { recovery.done.append("finished \(replayed) save(s) interrupted between the two store files") }
        recovery.replayed = replayed
        let names: [String]
        do { names = try FileSystem.contents(of: layout.directory) } catch { throw StoreError(.system(error), path: layout.directory) }
        for name in names where name.hasPrefix(".") && name.contains(".sqlite.migrating") || name == "migration.intent.tmp" {
            let path = FileSystem.join(layout.directory, name)
            // The copies a swap still needs are the only whole new versions of their stores.
            if swapping.contains(where: { path.hasPrefix(layout.copy($0)) }) { continue }
            do { try FileSystem.remove(path) } catch { throw StoreError(.system(error), path: path) }
            recovery.done.append("removed \(name), left by an interrupted migration")
        }
        return recovery
    }

    /// Swaps in every copy named by `migration.intent`, keeping each original in `backups/`,
    /// then removes the intent. Idempotent: safe to repeat after a crash at any point.
    static func rollForward(layout: StoreLayout) throws(StoreError) -> [String] {
        let configurations: [String]
        let generation: String?
        do { (configurations, generation) = try intent(layout) } catch { throw StoreError(.system(error), path: layout.intent) }
        // Where the originals go: the generation the intent names, or (an intent an older build
        // wrote) the one place it kept.
        let keep = generation.map { FileSystem.join(layout.backups, $0) } ?? layout.backups
        var backups: [String] = []
        do {
            try FileSystem.makeDirectory(keep)
            for c in configurations {
                let copy = layout.copy(c)
                let store = layout.store(c)
                guard FileSystem.exists(copy) else { continue }
                if FileSystem.exists(store) {
                    let backup = FileSystem.join(keep, "\(c).sqlite")
                    try StoreLayout.removeDatabase(backup)
                    try FileSystem.link(store, to: backup)
                    backups.append(backup)
                }
                for companion in StoreLayout.companions(store) { try FileSystem.remove(companion) }
                try FileSystem.rename(copy, to: store)
                // A reader of the copy (the broker verifying it) may have left its -shm behind.
                for companion in StoreLayout.companions(copy) { try FileSystem.remove(companion) }
            }
            try FileSystem.syncDirectory(keep)
            try FileSystem.syncDirectory(layout.directory)
            try FileSystem.remove(layout.intent)
            // The swap is done and on the disk. An intent that comes back after a power cut
            // names copies that are gone, and the next roll forward only removes it: a failure
            // to put its removal on the disk is no failure of the swap (said as one, seamd
            // reported the copies as not swapped in, and served the new files as the old).
            try? FileSystem.syncDirectory(layout.directory)
        } catch {
            throw StoreError(.system(error), path: layout.directory)
        }
        return backups
    }

    // MARK: - Classification

    /// Classifies every configuration's file, writing nothing but recovery.
    public func inspect() throws(StoreError) -> [StoreClassification] {
        try recover()
        return try schema.configurations.map { c throws(StoreError) in try classify(c) }
    }

    /// Classifies one configuration's file without writing to it.
    public func classify(_ configuration: String) throws(StoreError) -> StoreClassification {
        let path = layout.store(configuration)
        func result(_ metadata: StoreMetadata?, empty: Bool) -> StoreClassification {
            StoreClassification.classify(configuration: configuration, path: path, metadata: metadata, isEmpty: empty,
                                         schema: schema)
        }
        // Only a plain file is opened: SQLite would block opening a FIFO, follow a link out of the
        // directory (which a swap would then replace with a file), or fail on a directory.
        if let kind = FileSystem.kind(path), kind != "file" {
            throw StoreError(.notAFile(kind: kind), path: path)
        }
        guard let size = FileSystem.size(path), size > 0 else { return result(nil, empty: true) }
        do {
            let db = try openForReading(path) { db throws(StoreError) in try Self.checkHeader(of: db, path: path, size: size) }
            let tables = try db.scalar("SELECT count(*) FROM sqlite_schema").integerValue ?? 0
            let metadata = try StoreMetadata.read(from: db)
            if let metadata, metadata.configuration != configuration {
                throw StoreError(.unknown(detail: "it says it holds configuration '\(metadata.configuration)'"), path: path)
            }
            if let metadata, metadata.format != StoreMetadata.currentFormat {
                // Another layout (a later build's): its tables may not mean what this build reads.
                throw StoreError(.unknown(detail: "its layout is format \(metadata.format); this build reads format "
                                          + "\(StoreMetadata.currentFormat) (a newer Seam may have written it)"), path: path)
            }
            var classification = result(metadata, empty: tables == 0)
            if metadata != nil {
                (classification.foreign, classification.bookkeeping) = try ForeignObjects.read(db, declared: classification.declaredNames)
            }
            return classification
        } catch let e as DatabaseError where Self.saysNotAStore(e) {
            throw StoreError(.notAStore(detail: e.message), path: path)
        } catch let e as DatabaseError {
            // Busy, unreadable, out of memory: a reason to try again, not to move the file aside.
            throw StoreError(.database(e), path: path)
        } catch let e as StoreError {
            throw e
        } catch {
            throw StoreError(.notAStore(detail: "\(error)"), path: path)
        }
    }

    /// Whether SQLite's error says the file is not (or no longer) a database it can read, as
    /// opposed to one it could not read just now.
    static func saysNotAStore(_ e: DatabaseError) -> Bool {
        ![ResultCode.busy, .ioError, .cantOpen, .full, .interrupt, .noMemory, .permission, .locked].contains(e.resultCode.primary)
    }

    /// Opens a store read-only, and has `check` look at it before anything is read. A WAL store
    /// on a read-only file system cannot get its `-shm` file, so there it is read as immutable
    /// (nothing can be writing it anyway).
    private func openForReading(_ path: String, check: (Database) throws(StoreError) -> Void) throws -> Database {
        var o = Database.Options()
        o.readOnly = true
        let firstError: DatabaseError
        do {
            let db = try Database(path: path, options: o)
            try check(db)
            _ = try db.scalar("SELECT count(*) FROM sqlite_schema")
            return db
        } catch let e as DatabaseError {
            firstError = e
        }
        guard firstError.resultCode.matches(.cantOpen), FileSystem.writeProblem(layout.directory) != nil else {
            throw firstError
        }
        o.uri = true
        let db = try Database(path: Database.readOnlyURI(path) + "&immutable=1", options: o)
        try check(db)
        return db
    }

    /// Refuses files that are not SQLite, or are shorter than their header says (truncated),
    /// before SQLite is asked to read them. The header is read through the connection's own
    /// handle of the file (`Database.fileHeader`), never by opening the file again: closing
    /// that would drop the locks this process holds on a store it serves.
    private static func checkHeader(of db: Database, path: String, size: Int64) throws(StoreError) {
        let header: [UInt8]
        do { header = try db.fileHeader(count: 100) } catch { throw StoreError(.database(error), path: path) }
        guard header.count == 100, Array(header[0..<16]) == Array("SQLite format 3\u{0}".utf8) else {
            throw StoreError(.notAStore(detail: "no SQLite header"), path: path)
        }
        var pageSize = Int64(header[16]) << 8 | Int64(header[17])
        if pageSize == 1 { pageSize = 65536 }
        let pages = header[28..<32].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let changeCounter = Array(header[24..<28])
        let validFor = Array(header[92..<96])
        let hasWAL = (FileSystem.size(path + "-wal") ?? 0) > 0
        if !hasWAL, changeCounter == validFor, pages > 0, size < pages * pageSize {
            throw StoreError(.notAStore(detail: "truncated: \(size) bytes, the header says \(pages * pageSize)"), path: path)
        }
    }

    // MARK: - Migration

    /// The plan that would bring every file to the current versions; refuses newer and unknown files.
    public func plan() throws(StoreError) -> MigrationPlan {
        let classifications = try inspect()
        try refuseUnusable(classifications)
        return try MigrationPlanner.plan(classifications, schema: schema)
    }

    /// Migrates every outdated file, on copies, swapping them in only when all verify.
    public func migrate(
        options: MigrationOptions = MigrationOptions(), progress: (MigrationProgress) -> Void = { _ in }
    ) throws(StoreError) -> MigrationReport {
        let plan = try plan()
        if !plan.isEmpty { try requireWritable() }
        return try MigrationExecutor.run(plan, layout: layout, options: options, progress: progress)
    }

    // MARK: - Migration in service (the broker and its worker)

    /// The plan for the files as they stand, without recovery: for a broker that holds stores
    /// open (recovery is for when nobody does). Refuses only what the plan would have to read.
    public func planInService() throws(StoreError) -> MigrationPlan {
        var classifications: [StoreClassification] = []
        for c in schema.configurations { classifications.append(try classify(c)) }
        let plan = try MigrationPlanner.plan(classifications.filter { $0.state != .newer && $0.state != .unknown }, schema: schema)
        let touched = Set(plan.files.map(\.configuration)).union(plan.files.flatMap(\.sources))
        try refuseUnusable(classifications.filter { touched.contains($0.configuration) })
        if !plan.isEmpty { try requireWritable() }
        return plan
    }

    /// The configurations a plan reads or writes: those the broker closes while it runs.
    public static func touched(by plan: MigrationPlan) -> [String] {
        Set(plan.files.map(\.configuration)).union(plan.files.flatMap(\.sources)).sorted()
    }

    /// Builds and verifies the plan's copies beside the originals, which it only reads; the
    /// copies wait there for `swapIn` (the worker's part). On failure no copy is left.
    public func buildCopies(
        _ plan: MigrationPlan, options: MigrationOptions = MigrationOptions(), progress: (MigrationProgress) -> Void = { _ in }
    ) throws(StoreError) -> MigrationProgress {
        guard !plan.isEmpty else { return MigrationProgress(phase: .done, configuration: "") }
        return try MigrationExecutor.build(plan, layout: layout, options: options, progress: progress)
    }

    /// Verifies copies built by another process (quick_check, shape, hashes, row counts
    /// against the originals), then swaps them in as a set, keeping each original in
    /// `backups/` (the broker's part). Returns the backups. Nothing is swapped unless all verify.
    public func swapIn(_ plan: MigrationPlan) throws(StoreError) -> [String] {
        try verifyCopies(plan)
        return try swapVerified(plan)
    }

    /// The check of `swapIn`, alone: it only reads, so it may run on any thread.
    public func verifyCopies(_ plan: MigrationPlan) throws(StoreError) {
        try MigrationExecutor.verifyBuilt(plan, layout: layout)
    }

    /// The configurations `migration.intent` names (a file that does not parse names none).
    static func intentConfigurations(_ layout: StoreLayout) throws(SystemError) -> [String] {
        try intent(layout).configurations
    }

    /// What `migration.intent` says: the configurations to swap, and the generation of
    /// `backups/` that keeps the originals (nil in an intent from a build that kept one).
    static func intent(_ layout: StoreLayout) throws(SystemError) -> (configurations: [String], backups: String?) {
        let text = String(decoding: try FileSystem.read(layout.intent), as: UTF8.self)
        let intent = try? JSONText.parse(text)
        // A generation's name is one path component, or it is not used.
        let backups = intent?["backups"]?.stringValue.flatMap { $0.isEmpty || $0.contains("/") || $0.hasPrefix(".") ? nil : $0 }
        return (intent?["swap"]?.arrayValue?.compactMap(\.stringValue) ?? [], backups)
    }

    /// The configurations a swap that began and did not end (`migration.intent`) names; every
    /// one when the intent cannot be read (it may name any), as `recoverForService` takes it.
    public var unfinishedSwap: Set<String> {
        guard FileSystem.exists(layout.intent) else { return [] }
        return Set((try? Self.intentConfigurations(layout)) ?? schema.configurations)
    }

    /// The swap of `swapIn`, alone, for copies `verifyCopies` passed.
    public func swapVerified(_ plan: MigrationPlan) throws(StoreError) -> [String] {
        try MigrationExecutor.swap(plan.files.map(\.configuration), layout: layout,
                                   keeping: MigrationExecutor.generation(for: plan, layout: layout))
    }

    /// Removes what a failed or abandoned migration of `configurations` left: copies and their
    /// companions. Returns the names removed. Copies that `migration.intent` names are kept:
    /// their swap began, and only rolling it forward (`recover`) leaves the stores whole.
    @discardableResult
    public func removeCopies(_ configurations: [String]) -> [String] {
        let swapping = unfinishedSwap
        var removed: [String] = []
        for c in configurations where !swapping.contains(c) {
            for path in [layout.copy(c)] + StoreLayout.companions(layout.copy(c)) where FileSystem.exists(path) {
                if (try? FileSystem.remove(path)) != nil { removed.append(String(path.split(separator: "/").last ?? "")) }
            }
        }
        return removed
    }

    /// Opens one classified store for service at the version it holds: creates a new one at
    /// the current versions; refuses a newer or unknown one.
    public func openStore(_ c: StoreClassification, durability: Durability) throws(StoreError) -> Database {
        switch c.state {
        case .newer, .unknown: try refuseUnusable([c])
        case .new, .current, .older: break
        }
        do { try FileSystem.makeDirectory(layout.directory) } catch { throw StoreError(.system(error), path: layout.directory) }
        var o = Database.Options()
        o.durability = durability
        do {
            let db = try Database(path: c.path, options: o)
            if c.state == .new { try create(c.configuration, in: db) }
            return db
        } catch {
            throw StoreError(.database(error), path: c.path)
        }
    }

    private func requireWritable() throws(StoreError) {
        if let problem = FileSystem.writeProblem(layout.directory) {
            throw StoreError(.readOnly(detail: problem.message), path: layout.directory)
        }
    }

    private func refuseUnusable(_ classifications: [StoreClassification]) throws(StoreError) {
        for c in classifications {
            switch c.state {
            case .newer:
                for (name, status) in c.models {
                    if case .newer(let label) = status {
                        throw StoreError(.newer(model: name, storedVersion: label,
                                                knownVersion: schema.model(name)?.current.version ?? 0), path: c.path)
                    }
                }
            case .unknown:
                let detail = c.models.compactMap { _, s -> String? in if case .unknown(let d) = s { return d } else { return nil } }
                throw StoreError(.unknown(detail: detail.joined(separator: "; ")), path: c.path)
            default: break
            }
        }
    }

    // MARK: - Opening

    /// Opens every configuration's store for use: creates new ones, refuses newer and unknown
    /// ones, and migrates outdated ones first when `migrate` is true (else refuses them).
    ///
    /// A current store is opened without a single write.
    public func open(
        durability: Durability = .normal, migrate: Bool = false, progress: (MigrationProgress) -> Void = { _ in }
    ) throws(StoreError) -> [String: Database] {
        do { try FileSystem.makeDirectory(layout.directory) } catch { throw StoreError(.system(error), path: layout.directory) }
        var classifications = try inspect()
        try refuseUnusable(classifications)
        if classifications.contains(where: { $0.state == .older }) {
            try requireWritable()
            guard migrate else {
                let older = classifications.filter { $0.state == .older }
                throw StoreError(.needsMigration(detail: older.map(\.summary).joined(separator: "; ")), path: layout.directory)
            }
            let plan = try MigrationPlanner.plan(classifications, schema: schema)
            var options = MigrationOptions()
            options.durability = durability
            _ = try MigrationExecutor.run(plan, layout: layout, options: options, progress: progress)
            classifications = try inspect()
        }
        var out: [String: Database] = [:]
        for c in classifications {
            var o = Database.Options()
            o.durability = durability
            do {
                let db = try Database(path: c.path, options: o)
                if c.state == .new { try create(c.configuration, in: db) }
                out[c.configuration] = db
            } catch {
                throw StoreError(.database(error), path: c.path)
            }
        }
        return out
    }

    /// Lays out a new store at the current versions, in one transaction.
    private func create(_ configuration: String, in db: Database) throws(DatabaseError) {
        try db.execute("BEGIN IMMEDIATE")
        do {
            var records: [StoreMetadata.ModelRecord] = []
            for model in schema.models(in: configuration) {
                for sql in SchemaSQL.create(model.current, configuration: configuration) { try db.execute(sql) }
                records.append(StoreMetadata.record(model.current, configuration: configuration))
            }
            try StoreMetadata(configuration: configuration, format: StoreMetadata.currentFormat, models: records).write(to: db)
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }
}
