import SeamSchema
import SeamSystem

/// A backup set: every store of a data directory as one consistent moment, made by `seam backup
/// DIR` (while seamd serves, or offline) and put back by `seam restore DIR`.
///
/// ```
/// DIR/Cloud.sqlite        each store, a whole SQLite file (its WAL folded in)
/// DIR/Local.sqlite
/// DIR/sequence.lease      the data directory's lease when the set was taken
/// DIR/seam-backup.json    {"format":1,"createdAt","dataDirectory","sequence","stores":{"Cloud":{"bytes","versions"},…}}
/// ```
public struct BackupSet: Sendable, Equatable {
    public static let manifestName = "seam-backup.json"

    /// One store in the set.
    public struct Store: Sendable, Equatable {
        public var name: String
        public var bytes: Int64
        /// Model name → the version the file holds.
        public var versions: [String: Int]
        public init(name: String, bytes: Int64, versions: [String: Int]) {
            self.name = name
            self.bytes = bytes
            self.versions = versions
        }
    }

    public var directory: String
    /// Unix seconds.
    public var createdAt: Double
    /// The data directory the set was taken from.
    public var dataDirectory: String
    /// The save sequence the set holds everything through.
    public var sequence: Int64
    public var stores: [Store]

    public init(directory: String, createdAt: Double, dataDirectory: String, sequence: Int64, stores: [Store]) {
        self.directory = directory
        self.createdAt = createdAt
        self.dataDirectory = dataDirectory
        self.sequence = sequence
        self.stores = stores
    }

    public func file(_ store: String) -> String { FileSystem.join(directory, "\(store).sqlite") }
    public var leaseFile: String { FileSystem.join(directory, "sequence.lease") }
    public var manifestFile: String { FileSystem.join(directory, Self.manifestName) }

    /// The manifest's text.
    public var manifest: String {
        CanonicalJSON.object([
            "format": .integer(1), "createdAt": .integer(Int64(createdAt)), "dataDirectory": .string(dataDirectory),
            "sequence": .integer(sequence),
            "stores": .object(Dictionary(uniqueKeysWithValues: stores.map { s in
                (s.name, CanonicalJSON.object(["bytes": .integer(s.bytes),
                                               "versions": .object(s.versions.mapValues { CanonicalJSON.integer(Int64($0)) })]))
            })),
        ]).text
    }

    /// Why a set cannot be read or put back, in words that say what to do.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// A directory to take a set into: it must not exist yet, or be empty.
    public static func prepare(_ directory: String) throws(Problem) {
        if FileSystem.exists(directory) {
            guard FileSystem.isDirectory(directory) else { throw Problem("\(directory) exists and is not a directory; give a new one") }
            let names = (try? FileSystem.contents(of: directory)) ?? []
            guard names.isEmpty else {
                throw Problem("\(directory) is not empty; a backup set goes into a new (or empty) directory, so that no set is "
                              + "overwritten or mixed with another")
            }
        }
        do { try FileSystem.makeDirectory(directory) } catch { throw Problem("cannot make \(directory): \(error)") }
    }

    /// Reads the set in `directory`: its manifest, and every store file it names present.
    public static func read(_ directory: String) throws(Problem) -> BackupSet {
        let path = FileSystem.join(directory, manifestName)
        guard FileSystem.isDirectory(directory) else { throw Problem("\(directory) is not a directory holding a backup set") }
        let bytes: [UInt8]
        do { bytes = try FileSystem.read(path) } catch {
            throw Problem("\(directory) holds no \(manifestName), so it is not a set `seam backup` made (\(error))")
        }
        guard let m = try? JSONText.parse(String(decoding: bytes, as: UTF8.self)), m["format"]?.int64Value == 1,
              let created = m["createdAt"]?.int64Value, let source = m["dataDirectory"]?.stringValue,
              let sequence = m["sequence"]?.int64Value, let stores = m["stores"]?.objectValue, !stores.isEmpty
        else { throw Problem("\(path) is not a backup manifest this build reads (format 1)") }
        var set = BackupSet(directory: directory, createdAt: Double(created), dataDirectory: source, sequence: sequence, stores: [])
        for (name, s) in stores.sorted(by: { $0.0 < $1.0 }) {
            var versions: [String: Int] = [:]
            for (model, v) in s["versions"]?.objectValue ?? [] { if let n = v.int64Value { versions[model] = Int(n) } }
            set.stores.append(Store(name: name, bytes: s["bytes"]?.int64Value ?? 0, versions: versions))
            guard FileSystem.kind(set.file(name)) == "file" else {
                throw Problem("the set in \(directory) lacks \(name).sqlite, which its manifest names; it cannot be restored "
                              + "in part (a store without the other may hold links to rows that are gone)")
            }
        }
        return set
    }

