/// How one subscription's replies reach its connection, as a state machine: events in (a
/// commit's diff, the connection drained its outbox, a result built off the loop), actions out
/// (send this frame, build a result). Pure: the broker performs the actions.
///
/// ```
///              diff, backlog within budget: send it
///   loading ─────────────────────────────────────────▶ live ◀──────────┐
///   (first result built;      result built: send it, then the held     │
///    diffs held)              diffs after its sequence                 │
///                                                                      │
///   live ── diff, backlog past budget: dropped ──▶ behind(from)        │
///   behind ── drained ──▶ resyncing(from): the result built off the    │
///                         loop from a snapshot; diffs held ── built ───┘
///                         (held past budget: behind again after it)
/// ```
///
/// A subscriber that reads slower than commits come is sent diffs while its backlog costs less
/// than a whole result would (the budget grows with its result), and one resync each time it has
/// read everything — never while it is still behind — so what it costs seamd is about what it
/// reads.
struct SubscriptionFlow: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// The first result is being built (`Subscribe`); diffs after `at` are held.
        case loading(at: Int64)
        case live
        /// Diffs stopped after `from` (the last sequence it was sent): a resync is owed.
        case behind(from: Int64)
        /// A resync from `from`, as of `at` or later, is being built; diffs after `at` are held.
        case resyncing(from: Int64, at: Int64)
    }

    enum Action: Sendable, Equatable {
        /// Queue this frame; the subscriber's result then stands at `sequence`.
        case send([UInt8], sequence: Int64)
        /// Build the result (the caller plans it now) and hand it to `built`.
        case build(from: Int64)
    }

    struct Held: Sendable, Equatable {
        var frame: [UInt8]
        var sequence: Int64
    }

    private(set) var state: State
    /// Diff frames after the moment of the result being built, in order.
    private(set) var held: [Held] = []
    private(set) var heldBytes = 0
    /// The held diffs passed the budget: once the result is sent, the subscription is behind
    /// (when any of them came after it).
    private(set) var heldOverflowed = false
    /// The latest sequence of a diff offered while the result was built.
    private(set) var latestOffered: Int64 = 0
    /// Owed a resync after the result being built, whatever it holds (`fallBehind`).
    private(set) var resyncAfter = false

    /// A subscription whose first result is being built as of `at`.
    init(loadingAt at: Int64) { state = .loading(at: at) }

    /// A subscription whose first reply went out with the call: live from the start.
    init() { state = .live }

    /// The sequence its diffs stopped after, while it is owed a resync.
    var missedFrom: Int64? {
        switch state {
        case .live, .loading: return nil
        case .behind(let from), .resyncing(let from, _): return from
        }
    }

    var isBehind: Bool { if case .behind = state { return true } else { return false } }

    /// A commit's diff (`frame`, made only when it is sent or held): sent while the connection's
    /// backlog (`queued` bytes) is within `budget` and the frame fits the `room` its outbox has
    /// left; else the subscription falls behind at `lastSent`. While a result is built, diffs
    /// after its moment are held, up to `budget` bytes.
    mutating func diff(_ frame: () -> [UInt8], sequence: Int64, lastSent: Int64, queued: Int, budget: Int, room: Int = .max) -> [Action] {
        switch state {
        case .live:
            if queued > budget {
                state = .behind(from: lastSent)
                return []
            }
            let f = frame()
            if f.count > room {
                state = .behind(from: lastSent)
                return []
            }
            return [.send(f, sequence: sequence)]
        case .behind:
            return []
        case .loading(let at), .resyncing(_, let at):
            guard sequence > at else { return [] }
            latestOffered = max(latestOffered, sequence)
            if heldOverflowed { return [] }
            let f = frame()
            if heldBytes + f.count > budget {
                heldOverflowed = true
                held = []
                heldBytes = 0
                return []
            }
            held.append(Held(frame: f, sequence: sequence))
            heldBytes += f.count
            return []
        }
    }

    /// Owed a resync from `from` (its store came back with other rows): as if it had fallen
    /// behind there. A result being built still goes out, and is followed by the resync.
    mutating func fallBehind(from: Int64) {
        switch state {
        case .live: state = .behind(from: from)
        case .loading, .resyncing: resyncAfter = true
        case .behind: break
        }
    }

    /// The connection has written everything queued: a subscription behind starts its resync,
    /// to stand at `now` or later.
    mutating func drained(now: Int64) -> [Action] {
        guard case .behind(let from) = state else { return [] }
        state = .resyncing(from: from, at: now)
        clearHeld()
        return [.build(from: from)]
    }

    /// The result being built is ready, standing at `sequence` (at or after the moment it was
    /// asked for): it goes out, then the held diffs after it, and the subscription is live — or
    /// behind at `sequence` when they were too many to hold.
    mutating func built(_ frame: [UInt8], sequence: Int64) -> [Action] {
        switch state {
        case .loading, .resyncing: break
        case .live, .behind: return []
        }
        var out: [Action] = [.send(frame, sequence: sequence)]
        if resyncAfter || (heldOverflowed && latestOffered > sequence) {
            state = .behind(from: sequence)
        } else {
            out += held.filter { $0.sequence > sequence }.map { .send($0.frame, sequence: $0.sequence) }
            state = .live
        }
        clearHeld()
        return out
    }

    /// A resync could not be built: behind as before, to try again at the next drain.
    mutating func resyncFailed() {
        guard case .resyncing(let from, _) = state else { return }
        state = .behind(from: from)
        clearHeld()
    }

    private mutating func clearHeld() {
        held = []
        heldBytes = 0
        heldOverflowed = false
        latestOffered = 0
        resyncAfter = false
    }
}
