import SeamContext
import SeamJSON
import SeamProtocol
import SeamStore
import SeamSystem

/// A store that did not open again after a migration, and its next try (`reopenStores`).
struct StoreReopening {
    /// Its file is not the one that closed (a swap replaced it): so until it has opened.
    var changed: Bool
    var backoff = Backoff()
    var failures = 0
    var timer: Int?
}

/// The stores as they close and return: reopened after a migration or a restore (with backoff
/// while one does not open), their channels resumed, and what `Status` says of them.
extension Broker {
    var storeDirectory: StoreDirectory { migrations.storeDirectory }

    /// Reopens stores a migration closed (`changed`: a swap replaced their files) and, once none
    /// is outdated, a new store that waited for them (a migration might have filled it). Returns
    /// those that opened: the caller resumes their channels (`resumeChannels`). One that does
    /// not open (no descriptors left, an I/O error) stays closed, its channels waiting as they
    /// are, and is tried again after 1 s, then less and less often, up to every 60 s.
    func reopenStores(_ names: [String], changed: Bool) -> [String] {
        var back = names.filter { reopenStore($0, changed: changed) }
        if !context.hasOutdatedStores {
            for (name, why) in context.closedStores.sorted(by: { $0.key < $1.key }) where why == Context.waitingForMigration {
                if reopenStore(name, changed: true) { back.append(name) }
            }
        }
        // Whether the history waits for a sync worker could not be read while the synced store
        // was closed (at start, say): it is read now, as `Broker.init` does.
        if back.contains(context.options.historyConfiguration), !context.syncConfigured, SyncBridge.hasSyncedBefore(context) {
            context.syncConfigured = true
        }
        return back
    }

    /// One try at opening a closed store; a failure is logged, said as the store's reason, and
    /// the next try scheduled. True when the store is open (a new store may still wait).
    private func reopenStore(_ name: String, changed: Bool) -> Bool {
        let earlier = reopening.removeValue(forKey: name)
        if let t = earlier?.timer { loop.cancel(t) }
        // A file swapped in is taken as changed until it has opened, however many tries that takes.
        let changed = changed || earlier?.changed == true
        do {
            try context.reopen(name, changed: changed)
        } catch {
            var retry = earlier ?? StoreReopening(changed: changed)
            retry.changed = changed
            retry.failures += 1
            let delay = retry.backoff.delay(afterRunning: 0)
            retry.timer = loop.after(delay) { [unowned self] in self.retryReopening(name) }
            reopening[name] = retry
            context.setClosedReason(name, "it could not be opened again: \(error); seamd tries again, every minute at most")
            log.error("\(name) store did not open again (try \(retry.failures)): \(error); trying again in \(describeSeconds(delay))")
            return false
        }
        guard context.storeNames.contains(name) else { return false }
        if let earlier { log.info("\(name) store is open again, after \(earlier.failures) failed tr\(earlier.failures == 1 ? "y" : "ies")") }
        return true
    }

    /// The timer of a store that did not open: it is tried again, and its channels resume if it opens.
    private func retryReopening(_ name: String) {
        guard !stopping, reopening[name] != nil else { return }
        reopening[name]?.timer = nil
        // A migration that closed it meanwhile reopens it as it ends (taking `changed` from here);
        // one whose swap stopped part way leaves it to the person who finishes that swap.
        if migrations.isMigrating(name) || storeDirectory.unfinishedSwap.contains(name) { return }
        resumeChannels(in: reopenStores([name], changed: false))
    }

    // MARK: - Channels on a store that returns

    /// Every channel on the stores that came back is rebuilt against their entities as now
    /// held (a migration may have added attributes) and its subscribers get a fresh result,
    /// marked as a resync from where they were; a channel that no longer checks ends with the error.
    func resumeChannels(in stores: [String]) {
        var entities = Set<String>()
        for model in context.schema.models { for name in stores { for e in model.current.entities(in: name) { entities.insert(e.name) } } }
        // Subscribers waiting for a channel still loading: that load is dropped with its
        // channel, and their first reply is built from the rebuilt one.
        let stranded = Set(subscriptions.channels.values.filter { !$0.isLoaded && entities.contains($0.entity) }
            .flatMap { $0.subscriptions.keys })
        var touched: [ObjectIdentifier: Connection] = [:]
        for (s, error) in subscriptions.rebuild(entities: entities, context: context) {
            let c = s.connection
            guard !c.closed else { continue }
            if let error {
                if connections.queue(frame: Reply(error, id: s.callID).frame(), to: c) { touched[ObjectIdentifier(c)] = c }
                if stranded.contains(s.id) { firstReplyDone(c) }
            } else if stranded.contains(s.id) {
                s.flow = SubscriptionFlow(loadingAt: context.sequence)
                buildFirstReply(s)
            } else {
                // Owed a resync from where it was, sent once its connection has read what is queued.
                s.flow.fallBehind(from: s.lastSequence)
                c.owesResync = true
                touched[ObjectIdentifier(c)] = c
            }
        }
        for c in touched.values { connections.flush(c) }
    }

