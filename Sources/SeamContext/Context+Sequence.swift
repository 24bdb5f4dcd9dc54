import SeamStore
import SeamSystem

/// Sequence numbers are never given twice, even across a power cut or a store restored from an
/// older copy (ARCHITECTURE.md, "One context over two files", says why and how).
///
/// - While the stores are open the directory holds a marker (`StoreLayout.openMarker`), on the
///   disk before the first save, removed by a clean close. An open that finds it moves the
///   sequence on by `uncleanCloseJump` and records that in a store, on the disk, before it numbers
///   a save. With full durability a marker left by an earlier run is honoured, but none is kept.
/// - The directory's lease (`StoreLayout.sequenceLease`, `SequenceLease`) holds the highest
///   number that may have been told: written `leaseBlock` numbers ahead, on the disk before a
///   number past it is used; at a clean close, exactly the last number, with each store's own.
///   An open that finds the stores behind it (below its number, or a store below the number it
///   closed with) numbers from past it.
extension Context {
    /// How many numbers one write of the lease covers ahead: one small write (and flush) per
    /// this many saves.
    public static let leaseBlock: Int64 = 1 << 16
    /// How far the sequence moves on after a close that was not clean: more saves than a store
    /// can commit between two flushes of its WAL, by orders of magnitude (2³²; a JSON number
    /// still holds the sequence exactly after two million such starts).
    public static let uncleanCloseJump: Int64 = 1 << 32

    /// At open: the jump if the marker is there (whatever the durability now: the last run's
    /// may have been normal), then the marker, with normal durability.
    func markOpen(_ layout: StoreLayout) throws(ContextError) {
        let marker = layout.openMarker
        let found = FileSystem.exists(marker)
        if found {
            sequence += Self.uncleanCloseJump
            try recordSequenceJump()
        }
        guard options.durability == .normal else {
            // Nothing is told before it is on the disk: no marker, once the jump is recorded
            // (until then it stays, for `finish` to remove once a store has taken the jump).
            if found { openMarker = marker }
            if !sequenceJumpUnrecorded { removeOpenMarker() }
            return
        }
        let text = "The stores in this directory are open (pid \(Processes.currentID)). Found while nothing has them open, "
            + "it means they were not closed cleanly: Seam then numbers saves from further on (see Context+Sequence).\n"
        do throws(SystemError) { try FileSystem.writeAtomically(Array(text.utf8), to: marker) } catch {
            throw ContextError(.store(StoreError(.system(error), path: marker)))
        }
        openMarker = marker
    }

    /// At open, after `markOpen`: reads the lease, numbers from past it when the stores are
    /// behind it, and leases ahead. Behind: the sequence below the lease's (the last stop was not
    /// clean, or every store was restored from an older copy), or, level with it, a store below
    /// the number it closed with (that store restored). A lease that cannot be read is taken as
    /// far ahead as an unclean close.
    func takeLease(_ layout: StoreLayout) throws(ContextError) {
        let path = layout.sequenceLease
        lease = (path, .min)
        if let told = readLease(path) {
            let restored = told.stores.sorted { $0.key < $1.key }.filter { name, closedWith in
                guard let h = stores[name], let now = try? SaveJournal.sequence(in: h.db) else { return false }
                return now < closedWith
            }.map(\.key)
            // Written while the stores were open (no store lines), the lease is ahead of every
            // number used then: the stores level with it still lost what came after.
            let cleanClose = !told.stores.isEmpty
            if sequence < told.through || (sequence == told.through && (!restored.isEmpty || !cleanClose)) {
                let why = restored.isEmpty
                    ? "the stores hold sequence \(sequence), below the \(told.through) that may have been told (the last stop was "
                        + "not clean, or the stores were restored from an older copy)"
                    : "\(restored.joined(separator: " and ")) holds an older sequence number than it closed with (restored from an older copy?)"
                recovered.append("\(why): saves are numbered from \(told.through + 2) on, and a resume from before gets a fresh result")
                for name in restored {
                    olderThanTold[name] = "its file holds an older save sequence than it closed with: it was put back from an older "
                        + "copy (saves made after that copy are not in it); subscriptions get a fresh result"
                }
                // Past the lease, not to it: a resume from its last number must not find "nothing since".
                sequence = told.through + 1
                try recordSequenceJump()
            }
        }
        try lease(through: sequence)
    }

