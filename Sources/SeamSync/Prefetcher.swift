import Synchronization
import SeamSystem

/// Produces batches on a thread of its own, at most `depth` ahead of the one that takes them:
/// the import reads and decodes the server's next batch while it plans the last one and seamd
/// saves the one before. A producer that returns nil (no more) or throws ends it; its error is
/// thrown by the `next` that reaches it.
///
/// The producer owns what it uses (the import's PostgreSQL connection) from `init` until
/// `stop` returns: nobody else may touch it meanwhile.
final class Prefetcher<Batch: Sendable>: @unchecked Sendable {
    private let produce: () throws -> Batch?
    private let ready = Mutex<[Result<Batch?, any Error>]>([])
    private let filled = Semaphore()
    private let free: Semaphore
    private let finished = Semaphore()
    private let stopping = Atomic<Bool>(false)
    private var stopped = false
    /// Whether `next` has taken the end (nil, or an error): the thread has returned.
    private var ended = false

    /// Starts the thread. `produce` runs on it, one batch after another.
    init(depth: Int = 1, _ produce: @escaping () throws -> Batch?) throws(SystemError) {
        self.produce = produce
        free = Semaphore(UInt32(max(1, depth)))
        try Threads.detach { [self] in run() }
    }

    private func run() {
        defer { finished.post() }
        while true {
            free.wait()
            if stopping.load(ordering: .acquiring) { return }
            let result = Result { try produce() }
            ready.withLock { $0.append(result) }
            filled.post()
            if case .success(let batch) = result, batch != nil { continue }
            return
        }
    }

    /// The next batch, once produced; nil after the last. Rethrows the producer's error.
    func next() throws -> Batch? {
        guard !ended else { return nil }
        filled.wait()
        let result = ready.withLock { $0.removeFirst() }
        free.post()
        switch result {
        case .success(let batch?): return batch
        case .success(nil):
            ended = true
            return nil
        case .failure(let error):
            ended = true
            throw error
        }
    }

    /// Stops producing and waits for the thread to return (after the batch it is producing, if
    /// any): what it owned is the caller's again. Called once, by the taker.
    func stop() {
        guard !stopped else { return }
        stopped = true
        stopping.store(true, ordering: .releasing)
        free.post()
        finished.wait()
    }
}
