import SeamQuery
import SeamSchema
import SeamStore
import SeamSystem

/// One context over every store of a schema: the split-store pattern in library form.
///
/// An insert goes to the only store whose configuration holds the entity; fetches, counts,
/// updates, deletes and saves work without the caller knowing which file a row is in. The
/// in-memory `Default` store runs the same code paths with every entity in one database.
///
/// A context is used from one thread at a time (the broker serialises its calls).
///
/// **What a save promises.** A save is all or nothing as seen by any later reader, even across a
/// crash (SIGKILL or power cut) at any point: a save that touches one file is one SQLite
/// transaction; one that touches both commits the first file with an intent record and then the
/// second, and an interrupted pair is finished when the directory is next opened (see
/// `SaveJournal`); whatever the durability, the intent is on the disk before the second file
/// commits, and the second file before the intent goes. A save that returned is durable as its
/// durability setting says. A save that throws changed nothing in either file — but for one
/// whose second file could not commit even on a second try (a full disk): its error says so,
/// its sequence number is taken, and it is finished before the next save (which is refused,
/// unchanged, while it cannot be) or when the directory is next opened.
public final class Context {
    public struct Options: Sendable {
        public var durability: Durability = .normal
        /// Migrate outdated stores on open (else opening them is an error).
        public var migrate = true
        /// How many recent change sets to keep in memory for readers that fell behind.
        public var ringCapacity = 1024
        /// The configuration whose changes are kept as persistent history (the one that syncs).
        public var historyConfiguration = "Cloud"
        /// Models of the history configuration whose rows never sync (the sync worker's own
        /// bookkeeping): not held to the bounds of a synced record (`Values.checkSynced`).
        public var unsyncedModels: Set<String> = ["SyncMetadata"]
        /// History older than this (seconds) is purged on its own, unless sync is configured.
        public var historyRetention: Double = 7 * 24 * 3600
        /// Whether sync runs when the context opens (see `Context.syncConfigured`, which follows it after).
        public var syncConfigured = false
        /// Authors whose saves are kept out of the persistent history: the sync worker's own
        /// imports, which are never exported (keeping them would only cost time and space).
        public var historyIgnoresAuthors: Set<String> = []
        /// For a broker that migrates through its worker: an outdated store is opened at the
        /// version it holds (and migrated later), and a newer, unknown or unreadable one — or
        /// one a migration's swap that cannot be finished names — is kept closed, so that the
        /// other stores still serve. Off: outdated stores are migrated
        /// on open (`migrate`), and any unusable store fails the open.
        public var servesOutdated = false
        /// For crash tests: runs after the first file of a two-file save commits and before the
        /// second does — the moment the save journal exists for.
        public var betweenCommits: (@Sendable () -> Void)?
        /// For an owner that works out what to tell of a save while the disk takes it (the
        /// broker's diffs): with full durability, a save that touches one store returns with its
        /// commit on its way to the disk, and the owner calls `syncCommits()` before it tells
        /// anyone of it — after more saves, if it likes: one sync then covers them all (the
        /// broker's group commit). Off: every save is on the disk when it returns.
        public var defersSync = false
        /// Checks each store file as it opens (`PRAGMA quick_check`, on a thread of its own): it
        /// serves reads meanwhile and takes writes once the check has passed; one that fails is
        /// closed as damaged (see `Context+Integrity`).
        public var checksAtOpen = false
        /// Before each write transaction, checks that each store's path still names the file it
        /// opened, and puts it back if not (`Context+Integrity`). Off only to measure what it costs.
        public var verifiesFilesBeforeWrites = true
        /// WAL frames after which each store's checkpointer copies them back (`Checkpointer.threshold`).
        public var checkpointFrames = 4_000
        public init() {}
    }

