import SeamContext
import SeamProtocol
import SeamSystem

/// Group commit (full durability): the saves of one round of turns — from as many connections as
/// had one queued — are applied in one transaction per store file and committed together at the
/// round's end (`Context+Group`), each with its own sequence number, change set and reply; the
/// loop then syncs them once, at the end of its round, before it waits again.
///
/// Nothing leaves seamd about a save before it is committed and, at full durability, on the
/// disk: a reply or a diff sent meanwhile (to the saver, a subscriber, or a reader who could see
/// the new rows) is queued on its connection and the connection held (`heldForSync`) — `send`
/// and `flush` do so whenever `mustHoldOutput` says — until `releaseHeld` has synced. Each
/// connection's frames stay in the order they were queued, so subscribers see commits in order.
///
/// Should the group's commit fail (a full disk, an I/O error), what was held is false: the
/// connections holding it are closed without it (as if seamd had crashed: none of the group's
/// saves is certain to be there), and every subscription resyncs.
extension Broker {
    /// Whether output must wait: saves applied and not committed, or committed and not yet on the disk.
    var mustHoldOutput: Bool { context.groupHoldsSaves || context.syncPending }

    /// The calls that may run inside a group: saves, and reads, which see its saves.
    static func joinsGroup(_ call: Call) -> Bool {
        switch call.interface {
        case "org.varlink.service": return true
        case "org.seam.Store": return ["Save", "Fetch", "Count", "Subscribe", "Unsubscribe", "Hello", "Schema", "Status"].contains(call.member)
        default: return false
        }
    }

    /// Opens the round's group — with full durability only. There a save's reply waits for a
    /// sync anyway, and the round's saves share it; with normal durability a reply goes as soon
    /// as its save commits, and holding it for the rest of the round cost the ticker's alarms
    /// (lateness p99 0.6 → 1.2–2.2 ms with no other writer) more than the shared pages saved.
    func beginGroup() {
        if context.options.durability == .full { context.beginGroup() }
    }

    /// Commits the round's group (at its end).
    func endGroup() {
        do throws(ContextError) { try context.endGroup() } catch { groupFailed(error) }
    }

    /// Commits what the group holds now, before a call that does not join it.
    func commitGroupNow() {
        do throws(ContextError) { try context.commitGroup() } catch { groupFailed(error) }
    }

    /// Whether the save being handled is the last the round's group can take: the round's last
    /// turn, with no call after it read from its connection.
    var isLastSaveOfRound: Bool {
        guard let turn else { return false }
        return turn.last && !turn.connection.decoder.hasCompleteFrame()
    }

    func groupFailed(_ error: ContextError) {
        let held = Array(heldForSync.values)
        log.error("saves committed together failed: \(error); closing the \(held.count) connection(s) holding replies or diffs "
                  + "about them (none of those saves is certain to be there; their clients reconnect and look), and every "
                  + "subscription resyncs")
        heldForSync.removeAll()
        for c in held where !c.closed { connections.close(c) }
        rowCache.removeAll()
        refetchIfInvalidated()
    }

    /// Holds `c`'s queued output until the round's saves are committed and on the disk.
    func holdForSync(_ c: Connection) {
        heldForSync[ObjectIdentifier(c)] = c
    }

    /// At the end of each round of the loop: syncs the round's saves (one flush of each store's
    /// WAL for all of them), then sends what waited for it.
    func releaseHeld() {
        guard context.syncPending || !heldForSync.isEmpty else { return }
        if context.groupHoldsSaves { endGroup() }  // a group left open outside turns: committed first
        context.syncCommits()
        let held = heldForSync.values
        heldForSync.removeAll(keepingCapacity: true)
        for c in held where !c.closed { connections.flush(c) }
    }
}
