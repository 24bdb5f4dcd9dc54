import SeamContext
import SeamStore
import SeamSystem

/// What seamd does about store files that are damaged, vanish, are replaced or can only be
/// read (the work itself is the context's, `Context+Integrity`): it logs what the context did,
/// lets the writes held while a store's check at open runs go on (`WriteGate`), and looks at the
/// files every `lookInterval`.
final class StoreFileWatch {
    /// How often the store files are looked at between saves: the window in which a removed or
    /// replaced file is not yet put back (what another program opens at the path meanwhile is
    /// not seamd's store, and may be read with seamd's WAL beside it).
    static let lookInterval = 0.25

    private let context: Context
    private let loop: EventLoop
    private let log: Logger
    private let writeGate: WriteGate
    private let migrations: MigrationCoordinator
    /// Wakes the loop when a store's check at open has finished.
    private var checksWaker: EventLoop.Waker?
    /// Whether seamd is stopping: the files are looked at no more.
    var isStopping: () -> Bool = { false }

    init(context: Context, loop: EventLoop, log: Logger, writeGate: WriteGate, migrations: MigrationCoordinator) {
        self.context = context
        self.loop = loop
        self.log = log
        self.writeGate = writeGate
        self.migrations = migrations
    }

    /// Starts the watch: checks that finish are collected on this loop, and every
    /// `lookInterval` the store files are looked at (a removed or replaced one is put back
    /// before anything else is written to it, and the log says so).
    func start() {
        do {
            let waker = try loop.waker { [unowned self] in self.collectChecks() }
            checksWaker = waker
            context.checkFinished.setHandler { waker.wake() }
        } catch {
            // No eventfd: looked at with the files, every look.
            log.warning("cannot watch the stores' checks (\(error)); looking at them every \(Self.lookInterval) s")
        }
        lookAtStoreFiles()
    }

    private func lookAtStoreFiles() {
        guard !isStopping() else { return }
        if context.isChecking, checksWaker == nil { collectChecks() }
        writeGate.resumeHeldWrites()  // should a checkpointer's word have been missed
        if migrations.run == nil { context.verifyFiles() }
        reportNotices()
        _ = loop.after(Self.lookInterval) { [weak self] in self?.lookAtStoreFiles() }
    }

    /// Takes the checks that finished: logs each, and lets the writes that waited go on.
    func collectChecks() {
        for outcome in context.collectChecks() {
            if outcome.problems.isEmpty {
                log.debug("\(outcome.store) store checked at open (quick_check) in \(describeSeconds(outcome.seconds))")
            }
        }
        reportNotices()
        writeGate.resumeAfterChecks()
    }

    /// Logs what the context did on its own (a damaged store closed, a file put back).
    func reportNotices() {
        for notice in context.takeNotices() {
            if notice.isError { log.error(notice.text) } else { log.warning(notice.text) }
        }
    }
}
