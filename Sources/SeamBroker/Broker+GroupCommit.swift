import SeamContext
import SeamProtocol

/// The broker's side of saves (`SavePath`): the round's last save, and group commit's hold on
/// output, which its `ConnectionTable` asks of it.
extension Broker: SavePathHost {
    /// Whether the save being handled is the last the round's group can take: the round's last
    /// turn, with no call after it read from its connection.
    var isLastSaveOfRound: Bool {
        guard let turn else { return false }
        return turn.last && !turn.connection.decoder.hasCompleteFrame()
    }

    /// Whether output must wait: saves applied and not committed, or committed and not yet on the disk.
    var mustHoldOutput: Bool { saves.mustHoldOutput }

    /// Holds `c`'s queued output until the round's saves are committed and on the disk.
    func holdForSync(_ c: Connection) { saves.holdForSync(c) }

    /// When the stores changed in a way no change set told (`SavePath.refetchIfInvalidated`).
    func refetchIfInvalidated() { saves.refetchIfInvalidated() }

    /// Every save of a call goes through here (`SavePath.commit`).
    @discardableResult
    func commit(_ request: SaveRequest, author: String) throws(ContextError) -> ChangeSet? {
        try saves.commit(request, author: author)
    }
}