    /// Writes the set: each store copied from its reader (a connection holding a read
    /// transaction, so that every store is the same moment) through SQLite's backup API into
    /// `directory`, then the lease's text and the manifest; `progress(store, pages done, pages
    /// total)` as it goes. On failure, nothing it wrote is left. Returns the set, sizes filled in.
    public func write(from readers: [(name: String, db: Database)], leaseText: [UInt8],
                      progress: (String, Int64, Int64) -> Void = { _, _, _ in }) throws(Problem) -> BackupSet {
        var set = self
        var made: [String] = []
        do {
            let total = readers.reduce(Int64(0)) { $0 + Int64($1.db.pageCount) }
            var before: Int64 = 0
            for (name, db) in readers {
                let partial = FileSystem.join(directory, ".\(name).sqlite.partial")
                made.append(partial)
                try db.backup(to: partial) { done, _ in progress(name, before + Int64(done), total) }
                before += Int64(db.pageCount)
                try FileSystem.rename(partial, to: file(name))
                made.append(file(name))
                if let i = set.stores.firstIndex(where: { $0.name == name }) { set.stores[i].bytes = FileSystem.size(file(name)) ?? 0 }
            }
            if !leaseText.isEmpty {
                try FileSystem.writeAtomically(leaseText, to: leaseFile)
                made.append(leaseFile)
            }
            try FileSystem.writeAtomically(Array(set.manifest.utf8), to: manifestFile)
            try FileSystem.syncDirectory(directory)
            return set
        } catch {
            for path in made { try? StoreLayout.removeDatabase(path) }
            throw Problem("the backup into \(directory) failed (\(error)); what it had written there was removed")
        }
    }

    /// Takes a set of a data directory no seamd serves (its `seamd.lock` taken meanwhile): every
    /// configuration's store, which must all exist and be readable by this build.
    public static func take(from layout: StoreLayout, schema: Schema, into directory: String,
                            progress: (String, Int64, Int64) -> Void = { _, _, _ in }) throws(Problem) -> BackupSet {
        let lock = try Self.lockOffline(layout)
        defer { withExtendedLifetime(lock) {} }
        let stores = StoreDirectory(path: layout.directory, schema: schema)
        var readers: [(name: String, db: Database)] = []
        var set = BackupSet(directory: directory, createdAt: WallClock.now(), dataDirectory: layout.directory, sequence: 0, stores: [])
        for name in schema.configurations {
            let c: StoreClassification
            do { c = try stores.classify(name) } catch { throw Problem("\(name): \(error)") }
            guard c.state != .new else { throw Problem("\(layout.store(name)) does not exist (or is empty): there is nothing to back up") }
            var versions: [String: Int] = [:]
            for (model, status) in c.models { if let v = status.source { versions[model] = v.version } }
            set.stores.append(Store(name: name, bytes: 0, versions: versions))
            do {
                var o = Database.Options()
                o.readOnly = true
                let db = try Database(path: layout.store(name), options: o)
                try db.execute("BEGIN")
                set.sequence = max(set.sequence, try SaveJournal.sequence(in: db))
                readers.append((name, db))
            } catch {
                throw Problem("cannot read \(layout.store(name)): \(error)")
            }
        }
        try prepare(directory)
        let lease = (try? FileSystem.read(layout.sequenceLease)) ?? []
        return try set.write(from: readers, leaseText: lease, progress: progress)
    }

    /// Puts the set back into a data directory no seamd serves: checked (`validate`), staged, and
    /// swapped in, the files it replaces kept in backups/. The lease is left as it is: it holds
    /// the highest number told, so the next start numbers saves past it and every resume from
    /// before gets a fresh result. Returns the files kept.
    public func restoreOffline(into layout: StoreLayout, schema: Schema, fromElsewhere: Bool,
                               progress: (Int64, Int64) -> Void = { _, _ in }) throws(Problem) -> [String] {
        let lock = try Self.lockOffline(layout)
        defer { withExtendedLifetime(lock) {} }
        let stores = StoreDirectory(path: layout.directory, schema: schema)
        do { try stores.recover() } catch { throw Problem("\(error)") }
        try validate(for: schema, into: layout, fromElsewhere: fromElsewhere)
        var replaced: [String: Int] = [:]
        for name in schema.configurations {
            for (model, status) in (try? stores.classify(name))?.models ?? [] {
                if let v = status.source { replaced[model] = max(replaced[model] ?? 0, v.version) }
            }
        }
        do { try FileSystem.makeDirectory(layout.directory) } catch { throw Problem("cannot make \(layout.directory): \(error)") }
        try stage(into: layout, progress: progress)
        do { return try Self.swap(schema.configurations, into: layout, replacing: replaced) } catch {
            stores.removeCopies(schema.configurations)
            throw Problem("the set's files could not be swapped in: \(error)")
        }
    }

