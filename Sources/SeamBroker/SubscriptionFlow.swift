/// How one subscription's updates reach its connection, as a state machine: events in (a
/// commit's diff, the connection drained its outbox, the resync built off the loop), actions out
/// (send these bytes, build a resync). Pure: the broker performs the actions.
///
/// ```
///        diff, backlog within budget: send it
///   live ──────────────────────────────────────▶ live
///     │ diff, backlog past budget: drop it (and every later one)
///     ▼
///   behind(from) ── drained ──▶ resyncing(from, at): build the result as of `at`, off the loop;
///     ▲                            diffs after `at` are held (up to the budget)
///     │ held past budget               │ built
///     └──────────────────────────────  ▼
///                                    live: send the resync, then the held diffs
/// ```
///
/// A subscriber that reads slower than commits come is so sent diffs while they cost less than a
/// whole result would (the budget grows with its result), and one resync each time it has read
/// everything — never a resync while it is still behind, so a slow reader costs seamd at most
/// about one result's bytes per result's bytes it reads.
struct SubscriptionFlow: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case live
        /// Diffs stopped at `from` (the last sequence it was sent): a resync is owed.
        case behind(from: Int64)
        /// A resync as of `at` is being built; diffs after `at` are held.
        case resyncing(from: Int64, at: Int64)
    }

    enum Action: Sendable, Equatable {
        /// Queue this frame; the subscriber's result then stands at `sequence`.
        case send([UInt8], sequence: Int64)
        /// Build the result as of now (the caller stamps it) and hand it to `resyncBuilt`.
        case buildResync(from: Int64)
    }

    private(set) var state: State = .live
    /// Diff frames after the moment of the resync being built, in order, with their sequences.
    private(set) var held: [Held] = []
    struct Held: Sendable, Equatable {
        var frame: [UInt8]
        var sequence: Int64
    }
    private(set) var heldBytes = 0
    /// The held diffs passed the budget: once the resync is sent, the subscription is behind again.
    private(set) var heldOverflowed = false

    /// The sequence its updates stopped at, while it is owed a resync.
    var missedFrom: Int64? {
        switch state {
        case .live: return nil
        case .behind(let from), .resyncing(let from, _): return from
        }
    }

    /// A commit's diff: sent while the connection's backlog (`queued` bytes) is within `budget`;
    /// past it the subscription falls behind at `lastSent`. While a resync is built, diffs after
    /// its moment are held.
    mutating func diff(_ frame: [UInt8], sequence: Int64, lastSent: Int64, queued: Int, budget: Int) -> [Action] {
        switch state {
        case .live:
            if queued > budget {
                state = .behind(from: lastSent)
                return []
            }
            return [.send(frame, sequence: sequence)]
        case .behind:
            return []
        case .resyncing(_, let at):
            guard sequence > at, !heldOverflowed else { return [] }
            if heldBytes + frame.count > budget {
                heldOverflowed = true
                held = []
                heldBytes = 0
                return []
            }
            held.append(Held(frame: frame, sequence: sequence))
            heldBytes += frame.count
            return []
        }
    }

    /// Owed a resync from `from` (its store came back, the results were fetched afresh): from
    /// now on as if it had fallen behind there. A resync being built still goes out.
    mutating func fallBehind(from: Int64) {
        if case .live = state { state = .behind(from: from) }
    }

    /// The connection has written everything queued: a subscription behind starts its resync.
    /// `now` is the sequence the resync will stand at.
    mutating func drained(now: Int64) -> [Action] {
        guard case .behind(let from) = state else { return [] }
        state = .resyncing(from: from, at: now)
        held = []
        heldBytes = 0
        heldOverflowed = false
        return [.buildResync(from: from)]
    }

    /// The resync as of `at` is built: it goes out, then the diffs held since, and the
    /// subscription is live — or behind again at `at` when they were too many to hold.
    mutating func resyncBuilt(_ frame: [UInt8]) -> [Action] {
        guard case .resyncing(_, let at) = state else { return [] }
        var out: [Action] = [.send(frame, sequence: at)]
        if heldOverflowed {
            state = .behind(from: at)
        } else {
            out += held.map { .send($0.frame, sequence: $0.sequence) }
            state = .live
        }
        held = []
        heldBytes = 0
        heldOverflowed = false
        return out
    }

    /// The resync could not be built: behind as before, to try again at the next drain.
    mutating func resyncFailed() {
        guard case .resyncing(let from, _) = state else { return }
        state = .behind(from: from)
        held = []
        heldBytes = 0
        heldOverflowed = false
    }
}