    public let schema: Schema
    public let options: Options
    /// Whether a sync worker exports the history: while it does, history goes only when exported
    /// (`purgeHistory(through:)`), never by age. Starts as `Options.syncConfigured`; the owner
    /// sets it when sync is set up or removed while the context is open.
    public var syncConfigured: Bool
    /// The store directory, or nil for the in-memory store.
    public let directory: String?
    /// The open stores.
    var stores: [String: StoreHandle] = [:]
    /// Why each store that is not open is closed, in words.
    public internal(set) var closedStores: [String: String] = [:]
    /// Per open store: model name → the version it is served at (older while a store awaits migration).
    public internal(set) var servedVersions: [String: [String: ModelVersion]] = [:]
    /// Entity name → its definition (as its store holds it) and the store, for open stores only.
    var routes: [String: (entity: Entity, store: String)] = [:]
    /// Target entity name → the links that point at it, as each source's store is served: the
    /// served version's links for an open store (an outdated one served until it is migrated
    /// has its own), the current version's for a closed one (so that a delete that would reach
    /// into it is refused, not left half done).
    var incoming: [String: [(entity: Entity, link: Link)]]
    /// The sequence number of the last committed save.
    public internal(set) var sequence: Int64
    /// What opening the stores recovered (a migration's swap finished, saves finished in their
    /// second file, leftovers removed), in words, for the owner's log.
    public internal(set) var recovered: [String] = []
    public internal(set) var ring: ChangeRing
    /// Saves across two files whose first file committed, with the intent, but whose second could
    /// not even on a second try: finished before the next save (`finishUnfinished`), or by
    /// recovery at the next open.
    var unfinished: [UnfinishedSave] = []
    /// `StoreLayout.openMarker`, while this context keeps it (see `Context+Sequence`).
    var openMarker: String?
    /// Set when a start's sequence jump could not be recorded yet (no store was open).
    var sequenceJumpUnrecorded = false
    /// `StoreLayout.sequenceLease` and the number it holds, once this context has read it.
    var lease: (path: String, through: Int64)?
    /// Set when the stores changed in a way no change set told (a save committed in part, or such
    /// a part finished later): whoever keeps results of queries must fetch them again.
    public internal(set) var resultsInvalidated = false
    /// What an insert of each routed entity starts from (`InsertTemplate`).
    var insertTemplates: [String: InsertTemplate] = [:]
    /// The history's writer, with each entity's keys in the order it writes them.
    var historyText = HistoryText()
    /// The group of saves committed together, while one is open (`Context+Group`).
    var group: Group?
    /// The save being written in steps, while one is (`Context+Steps`).
    var stepped: SteppedSave?

    /// Whether `resultsInvalidated` was set, clearing it: for the one owner that refetches.
    public func takeResultsInvalidated() -> Bool {
        defer { resultsInvalidated = false }
        return resultsInvalidated
    }
    var readers: [String: Database] = [:]
    /// Stores whose file is being checked since it opened (`Options.checksAtOpen`): they serve
    /// reads, and take writes once the check has passed.
    public internal(set) var checking: Set<String> = []
    /// Stores found damaged — at open, by a check, or by SQLite at run time — with what was found.
    /// Each is closed (no write reaches it) until it opens again.
    public internal(set) var damaged: [String: String] = [:]
    /// Open stores whose file can only be read, with why: reads work, saves are refused.
    public internal(set) var readOnly: [String: String] = [:]
    /// Stores found at open to hold an older save sequence than they closed with (put back from an
    /// older copy while nothing served them), with what that means: served, and said.
    public internal(set) var olderThanTold: [String: String] = [:]
    /// The file each open store was opened from: a store whose path names another file (or
    /// none) is put back before it is written again (`putBack`).
    var identities: [String: FileSystem.Identity] = [:]
    /// What says that a store's path may name another file now (`fileChanged`): until it says so,
    /// the path is not looked at. Made at the first check; nil without inotify (then every check
    /// looks).
    var fileWatch: DirectoryWatch?
    var fileWatchMade = false
    /// Store files (`NAME.sqlite`) the watch reported, not looked at since.
    var suspectFiles: Set<String> = []
    /// Checks that finished, from the checking threads, for `collectChecks()`.
    let finishedChecks = Mailbox<FinishedCheck>()
    /// Bumped at each attach of a store, so that a check of a file since closed is ignored.
    var attachments: [String: Int] = [:]
    /// Entity → whether its rows sync (`isSynced`), as asked.
    var syncedEntities: [String: Bool] = [:]
    /// Entity → its attributes the sync worker seals (`encrypted`): counted at their sealed size
    /// against a synced record's bound (`Values.checkSynced`).
    var sealedAttributes: [String: Set<String>] = [:]
    /// Notified from a checking thread when a check has finished: the owner then calls
    /// `collectChecks()` on its own thread.
    public let checkFinished = Notifier()
    /// What the context did on its own that its owner should log (a store's file put back).
    var notices: [Notice] = []
    /// One per open store file: checkpoints happen off the thread that saves.
    var checkpointers: [String: Checkpointer] = [:]
    /// Entity name → its attribute names, in order (shared by every change set).
    var attributeNames: [String: [String]] = [:]
    /// Where new rows' uuids come from: the kernel's randomness, drawn in bulk.
    var random = RandomBuffer()
    /// The keys of rows inserted without one (`newUUID`).
    var uuids = TimeOrderedUUIDs()
    /// Parsed predicates by their text: parsing is the costly part of a repeated fetch.
    var parsedPredicates: [String: ParsedPredicate] = [:]

