import SeamContext
import SeamSystem

/// A store that did not open again after a migration, and its next try (`reopenStores`).
struct StoreReopening {
    /// Its file is not the one that closed (a swap replaced it): so until it has opened.
    var changed: Bool
    var backoff = Backoff()
    var failures = 0
    var timer: Int?
}

/// Stores a migration or a restore closed, opened again — a new store that waited for them
/// too — and one that does not open (no descriptors left, an I/O error) tried again with backoff,
/// its channels waiting as they are. One thread: the loop's.
final class StoreReopener {
    private let context: Context
    private let loop: EventLoop
    private let log: Logger
    /// Stores that did not open, and their next try.
    private var reopening: [String: StoreReopening] = [:]
    /// Whether seamd is stopping (no more tries).
    var isStopping: () -> Bool = { false }
    /// Whether a store is left closed when its next try comes: a migration that closed it
    /// meanwhile reopens it as it ends (taking `changed` from here); one whose swap stopped part
    /// way leaves it to the person who finishes that swap.
    var isLeftClosed: (String) -> Bool = { _ in false }
    /// Stores that opened on a later try: their channels resume.
    var reopened: ([String]) -> Void = { _ in }

    init(context: Context, loop: EventLoop, log: Logger) {
        self.context = context
        self.loop = loop
        self.log = log
    }

    /// Reopens stores a migration closed (`changed`: a swap replaced their files) and, once none
    /// is outdated, a new store that waited for them (a migration might have filled it). Returns
    /// those that opened: the caller resumes their channels. One that does
    /// not open (no descriptors left, an I/O error) stays closed, its channels waiting as they
    /// are, and is tried again after 1 s, then less and less often, up to every 60 s.
    func reopen(_ names: [String], changed: Bool) -> [String] {
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
        guard !isStopping(), reopening[name] != nil else { return }
        reopening[name]?.timer = nil
        if isLeftClosed(name) { return }
        reopened(reopen([name], changed: false))
    }
}
