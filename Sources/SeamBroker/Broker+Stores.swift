import SeamContext
import SeamJSON
import SeamProtocol
import SeamStore
import SeamSystem

/// The stores as they close and return: reopened after a migration or a restore (with backoff
/// while one does not open), their channels resumed, and what `Status` says of them.
extension Broker {
    var storeDirectory: StoreDirectory { migrations.storeDirectory }

    /// Reopens stores a migration or a restore closed (`StoreReopener.reopen`): those that
    /// opened, whose channels the caller resumes.
    func reopenStores(_ names: [String], changed: Bool) -> [String] { reopener.reopen(names, changed: changed) }

    /// Every channel on the stores that came back is rebuilt (`Subscribers.resumeChannels`).
    func resumeChannels(in stores: [String]) { subscribers.resumeChannels(in: stores) }

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
}

/// What the broker does for its `MigrationCoordinator`.
extension Broker: JobHost {
    var isRestoring: Bool { maintenance.isRestoring }

    func storesClosed(_ names: [String]) { rowCache.removeAll() }

    func deliver(_ frame: [UInt8], to c: Connection) { if connections.queue(frame: frame, to: c) { connections.flush(c) } }

    func settle(_ c: Connection) { connections.closeIfFinished(c) }

    func reportStoreNotices() { storeWatch.reportNotices() }

    /// When the stores changed in a way no change set told (`SavePath.refetchIfInvalidated`).
    func refetchIfInvalidated() { saves.refetchIfInvalidated() }
}

extension Broker {
    /// Whether the broker has nothing left to do until a client or the clock moves: no turn
    /// queued, no read, commit or save in steps running, no store check or held write pending.
    var isResting: Bool {
        turns.queued == 0 && offLoop.isEmpty && steps.running == nil && !steps.committing && writeGate.isEmpty
            && saves.heldForSync.isEmpty && maintenance.job == nil
    }

    /// What is wrong with the broker's connections while it rests (`BrokerReport.restingProblems`).
    func restingProblems() -> [String] { report.restingProblems() }
}