    /// Opens (creating or migrating as needed) the stores of `schema` in `directory`.
    public init(directory: String, schema: Schema, options: Options = Options()) throws(ContextError) {
        self.schema = schema
        self.options = options
        syncConfigured = options.syncConfigured
        self.directory = directory
        incoming = Self.incomingLinks(schema)
        ring = ChangeRing(capacity: options.ringCapacity)
        sequence = 0
        let storeDirectory = StoreDirectory(path: directory, schema: schema)
        if options.servesOutdated {
            try openEach(storeDirectory)
        } else {
            let opened: [String: Database]
            do {
                opened = try storeDirectory.open(durability: options.durability, migrate: options.migrate)
            } catch {
                throw ContextError(.store(error))
            }
            let current = Dictionary(uniqueKeysWithValues: schema.models.map { ($0.name, $0.current) })
            for (name, db) in opened.sorted(by: { $0.key < $1.key }) {
                do { try attach(name, db: db, versions: current) } catch {
                    for c in checkpointers.values { c.stop() }
                    throw error
                }
            }
        }
        try markOpen(storeDirectory.layout)
        try takeLease(storeDirectory.layout)
    }

    /// Opens every store that can be served, each at the version it holds; the rest stay
    /// closed with the reason. A new store is not created while another is outdated: the
    /// migration may have to build it from the other (an entity that moved between files).
    private func openEach(_ directory: StoreDirectory) throws(ContextError) {
        do { try FileSystem.makeDirectory(directory.layout.directory) } catch {
            throw ContextError(.store(StoreError(.system(error), path: directory.layout.directory)))
        }
        let recovery: StoreDirectory.Recovery
        do { recovery = try directory.recoverForService() } catch { throw ContextError(.store(error)) }
        recovered = recovery.done
        if let (stores, error) = recovery.unfinishedSwap {
            // Half swapped, a store is not served (its other half may be at another version), nor
            // opened for anything but reading the sequence numbers it used.
            for name in stores where schema.configurations.contains(name) {
                closedStores[name] = Self.unfinishedSwapReason(error)
                sequence = max(sequence, Self.storedSequence(directory.layout.store(name)))
            }
        }
        var classifications: [String: StoreClassification] = [:]
        for name in schema.configurations where closedStores[name] == nil {
            do { classifications[name] = try directory.classify(name) } catch {
                closedStores[name] = error.description
                if case .notAStore(let detail) = error.kind, FileSystem.exists(directory.layout.store(name)) {
                    markDamaged(name, "SQLite cannot read it (\(detail))")
                }
                // Its numbers stay used: saves to the other store must not repeat them.
                sequence = max(sequence, Self.storedSequence(directory.layout.store(name)))
            }
        }
        let anyOlder = classifications.values.contains { $0.state == .older }
        for name in schema.configurations.sorted() {
            guard let c = classifications[name] else { continue }
            switch c.state {
            case .newer, .unknown:
                closedStores[name] = Self.refusal(c)
                sequence = max(sequence, Self.storedSequence(c.path))
                continue
            case .new where anyOlder:
                closedStores[name] = Self.waitingForMigration
                continue
            default: break
            }
            do {
                try attach(name, db: try directory.openStore(c, durability: options.durability), versions: Self.versions(of: c, schema: schema))
            } catch {
                closedStores[name] = "\(error)"
                sequence = max(sequence, Self.storedSequence(c.path))
            }
        }
        // A save finished just now in its second file changed what the last number told before
        // stood for (a resync sent then showed the first file alone): the next number marks it,
        // so that a resume from before gets a fresh result, not "nothing since".
        if recovery.replayed > 0 {
            sequence += 1
            try recordSequenceJump()
        }
    }

    /// Why a new store is not created yet: an outdated store's migration may have to fill it.
    public static let waitingForMigration = "waiting for the migration of the other stores, which may fill it"

    /// Why a store named by a migration swap that stopped part way is closed: what stops the
    /// swap (`error`, from `StoreDirectory.recover`), and what to do.
    public static func unfinishedSwapReason(_ error: StoreError) -> String {
        return "a migration's swap stopped part way and cannot finish yet (\(error.cause)); it is not served half swapped. "
            + "Fix that, then run `seam migrate` (or restart seamd) to finish the swap"
    }

