import SeamSystem
import Synchronization

/// Keeps the pages its writer is about to write in a WAL in the kernel's page cache, from a
/// thread of its own, so that a commit does not wait for the disk to read them.
///
/// A WAL frame is a page and a 24-byte header, so nearly every frame SQLite writes ends part
/// way into a page of the file. A page the kernel holds is overwritten in memory; one it has
/// dropped must first be read from the disk (ext4 reads a block it is asked to change in part),
/// and the committing thread — the broker's loop — waits for that read. The WAL is written
/// from its start again after each checkpoint, over pages last written seconds or minutes
/// before, and a kernel that reclaims clean page cache early (as a VM's free-page reclaim
/// does) drops some of them meanwhile: on such a machine the ticker's step ends waited
/// 3–35 ms on those reads, a few times a run, beside a 0.07 ms median.
///
/// After each commit the writer tells `committed(frames:)` where the WAL ends; every
/// `step` bytes it asks the thread to read ahead the `window` after that end. When a checkpoint
/// has copied every frame back, the next commit starts the WAL over at its start:
/// `startsOver()` then asks for the file's first `startWindow`. Nothing is read that the kernel
/// holds, but asking looks at every page asked for: the window is asked again at every step, so
/// that a page dropped since is read again before the writer reaches it, and the start only
/// when the WAL is about to start over (ARCHITECTURE.md, "Checkpoints", has what each cost).
final class WALReadAhead: Sendable {
    /// What is read ahead of the WAL's end, and how far the end moves before the next read-ahead.
    static let window = 1 << 20
    static let step = 256 << 10
    /// What is read of the file's start when the WAL is about to start over there.
    static let startWindow = 4 << 20

    private let path: String
    private let frameBytes: Int
    /// The WAL's end (bytes) the thread is asked to read ahead of; -1 until a commit.
    private let asked = Atomic<Int>(-1)
    /// Whether the file's start is to be read (`startsOver`).
    private let startWanted = Atomic<Bool>(false)
    private let wakeup = Semaphore()
    private let stopping = Atomic<Bool>(false)

    /// Starts the thread for the WAL at `path` of a store with `pageSize`-byte pages.
    init(path: String, pageSize: Int) throws(SystemError) {
        self.path = path
        frameBytes = pageSize + 24
        try Threads.detach { [self] in self.loop() }
    }

    /// On the writer's thread, after each commit: the WAL holds `frames` frames.
    func committed(frames: Int) {
        let end = 32 + frames * frameBytes
        let last = asked.load(ordering: .relaxed)
        guard last < 0 || end < last || end - last >= Self.step else { return }
        asked.store(end, ordering: .relaxed)
        wakeup.post()
    }

    /// Every frame is copied back: the next commit writes the WAL from its start.
    func startsOver() {
        startWanted.store(true, ordering: .relaxed)
        wakeup.post()
    }

    /// Ends the thread (after a read-ahead it is making).
    func stop() {
        stopping.store(true, ordering: .releasing)
        wakeup.post()
    }

    private func loop() {
        let file = ReadAhead(path: path)
        while true {
            wakeup.wait()
            if stopping.load(ordering: .acquiring) { return }
            let end = asked.load(ordering: .relaxed)
            if end >= 0 { file.willNeed(offset: max(0, end - frameBytes), length: Self.window) }
            if startWanted.exchange(false, ordering: .relaxed) { file.willNeed(offset: 0, length: Self.startWindow) }
        }
    }
}