    /// `seamd.lock` of a data directory, for work done while no seamd serves it.
    static func lockOffline(_ layout: StoreLayout) throws(Problem) -> FileLock? {
        guard FileSystem.isDirectory(layout.directory) else { return nil }
        let path = FileSystem.join(layout.directory, "seamd.lock")
        do { return try FileLock(path: path) } catch where error.errno == SystemError.wouldBlock {
            throw Problem("a seamd serves \(layout.directory) (\(path) is locked) but did not answer; do this through it "
                          + "(--socket), or stop it first")
        } catch {
            throw Problem("cannot lock \(path): \(error)")
        }
    }

    /// Checks that the set can be put back into `layout` for `schema`: every configuration of the
    /// schema present, each file readable by this build (not newer, not unknown) and passing
    /// `quick_check`, and taken from that data directory unless `fromElsewhere`.
    public func validate(for schema: Schema, into layout: StoreLayout, fromElsewhere: Bool) throws(Problem) {
        let missing = schema.configurations.filter { c in !stores.contains { $0.name == c } }
        guard missing.isEmpty else {
            throw Problem("the set in \(directory) has no \(missing.joined(separator: ", ")) store; it cannot be restored in part")
        }
        if !fromElsewhere, dataDirectory != layout.directory {
            throw Problem("the set in \(directory) was taken from \(dataDirectory), not \(layout.directory); restoring another "
                          + "directory's stores here replaces this one's. If that is what you want, say so with --from-elsewhere")
        }
        let setDirectory = StoreDirectory(path: directory, schema: schema)
        for store in stores {
            let c: StoreClassification
            do { c = try setDirectory.classify(store.name) } catch { throw Problem("\(store.name) in the set: \(error)") }
            switch c.state {
            case .newer: throw Problem("\(store.name) in the set was written by a newer Seam (\(c.summary)); restore it with that build")
            case .unknown: throw Problem("\(store.name) in the set holds a shape this build does not know (\(c.summary))")
            case .new: throw Problem("\(store.name) in the set is empty")
            case .current, .older: break
            }
            var o = Database.Options()
            o.readOnly = true
            o.uri = true
            do {
                let db = try Database(path: Database.readOnlyURI(file(store.name)) + "&immutable=1", options: o)
                let problems = try db.check(quick: true)
                db.close()
                guard problems.isEmpty else {
                    throw Problem("\(store.name) in the set is damaged (quick_check: \(problems.prefix(2).joined(separator: "; ")))")
                }
            } catch let p as Problem {
                throw p
            } catch {
                throw Problem("\(store.name) in the set cannot be read: \(error)")
            }
        }
    }

    /// Copies the set's store files beside the stores of `layout`, as the copies a swap takes
    /// (`StoreLayout.copy`), flushed: `MigrationExecutor.swap` then puts them in place, keeping the
    /// files they replace in a generation of backups/ (reason "restore").
    public func stage(into layout: StoreLayout, progress: (Int64, Int64) -> Void = { _, _ in }) throws(Problem) {
        let total = stores.reduce(Int64(0)) { $0 + (FileSystem.size(file($1.name)) ?? 0) }
        var done: Int64 = 0
        for store in stores {
            let copy = layout.copy(store.name)
            do {
                try StoreLayout.removeDatabase(copy)
                let before = done
                try FileSystem.copyFile(file(store.name), to: copy) { copied in progress(before + copied, total) }
                done += FileSystem.size(copy) ?? 0
                try FileSystem.sync(copy)
            } catch {
                for s in stores { try? StoreLayout.removeDatabase(layout.copy(s.name)) }
                throw Problem("cannot copy \(store.name).sqlite from the set into \(layout.directory): \(error)")
            }
        }
    }

    /// Puts staged copies in place (see `stage`), keeping the files they replace in a new
    /// generation of backups/ with reason "restore". Returns the files kept.
    public static func swap(_ configurations: [String], into layout: StoreLayout, replacing versions: [String: Int])
        throws(StoreError) -> [String] {
        let generation = Backups.newGeneration(layout, reason: "restore", stores: configurations, versions: versions)
        return try MigrationExecutor.swap(configurations, layout: layout, keeping: generation)
    }
}