    /// Whether any open store is served at an older version than this build's.
    public var hasOutdatedStores: Bool {
        servedVersions.values.contains { versions in versions.contains { schema.model($0.key)?.current.version != $0.value.version } }
    }

    /// Says why a closed store is closed (a migration's progress), for the next call that needs it.
    public func setClosedReason(_ name: String, _ reason: String) {
        if stores[name] == nil { closedStores[name] = reason }
    }

    /// Opens a store that is closed (after its migration, or to serve it at its old version
    /// when the migration failed), at the version its file holds. `changed`: the file is not the
    /// one that closed (a migration swapped it in). One that fails stays closed, with the error
    /// as its reason, and may be tried again (with `changed` as before: nothing of it was kept).
    public func reopen(_ name: String, changed: Bool = false) throws(ContextError) {
        guard let directory, stores[name] == nil else { return }
        let storeDirectory = StoreDirectory(path: directory, schema: schema)
        do {
            let c = try storeDirectory.classify(name)
            // As at open: a store with no file yet is not created while another is outdated
            // (after a failed migration, say), or the next migration would find it current
            // and leave the rows it should receive where they are.
            if c.state == .new {
                for other in schema.configurations where other != name {
                    if (try? storeDirectory.classify(other))?.state == .older {
                        closedStores[name] = Self.waitingForMigration
                        return
                    }
                }
            }
            let db = try storeDirectory.openStore(c, durability: options.durability)
            try attach(name, db: db, versions: Self.versions(of: c, schema: schema))
            if sequenceJumpUnrecorded {
                do { try recordSequenceJump() } catch {
                    close(name, reason: error.description)  // not served with numbers that may repeat
                    throw error
                }
            }
            // A store swapped in may hold another shape: results from before are not results
            // after. It takes a sequence number of its own, kept in the file, and the ring
            // starts over, so that no resume reaches back across it: a subscriber from before
            // gets a fresh result. (The original, served again after a failed migration, is
            // left byte for byte as it was.)
            guard changed else { return }
            do { try lease(through: sequence + 1) } catch {
                close(name, reason: error.description)
                throw error
            }
            sequence += 1
            ring = ChangeRing(capacity: options.ringCapacity)
            do { try SaveJournal.setSequence(sequence, in: db) } catch {
                close(name, reason: error.description)  // not served without its number: a try again takes another
                throw ContextError(.database(error))
            }
        } catch let e as StoreError {
            closedStores[name] = e.description
            if case .notAStore(let detail) = e.kind { markDamaged(name, "SQLite cannot read it (\(detail))") }
            throw ContextError(.store(e))
        } catch let e as ContextError {
            closedStores[name] = e.description
            throw e
        } catch {
            throw ContextError(.store(StoreError(.unknown(detail: "\(error)"), path: name)))
        }
    }

    /// Puts on the disk the saves that returned before reaching it (`Options.defersSync`):
    /// nothing when none awaits. A flush that fails ends the process (see `Database`).
    public func syncCommits() {
        for handle in stores.values where handle.db.syncPending { handle.db.syncDeferred() }
    }

    /// Whether a save awaits `syncCommits()`.
    public var syncPending: Bool { stores.values.contains { $0.db.syncPending } }

    /// How often each open store's writer has flushed its WAL (full durability), by store name.
    public var walSyncs: [String: Int] { stores.mapValues { $0.db.walSyncs } }

    /// Whether a store's WAL can be readied to start over now, between requests: its
    /// checkpointer has copied back the bulk, and fewer than its `catchUpFrames` are left
    /// (`Checkpointer.catchUp`).
    public var upkeepDue: Bool { checkpointers.values.contains { $0.catchUpDue } }

    /// Does what `upkeepDue` announced: asks each store's checkpointer thread to copy back its
    /// last frames (at most 500 pages and two fdatasyncs, on that thread; this one does not wait).
    /// An owner that never calls it lets each WAL grow to the checkpointer's `limit` (8,000
    /// frames) before the writer checkpoints inline; the broker calls it from its loop's idle turns.
    public func upkeep() { for c in checkpointers.values where c.catchUpDue { c.catchUp() } }

