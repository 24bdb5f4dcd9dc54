import SeamContext
import SeamJSON
import SeamProtocol
import SeamStore
import SeamSystem

/// What the broker does about store files that are damaged, vanish, are replaced or can only be
/// read (the work itself is the context's, `Context+Integrity`): it logs what the context did,
/// holds writes while a store's check at open runs, and looks at the files once a second.
extension Broker {
    /// The methods that only read: served while a store's check at open runs. Every other call
    /// may write, and waits.
    static let readOnlyMethods: Set<String> = [
        "org.varlink.service.GetInfo", "org.varlink.service.GetInterfaceDescription",
        "org.seam.Store.Hello", "org.seam.Store.Schema", "org.seam.Store.Fetch", "org.seam.Store.Count", "org.seam.Store.Status",
        "org.seam.Store.Subscribe", "org.seam.Store.Unsubscribe", "org.seam.Migration.Plan", "org.seam.Sync.Status",
        "org.seam.Maintenance.Backup", "org.seam.Maintenance.Check",
    ]

    /// How often the store files are looked at between saves: the window in which a removed or
    /// replaced file is not yet put back (what another program opens at the path meanwhile is
    /// not seamd's store, and may be read with seamd's WAL beside it).
    static let storeFileLookInterval = 0.25

    /// Starts the watch: checks that finish are collected on this loop, and every
    /// `storeFileLookInterval` the store files are looked at (a removed or replaced one is put
    /// back before anything else is written to it, and the log says so).
    func watchStoreFiles() {
        do {
            let waker = try loop.waker { [unowned self] in self.collectChecks() }
            checksWaker = waker
            context.checkFinished.setHandler { waker.wake() }
        } catch {
            // No eventfd: looked at with the files, once a second.
            log.warning("cannot watch the stores' checks (\(error)); looking at them every second")
        }
        lookAtStoreFiles()
    }

    private func lookAtStoreFiles() {
        guard !stopping else { return }
        if context.isChecking, checksWaker == nil { collectChecks() }
        resumeHeldWrites()  // should a checkpointer's word have been missed
        if migrations.run == nil { context.verifyFiles() }
        reportStoreNotices()
        _ = loop.after(Self.storeFileLookInterval) { [weak self] in self?.lookAtStoreFiles() }
    }

    /// Takes the checks that finished: logs each, and lets the writes that waited go on.
    func collectChecks() {
        for outcome in context.collectChecks() {
            if outcome.problems.isEmpty {
                log.debug("\(outcome.store) store checked at open (quick_check) in \(describeSeconds(outcome.seconds))")
            }
        }
        reportStoreNotices()
        guard !context.isChecking else { return }
        let waiting = parkedForChecks
        parkedForChecks = []
        for c in waiting where !c.closed {
            guard let frame = c.parked else { continue }
            c.parked = nil
            handleFrame(frame, from: c)
            processFrames(c)
            connections.flush(c)
            connections.closeIfFinished(c)
        }
    }

    /// Logs what the context did on its own (a damaged store closed, a file put back).
    func reportStoreNotices() {
        for notice in context.takeNotices() {
            if notice.isError { log.error(notice.text) } else { log.warning(notice.text) }
        }
    }

    /// Whether `frame` must wait for the stores' checks at open: it is a call that may write.
    func mustWaitForChecks(_ frame: ArraySlice<UInt8>) -> Bool {
        guard context.isChecking else { return false }
        if QuickFetch(frame) != nil { return false }
        guard let json = try? JSON.decode(frame, limits: JSONLimits(maxDepth: Limits.maxJSONDepth)),
              let method = json["method"]?.stringValue
        else { return false }  // answered as an error, which writes nothing
        return !Self.readOnlyMethods.contains(method)
    }

    /// A store's state as `Status` says it: open, outdated, checking, migrating, damaged or closed.
    func storeState(_ name: String) -> String {
        if context.damaged[name] != nil { return "damaged" }
        if let versions = context.servedVersions[name] {
            if context.checking.contains(name) { return "checking" }
            let outdated = versions.contains { context.schema.model($0.key)?.current.version != $0.value.version }
            return outdated ? "outdated" : "open"
        }
        return migrations.isMigrating(name) ? "migrating" : "closed"
    }
}