    /// The lease, nil when there is none. One that cannot be read is taken as far ahead as an
    /// unclean close would move the sequence (and said in `recovered`).
    private func readLease(_ path: String) -> SequenceLease? {
        guard FileSystem.exists(path) else { return nil }
        do throws(SystemError) {
            if let lease = SequenceLease(text: String(decoding: try FileSystem.read(path), as: UTF8.self)) { return lease }
            recovered.append("the sequence lease \(path) is not one: taken as after an unclean close")
        } catch {
            recovered.append("the sequence lease could not be read (\(error)): taken as after an unclean close")
        }
        return SequenceLease(through: sequence + Self.uncleanCloseJump)
    }

    /// Makes sure the lease covers `number` before it is used, and stays ahead of it: reached,
    /// it moves `leaseBlock` ahead, on the disk. (Never level while the stores are open, so that
    /// an unclean stop always leaves the stores behind it.) Nothing without a directory (in
    /// memory), nor before `takeLease` (the jumps an open takes before it are covered there,
    /// before anything is told).
    func lease(through number: Int64) throws(ContextError) {
        guard let (path, through) = lease, number >= through else { return }
        let ahead = number + Self.leaseBlock
        try writeLease(SequenceLease(through: ahead), to: path)
        lease = (path, ahead)
    }

    private func writeLease(_ lease: SequenceLease, to path: String) throws(ContextError) {
        do throws(SystemError) { try FileSystem.writeAtomically(Array(lease.text.utf8), to: path) } catch {
            throw ContextError(.store(StoreError(.system(error), path: path)))
        }
    }

    /// Writes the sequence into the first open store and flushes it; with none open, the next
    /// store to open takes it (`reopen`). The lease covers it either way (once taken).
    func recordSequenceJump() throws(ContextError) {
        try lease(through: sequence)
        // A conditional save read before the jump cannot be checked against the history after
        // it (saves lost with the stores, or a store older than what was read): refused, as a
        // save from history no longer kept is.
        try raiseHistoryForgotten(to: sequence)
        guard let name = stores.keys.sorted().first, let h = stores[name] else {
            sequenceJumpUnrecorded = true
            return
        }
        do { try SaveJournal.setSequence(sequence, in: h.db) } catch { throw ContextError(.database(error)) }
        h.db.flushWAL()
        sequenceJumpUnrecorded = false
    }

    /// Closes every store, each put on the disk first, and then removes the open marker: what
    /// the next open takes for a clean close. Called by `deinit` too; the context serves nothing after.
    public func finish() {
        var closing = SequenceLease(through: sequence)
        for name in stores.keys.sorted() {
            stores[name]?.db.flushWAL()
            if let h = stores[name], let n = try? SaveJournal.sequence(in: h.db) { closing.stores[name] = n }
            close(name, reason: "the stores were closed")  // its checkpointer stops with it
        }
        if !sequenceJumpUnrecorded { removeOpenMarker() }
        // Level with the stores, each store's own number beside: the next open resumes where
        // this one stopped, unless a store is found behind its number. (Should the write fail,
        // the lease stays ahead and the next open numbers from past it: resumes get fresh results.)
        if let (path, _) = lease {
            lease = nil  // once: a second `finish` (from `deinit`) has no stores to say
            try? writeLease(closing, to: path)
        }
    }

    private func removeOpenMarker() {
        guard let marker = openMarker else { return }
        try? FileSystem.remove(marker)
        openMarker = nil
    }
}