    /// Called as an open store closes, before its connection does, with its name, file and
    /// attachment (`attachment(_:)`): whoever holds connections of their own to the file (the
    /// broker's readers) lets go of them here, so that the file is left whole and alone.
    public var willCloseStore: ((_ name: String, _ path: String, _ attachment: Int) -> Void)?

    /// Whether a store's writes should wait for now: its checkpointer is copying its WAL back
    /// (`Checkpointer.holdsWrites`) and its next commit will start the WAL over. A save into it
    /// still works; it only keeps the WAL from starting over. Reads never wait.
    public var anyStoreHoldsWrites: Bool { checkpointers.values.contains { $0.holdsWrites } }

    /// The stores whose writes should wait for now (see `anyStoreHoldsWrites`).
    public var storesHoldingWrites: Set<String> {
        var held: Set<String> = []
        for (name, c) in checkpointers where c.holdsWrites { held.insert(name) }
        return held
    }

    /// Told, on a checkpointer's thread, when a store's writes may go on (`storesHoldingWrites`).
    public var whenWritesResume: (@Sendable () -> Void)? {
        didSet { for c in checkpointers.values { c.whenWritesResume(whenWritesResume) } }
    }

    /// Closes an open store (before its migration): its checkpointer stops, its statements
    /// are finalised and its connection closed, so its WAL is folded into the file. Calls
    /// that need it fail with `storeUnavailable` and `reason` until it is reopened.
    public func close(_ name: String, reason: String) {
        endSteps(closing: name, reason: reason)
        closedStores[name] = reason
        checking.remove(name)
        readOnly[name] = nil
        identities[name] = nil
        guard let handle = stores.removeValue(forKey: name) else { return }
        willCloseStore?(name, handle.db.path, attachments[name] ?? 0)
        checkpointers.removeValue(forKey: name)?.stop()
        readers.removeValue(forKey: name)?.close()
        servedVersions[name] = nil
        handle.releaseStatements()
        handle.db.close()
        rebuildRoutes()
    }

    private func attach(_ name: String, db: Database, versions: [String: ModelVersion]) throws(ContextError) {
        // A file that can only be read is served for reading: nothing to checkpoint.
        let writable = !db.isReadOnly
        var checkpointer: Checkpointer?
        if writable {
            do {
                checkpointer = try Checkpointer(db, durability: options.durability, threshold: options.checkpointFrames)
            } catch {
                db.close()
                throw ContextError(.database(error))
            }
        }
        do {
            sequence = max(sequence, try SaveJournal.sequence(in: db))
        } catch {
            checkpointer?.stop()  // its thread holds a connection of its own
            db.close()
            throw quarantined(ContextError(.database(error)), store: name)
        }
        stores[name] = StoreHandle(name: name, db: db)
        checkpointer?.whenWritesResume(whenWritesResume)
        checkpointers[name] = checkpointer
        servedVersions[name] = versions
        closedStores[name] = nil
        damaged[name] = nil
        readOnly[name] = writable ? nil : Self.readOnlyReason(db.path)
        identities[name] = FileSystem.identity(db.path)
        attachments[name, default: 0] += 1
        sealedAttributes = [:]  // the store may hold another version now
        rebuildRoutes()
        if options.checksAtOpen { startCheck(name, path: db.path) }
    }

    /// Routes every entity of the current schema whose store is open, defined as that store
    /// holds it (an older version's attributes while it awaits migration).
    private func rebuildRoutes() {
        var routes: [String: (Entity, String)] = [:]
        for (name, versions) in servedVersions {
            for model in schema.models {
                let current = model.current.entities(in: name)
                guard let served = versions[model.name] else { continue }
                for e in served.entities(in: name) where current.contains(where: { $0.name == e.name }) { routes[e.name] = (e, name) }
            }
        }
        self.routes = routes
        attributeNames = routes.mapValues { $0.0.attributes.map(\.name) }
        insertTemplates = routes.mapValues { InsertTemplate($0.0) }
        var incoming: [String: [(entity: Entity, link: Link)]] = [:]
        for model in schema.models {
            for e in model.current.entities {
                let source: Entity
                if let r = routes[e.name] {
                    source = r.0
                } else if let c = model.current.configuration(of: e.name), servedVersions[c] == nil {
                    source = e  // its store is closed: a rule reaching it is refused there
                } else {
                    continue  // its store is open at a version without it: no rows, no rule
                }
                for l in source.links { incoming[l.target, default: []].append((source, l)) }
            }
        }
        self.incoming = incoming
    }