    // MARK: - Status

    func storesStatus() -> [JSON] {
        let layout = StoreLayout(directory: configuration.dataDirectory)
        let generations = Backups.list(layout)
        return context.schema.configurations.map { name in
            let path = layout.store(name)
            var o: JSONObject = ["name": .string(name), "path": .string(path), "size": .integer(FileSystem.size(path) ?? 0)]
            o["state"] = .string(storeState(name))
            o["readOnly"] = .bool(context.readOnly[name] != nil)
            if let why = context.readOnly[name] { o["readOnlyReason"] = .string(why) }
            if let note = context.olderThanTold[name] { o["note"] = .string(note) }
            if let versions = context.servedVersions[name] {
                o["versions"] = .array(versions.sorted { $0.key < $1.key }.map { model, version in
                    let v = version.version
                    return .object(["model": .string(model), "version": .integer(Int64(v)),
                                    "current": .integer(Int64(context.schema.model(model)?.current.version ?? v))])
                })
            } else {
                o["versions"] = .null
            }
            o["reason"] = context.closedStores[name].map(JSON.string) ?? .null
            let kept = generations.last { $0.stores.contains(name) && FileSystem.exists($0.file(name)) }
            o["backup"] = kept.map { .string($0.file(name)) } ?? .null
            if let c = context.checkpointing(name) {
                o["checkpoints"] = .integer(Int64(c.checkpoints))
                o["checkpointError"] = c.lastFailure.map(JSON.string) ?? .null
                o["walFrames"] = .integer(Int64(c.walFrames))
                o["writeHolds"] = .integer(Int64(c.writeHolds))
            }
            // With full durability: how often its writer has flushed the WAL (about once per save).
            if let n = context.walSyncs[name] { o["walSyncs"] = .integer(Int64(n)) }
            return .object(o)
        }
    }

    /// Removes the oldest generations of backups/ past seamd.json's bound, saying which.
    func pruneBackups() {
        let bound = configuration.supervision.backupBound
        guard bound.keep != nil || bound.maxBytes != nil else { return }
        do {
            for g in try Backups.prune(storeDirectory.layout, bound: bound) {
                log.info("removed the backup \(g.name) (\(g.stores.joined(separator: ", ")), \(g.bytes) bytes): past seamd.json's "
                         + "bound on backups (" + [bound.keep.map { "keep \($0)" }, bound.maxBytes.map { "maxBytes \($0)" }]
                            .compactMap { $0 }.joined(separator: ", ") + ")")
            }
        } catch {
            log.warning("cannot prune backups/: \(error)")
        }
    }

    /// Every generation in backups/, oldest first, as `Status` lists them.
    func backupsStatus() -> JSON {
        .array(Backups.list(StoreLayout(directory: configuration.dataDirectory)).map { g in
            .object(["name": .string(g.name), "path": .string(g.path), "reason": .string(g.reason),
                     "createdAt": .string(RFC3339.format(g.createdAt)), "stores": .array(g.stores.map(JSON.string)),
                     "versions": .object(JSONObject(uniqueKeysWithValues: g.versions.sorted { $0.key < $1.key }.map { ($0.key, JSON.integer(Int64($0.value))) })),
                     "bytes": .integer(g.bytes)])
        })
    }
}

/// What the broker does for its `MigrationCoordinator`.
extension Broker: JobHost {
    var isRestoring: Bool { maintenance.isRestoring }

    func storesClosed(_ names: [String]) { rowCache.removeAll() }

    func deliver(_ frame: [UInt8], to c: Connection) { if connections.queue(frame: frame, to: c) { connections.flush(c) } }

    func settle(_ c: Connection) { connections.closeIfFinished(c) }
}
