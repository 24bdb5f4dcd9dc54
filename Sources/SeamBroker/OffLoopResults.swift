import SeamSystem

/// Work handed to other threads (the readers, the committer) and what each hands back to the
/// loop: a number per piece of work, the continuation the loop runs with its outcome, and the
/// mailbox and waker the threads post through. Outcomes may be held back (`take`'s `holding`)
/// and let through later (`releaseHeld`), in the order they came.
final class OffLoopResults {
    typealias Continuation = (ReadOutcome, Double) -> Void

    /// What a thread posts its outcome through: the work's number, the outcome, the seconds it took.
    struct Poster: Sendable {
        let mailbox: Mailbox<(Int, ReadOutcome, Double)>
        let waker: EventLoop.Waker?

        func post(_ id: Int, _ outcome: ReadOutcome, seconds: Double) {
            mailbox.post((id, outcome, seconds))
            waker?.wake()
        }
    }

    private let mailbox = Mailbox<(Int, ReadOutcome, Double)>()
    private var continuations: [Int: Continuation] = [:]
    private var held: [(Int, ReadOutcome, Double)] = []
    private var nextID = 0
    /// Wakes the loop when an outcome is posted (set once the loop runs: `Broker.start`).
    var waker: EventLoop.Waker?

    /// Whether any work handed out has not been answered yet.
    var isEmpty: Bool { continuations.isEmpty }

    /// A number for a new piece of work whose outcome `continuation` takes, and what its thread
    /// posts through.
    func expect(_ continuation: @escaping Continuation) -> (id: Int, poster: Poster) {
        nextID += 1
        continuations[nextID] = continuation
        return (nextID, Poster(mailbox: mailbox, waker: waker))
    }

    /// Runs the continuation of work `id` now (its outcome did not need a thread after all).
    func answer(_ id: Int, _ outcome: ReadOutcome, seconds: Double = 0) {
        continuations.removeValue(forKey: id)?(outcome, seconds)
    }

    /// Hands every posted outcome to its continuation, except those `holding` keeps back.
    func take(holding: (ReadOutcome) -> Bool) {
        for (id, outcome, seconds) in mailbox.take() {
            if holding(outcome) {
                held.append((id, outcome, seconds))
                continue
            }
            answer(id, outcome, seconds: seconds)
        }
    }

    /// Hands the outcomes held back to their continuations, in the order they came.
    func releaseHeld() {
        let released = held
        held = []
        for (id, outcome, seconds) in released { answer(id, outcome, seconds: seconds) }
    }
}