    /// Model name → the version a classified file holds (the current one for a new file).
    static func versions(of c: StoreClassification, schema: Schema) -> [String: ModelVersion] {
        if c.state == .new { return Dictionary(uniqueKeysWithValues: schema.models(in: c.configuration).map { ($0.name, $0.current) }) }
        var out: [String: ModelVersion] = [:]
        for (name, status) in c.models { if let v = status.source { out[name] = v } }
        return out
    }

    private static func refusal(_ c: StoreClassification) -> String {
        let newer = c.models.compactMap { name, status -> String? in
            if case .newer(let label) = status { return "\(name) v\(label)" } else { return nil }
        }
        if !newer.isEmpty {
            return "written by a newer build (\(newer.joined(separator: ", "))); left untouched: run a build that knows it"
        }
        return "not a store this build can read (\(c.summary)); left untouched"
    }

    /// The save sequence a store file recorded, read without writing (0 when unreadable): a
    /// closed store's saves still count, so sequence numbers never repeat when it returns.
    private static func storedSequence(_ path: String) -> Int64 {
        var o = Database.Options()
        o.readOnly = true
        guard FileSystem.kind(path) == "file", let db = try? Database(path: path, options: o) else { return 0 }
        defer { db.close() }
        return (try? SaveJournal.sequence(in: db)) ?? 0
    }

    deinit { finish() }

    /// The single in-memory `Default` store holding every entity: for tests and previews.
    /// Snapshots are not available there (see `withSnapshot`).
    public init(inMemory schema: Schema, options: Options = Options()) throws(ContextError) {
        self.schema = schema
        self.options = options
        syncConfigured = options.syncConfigured
        directory = nil
        let name = Configuration.defaultName
        do {
            let db = try Database(path: ":memory:")
            var records: [StoreMetadata.ModelRecord] = []
            try db.execute("BEGIN")
            for model in schema.models {
                for sql in SchemaSQL.create(model.current, configuration: name) { try db.execute(sql) }
                records.append(StoreMetadata.record(model.current, configuration: name))
            }
            try StoreMetadata(configuration: name, format: StoreMetadata.currentFormat, models: records).write(to: db)
            try db.execute("COMMIT")
            stores = [name: StoreHandle(name: name, db: db)]
        } catch {
            throw ContextError(.database(error))
        }
        var routes: [String: (Entity, String)] = [:]
        for model in schema.models { for e in model.current.entities { routes[e.name] = (e, name) } }
        self.routes = routes
        attributeNames = routes.mapValues { $0.0.attributes.map(\.name) }
        insertTemplates = routes.mapValues { InsertTemplate($0.0) }
        servedVersions[name] = Dictionary(uniqueKeysWithValues: schema.models.map { ($0.name, $0.current) })
        incoming = Self.incomingLinks(schema)
        ring = ChangeRing(capacity: options.ringCapacity)
        sequence = 0
    }

    private static func incomingLinks(_ schema: Schema) -> [String: [(entity: Entity, link: Link)]] {
        var out: [String: [(entity: Entity, link: Link)]] = [:]
        for model in schema.models {
            for e in model.current.entities {
                for l in e.links { out[l.target, default: []].append((e, l)) }
            }
        }
        return out
    }

    public var isInMemory: Bool { directory == nil }

    /// The configuration names of the open stores.
    public var storeNames: [String] { stores.keys.sorted() }

    /// Per store file: checkpoints done off the saving thread, the last failure if any, the
    /// frames its WAL holds after the last commit, and how often its writes were held while its
    /// WAL was drained (`storesHoldingWrites`).
    public func checkpointing(_ store: String) -> (checkpoints: Int, lastFailure: String?, walFrames: Int, writeHolds: Int)? {
        checkpointers[store].map { ($0.checkpoints, $0.lastFailureMessage, $0.walFrames, $0.holds) }
    }

    /// The checkpoint thread of an open store, for what seamd's metrics read of it.
    public func checkpointer(of store: String) -> Checkpointer? { checkpointers[store] }

    /// The configuration (store) that holds `entity`.
    public func store(of entity: String) throws(ContextError) -> String { try route(entity).store }

    func route(_ entity: String) throws(ContextError) -> (entity: Entity, store: String) {
        if let r = routes[entity] { return r }
        if let e = schema.entity(entity), let why = closedStores[e.configuration] {
            throw ContextError(.storeUnavailable(store: e.configuration, entity: entity, reason: why))
        }
        throw ContextError(.unknownEntity(entity))
    }

