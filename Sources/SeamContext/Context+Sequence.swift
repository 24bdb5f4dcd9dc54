import Glibc
import SeamStore
import SeamSystem

/// Sequence numbers are never given twice, even across a power cut.
///
/// With normal durability a save is told (to its saver, to subscribers) before its commit is
/// on the disk, so a power cut can take the last saves and their numbers back. Numbered again
/// after the restart, other saves would take them: a subscriber resuming from a number it was
/// told before the cut would be answered "nothing since", and keep rows that no longer exist.
///
/// So while a context has the stores open, the directory holds a marker (`StoreLayout.openMarker`),
/// on the disk before the first save. A clean close puts every store on the disk and then
/// removes it. An open that finds it knows the last close was not clean and that saves may have
/// been numbered past what the stores hold: it moves the sequence on by `uncleanCloseJump`, past
/// any number that can have been told, and records that in a store, on the disk, before it
/// numbers a save. Every resume from before then lies behind the new numbers and outside the
/// (empty) ring, so it gets a fresh result. With full durability nothing is told before it is on
/// the disk: a marker left by an earlier run is honoured, but none is kept.
extension Context {
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
        let text = "The stores in this directory are open (pid \(getpid())). Found while nothing has them open, "
            + "it means they were not closed cleanly: Seam then numbers saves from further on (see Context+Sequence).\n"
        do throws(SystemError) { try FileSystem.writeAtomically(Array(text.utf8), to: marker) } catch {
            throw ContextError(.store(StoreError(.system(error), path: marker)))
        }
        openMarker = marker
    }

    /// Writes the sequence into the first open store and flushes it; with none open, the next
    /// store to open takes it (`reopen`).
    func recordSequenceJump() throws(ContextError) {
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
        for name in stores.keys.sorted() {
            stores[name]?.db.flushWAL()
            close(name, reason: "the stores were closed")  // its checkpointer stops with it
        }
        if !sequenceJumpUnrecorded { removeOpenMarker() }
    }

    private func removeOpenMarker() {
        guard let marker = openMarker else { return }
        try? FileSystem.remove(marker)
        openMarker = nil
    }
}