    /// The open store `route` named for `entity`. (A route names only open stores; one closed
    /// since is said so, not trusted.)
    func handle(_ store: String, for entity: String) throws(ContextError) -> StoreHandle {
        guard let handle = stores[store] else {
            throw ContextError(.storeUnavailable(store: store, entity: entity, reason: closedStores[store] ?? "it is not open"))
        }
        return handle
    }

    /// The definition of `entity` as its store holds it now: the route's, when open.
    public func servedEntity(_ entity: String) throws(ContextError) -> Entity { try route(entity).entity }

    /// The configuration an entity belongs to in the schema (Cloud or Local), even in memory.
    func configuration(of entity: String) -> String {
        schema.entity(entity)?.configuration ?? Configuration.defaultName
    }

    /// The raw connection of a store, for tools and tests that need SQL directly.
    public func database(_ store: String) -> Database? { stores[store]?.db }

    // MARK: - Reading

    /// The row of `entity` with `uuid`, or nil.
    public func row(_ entity: String, _ uuid: String) throws(ContextError) -> Row? {
        try guarding(entity: entity) { () throws(ContextError) -> Row? in
            let r = try route(entity)
            let (db, handle) = try readConnection(r.store, for: entity)
            return try readRow(r.entity, uuid: uuid, from: db, handle: handle)
        }
    }

    /// Where this context reads store `store` on its owner's thread: its own connection, or —
    /// while a save in steps holds the store, whose rows that connection would see before they
    /// are committed — the store's read-only connection (with no cached statements).
    func readConnection(_ store: String, for entity: String) throws(ContextError) -> (Database, StoreHandle?) {
        let handle = try handle(store, for: entity)
        guard stepped?.store == store else { return (handle.db, handle) }
        if let reader = readers[store] { return (reader, nil) }
        var o = Database.Options()
        o.readOnly = true
        do {
            let reader = try Database(path: handle.db.path, options: o)
            readers[store] = reader
            return (reader, nil)
        } catch {
            throw ContextError(.database(error))
        }
    }

    /// The values of the row of `entity` with `uuid`, in attribute order, or nil: the fast path
    /// for callers that encode rows themselves (no dictionary is built).
    public func rowValues(_ entity: String, _ uuid: String) throws(ContextError) -> (attributes: [Attribute], values: [AttributeValue])? {
        try guarding(entity: entity) { () throws(ContextError) -> (attributes: [Attribute], values: [AttributeValue])? in
            try rowValuesUnguarded(entity, uuid)
        }
    }

    private func rowValuesUnguarded(_ entity: String, _ uuid: String) throws(ContextError) -> (attributes: [Attribute], values: [AttributeValue])? {
        let r = try route(entity)
        let (db, handle) = try readConnection(r.store, for: entity)
        let columns = r.entity.attributes
        do {
            let s = try rowStatement(r.entity, handle: handle, db: db)
            try s.bind(.string(uuid), at: 1)
            defer { s.reset() }
            guard try s.step() else { return nil }
            var values: [AttributeValue] = []
            values.reserveCapacity(columns.count)
            for (i, a) in columns.enumerated() { values.append(s.column(i, as: a.type)) }
            return (columns, values)
        } catch {
            throw ContextError(.database(error))
        }
    }

    private func rowStatement(_ e: Entity, handle: StoreHandle?, db: Database) throws(DatabaseError) -> Statement {
        if let cached = handle?.rowByUUID[e.name] { return cached }
        let s = try db.prepare("SELECT " + e.attributes.map { SchemaSQL.quote($0.name) }.joined(separator: ", ")
                               + " FROM \(SchemaSQL.quote(e.name)) WHERE \"uuid\" = ?")
        handle?.rowByUUID[e.name] = s
        return s
    }

    func readRow(_ e: Entity, uuid: String, from db: Database, handle: StoreHandle?) throws(ContextError) -> Row? {
        let columns = e.attributes
        do {
            let s = try rowStatement(e, handle: handle, db: db)
            try s.bind(.string(uuid), at: 1)
            defer { s.reset() }
            guard try s.step() else { return nil }
            var values: [String: AttributeValue] = [:]
            values.reserveCapacity(columns.count)
            for (i, a) in columns.enumerated() { values[a.name] = s.column(i, as: a.type) }
            return Row(entity: e.name, values: values)
        } catch {
            throw ContextError(.database(error))
        }
    }

    /// The rows a fetch request selects.
    public func fetch(_ request: FetchRequest) throws(ContextError) -> [Row] {
        try guarding(entity: request.entity) { () throws(ContextError) -> [Row] in
            let r = try route(request.entity)
            let (db, handle) = try readConnection(r.store, for: request.entity)
            return try fetch(request, entity: r.entity, db: db, handle: handle)
        }
    }

    /// How many rows a fetch request's predicate selects (limit and offset apply).
    public func count(_ request: FetchRequest) throws(ContextError) -> Int {
        try guarding(entity: request.entity) { () throws(ContextError) -> Int in
            let r = try route(request.entity)
            let (db, handle) = try readConnection(r.store, for: request.entity)
            return try count(request, entity: r.entity, db: db, handle: handle)
        }
    }

    func fetch(_ request: FetchRequest, entity e: Entity, db: Database, handle: StoreHandle?) throws(ContextError) -> [Row] {
        var wanted = request.attributes ?? e.attributes.map(\.name)
        if !wanted.contains(Entity.identity) { wanted.insert(Entity.identity, at: 0) }
        var attributes: [Attribute] = []
        for name in wanted {
            guard let a = e.attribute(name) else { throw ContextError(.unknownAttribute(entity: e.name, attribute: name)) }
            attributes.append(a)
        }
        let compiled = try compile(request, entity: e, columns: wanted)
        do {
            let s = try Self.prepare(compiled.sql, handle: handle, db: db)
            try s.bind(compiled.arguments)
            defer { s.reset() }
            var rows: [Row] = []
            while try s.step() {
                var values: [String: AttributeValue] = [:]
                values.reserveCapacity(attributes.count)
                for (i, a) in attributes.enumerated() { values[a.name] = s.column(i, as: a.type) }
                rows.append(Row(entity: e.name, values: values))
            }
            return rows
        } catch {
            throw ContextError(.database(error))
        }
    }

    func count(_ request: FetchRequest, entity e: Entity, db: Database, handle: StoreHandle?) throws(ContextError) -> Int {
        var compiled = try compile(request, entity: e, columns: [Entity.identity])
        compiled.sql = "SELECT count(*) FROM (\(compiled.sql))"
        do {
            let s = try Self.prepare(compiled.sql, handle: handle, db: db)
            try s.bind(compiled.arguments)
            defer { s.reset() }
            return try s.step() ? Int(s.column(0, as: .integer).integerValue ?? 0) : 0
        } catch {
            throw ContextError(.database(error))
        }
    }

    /// A cached statement from `handle`, or a fresh one from `db` (snapshot readers).
    static func prepare(_ sql: String, handle: StoreHandle?, db: Database) throws(DatabaseError) -> Statement {
        if let handle { return try handle.statement(sql) }
        return try db.prepare(sql)
    }

    func compile(_ request: FetchRequest, entity e: Entity, columns: [String]) throws(ContextError) -> CompiledSQL {
        try Self.compile(request, entity: e, columns: columns) { text throws(QueryError) in
            if let cached = parsedPredicates[text] { return cached }
            let parsed = try ParsedPredicate(text)
            if parsedPredicates.count > 1024 { parsedPredicates.removeAll() }
            parsedPredicates[text] = parsed
            return parsed
        }.sql
    }

    /// `request` compiled to SQL selecting `columns` of `e`, with its predicate checked (pure;
    /// `parse` parses the predicate's text, from a cache or afresh).
    static func compile(_ request: FetchRequest, entity e: Entity, columns: [String],
                        parse: (String) throws(QueryError) -> ParsedPredicate) throws(ContextError) -> (sql: CompiledSQL, predicate: CheckedPredicate?) {
        var field = "predicate"
        do throws(QueryError) {
            var predicate: CheckedPredicate?
            if let text = request.predicate {
                predicate = try CheckedPredicate(try parse(text), entity: e, parameters: request.parameters)
            }
            field = "sort"
            var sorting: Sorting?
            if let s = request.sort { sorting = try Sorting(s, entity: e) }
            field = "limit"
            if let limit = request.limit, limit < 0 {
                throw QueryError(.invalidValue, at: 0, "a limit cannot be negative")
            }
            field = "predicate"
            var compiled = try CompiledSQL.select(columns, from: e, where: predicate, orderBy: sorting, limit: request.limit)
            if let offset = request.offset, offset > 0 {
                if request.limit == nil { compiled.sql += " LIMIT -1" }
                compiled.sql += " OFFSET \(offset)"
            }
            return (compiled, predicate)
        } catch {
            throw ContextError(.query(error, field: field))
        }
    }
}
