import SeamContext
import SeamJSON
import SeamProtocol
import SeamSystem

/// What a save in steps asks of the broker that hosts it.
protocol SteppedSavesHost: AnyObject {
    /// Subscribers hear now of what a save completed before this one began changed.
    func refetchIfInvalidated()
    /// The save's turn took `seconds` of the loop: charged to its caller's turns.
    func charge(_ c: Connection, seconds: Double)
    /// The save in steps ended (committed, or failed): subscribers and its caller are told.
    func stepsEnded(_ running: SteppedSaves.Stepping, _ result: Result<ChangeSet?, ContextError>)
}

/// Big saves in steps (issue: one client cannot take the broker). A save of more than
/// `stepsAbove` operations into one store is staged and written `rowsPerStep` at a time, for
/// about `stepSeconds` per round of the loop, inside one transaction (`Context+Steps`):
/// between its turns everyone else is served — reads, and saves into the other store (the
/// ticker's alarms while a plugin saves 1,000 timers). Calls that would write into its store wait
/// for it (`WriteGate`); while its commit runs on a thread of its own, every store's
/// writes wait. It is still one atomic save with one reply; its caller's later calls wait for that
/// reply, as they wait for a read (`Connection.awaitingRead`).
final class SteppedSaves {
    weak var host: (any SteppedSavesHost)?
    private let context: Context
    private let loop: EventLoop
    /// What the committer hands back to the loop (shared with the readers).
    private let offLoop: OffLoopResults
    /// The thread the save's commit runs on: one, kept.
    private let committer = WorkerThread()
    /// The big save being written in steps, while one is.
    private(set) var running: Stepping?
    /// Whether its commit runs on the committer now (the subscribers' results read meanwhile
    /// wait for it: `Broker.takeReadOutcomes`).
    private(set) var committing = false
    /// When it may take its next turn (it rests while others are busy); when a connection other
    /// than the last to save in steps last had a turn or a read answered; and that connection.
    private var resumeAt = 0.0
    private var othersActiveAt = 0.0
    private weak var lastStepper: Connection?

    init(context: Context, loop: EventLoop, offLoop: OffLoopResults) {
        self.context = context
        self.loop = loop
        self.offLoop = offLoop
    }

    /// Saves of more operations than this go in steps: fewer take less than a turn anyway.
    static let stepsAbove = 64
    /// Operations staged, or rows written, per step: a step takes tens of microseconds.
    static let rowsPerStep = 16
    /// The loop time a save in steps takes per round, at most: short, since whoever waits for the
    /// loop — a reply from a reader, the ticker's alarm — waits for a round to end. A turn ends
    /// sooner when an event waits (`EventLoop.hasPendingEvents`).
    static let stepSeconds = 0.0005
    /// While others have calls (one in the last `busySeconds`), the save in steps rests this
    /// long after each turn: the loop then waits in `epoll` half the time, so that a call that
    /// comes (the ticker's alarm, a reply from a reader) is taken at once — a loop that never
    /// rests is preempted by the kernel for milliseconds at a time on a busy machine — and the
    /// big save, not everyone else, takes the slowdown. Alone, or beside clients that call less
    /// often than every `busySeconds` (a dashboard polling every 50 ms), it runs flat out.
    static let stepRestSeconds = 0.001
    static let busySeconds = 0.01

    /// Whether the save in steps may take a turn now (not resting).
    var mayRun: Bool { running != nil && !committing && WallClock.monotonic() >= resumeAt }

    /// Notes that `c` (nil: seamd's own work for someone) had a turn or a read answered: unless
    /// it is the one that saves in steps — whose own next save, read off the loop between two
    /// big ones, is no one else's call — the save in steps rests between its turns for a while.
    func noteActivity(of c: Connection?, at now: Double = WallClock.monotonic()) {
        if c == nil || c !== lastStepper { othersActiveAt = now }
    }

    /// The save in steps and whom it answers.
    struct Stepping {
        let save: SteppedSave
        let connection: Connection
        let request: SaveRequest
        let id: JSON?
        let answers: Bool
    }

    /// Begins `request` in steps for `c`: nil when it is saved at once instead (small, two
    /// stores, deletes, or another save runs in steps); else the reply to send now — empty while
    /// it runs, an error if it could not begin.
    func begin(_ request: SaveRequest, author: String, _ c: Connection, id: JSON?, answers: Bool) -> [UInt8]? {
        guard request.operations.count > Self.stepsAbove, running == nil else { return nil }
        let save: SteppedSave?
        do { save = try context.beginSteps(request, author: author) } catch { return Reply(WireRequests.error(error, in: request), id: id).frame() }
        guard let save else { return nil }
        save.commitsElsewhere = true
        host?.refetchIfInvalidated()  // a save that had committed in part was finished first
        running = Stepping(save: save, connection: c, request: request, id: id, answers: answers)
        lastStepper = c
        c.awaitingRead = true  // its later calls wait for this one's reply
        return []
    }

    /// The save in steps' turn in a round: steps for about `seconds` — less when someone
    /// else's event waits — charged to its caller's turns. Its commit runs on a thread of its own
    /// (`commitOffLoop`); a save that fails ends here, with its reply and the calls that waited.
    func takeTurn(seconds: Double) {
        guard let running, !committing else { return }
        let began = WallClock.monotonic()
        var outcome = SteppedSave.Outcome.unfinished
        do throws(ContextError) {
            // A step at least; then until the turn's time is up, or someone else's event waits.
            while true {
                outcome = try context.step(running.save, rows: Self.rowsPerStep)
                guard case .unfinished = outcome, WallClock.monotonic() - began < seconds, !loop.hasPendingEvents else { break }
            }
        } catch {
            end(running, .failure(error))
            return
        }
        let ended = WallClock.monotonic()
        host?.charge(running.connection, seconds: ended - began)
        switch outcome {
        case .finished(let set):
            end(running, .success(set))
        case .readyToCommit(let commit):
            commitOffLoop(commit, of: running)
        case .unfinished:
            if ended - othersActiveAt < Self.busySeconds {
                resumeAt = ended + Self.stepRestSeconds
                _ = loop.after(Self.stepRestSeconds) {}  // the loop's wait ends then
            }
        }
    }

    /// Runs the save in steps' commit — its history entry and its pages written to the WAL, a
    /// millisecond for a thousand rows — on the committer's thread (one, kept: starting a thread
    /// for each commit made every store's writes wait 1.5 ms rather than 1.0). Meanwhile every
    /// store's writes wait (its sequence number is taken: `Context.sequenceClaimed`), and reads,
    /// replies and everything else go on.
    private func commitOffLoop(_ commit: SteppedCommit, of running: Stepping) {
        committing = true
        let (id, poster) = offLoop.expect { [unowned self] _, _ in
            committing = false
            // Its store may have closed meanwhile, which completed it (`Context.endSteps`).
            let result: Result<ChangeSet?, ContextError>
            do throws(ContextError) { result = .success(try context.completeCommit(running.save)) } catch { result = .failure(error) }
            if self.running?.save === running.save { end(running, result) }
            offLoop.releaseHeld()
        }
        do {
            try committer.run {
                commit.run()
                poster.post(id, .ran, seconds: 0)
            }
        } catch {
            // No thread to run it on: here, then.
            commit.run()
            offLoop.answer(id, .ran)
        }
    }

    /// The save ended: its caller's later calls may go on, and the broker tells who must know.
    private func end(_ running: Stepping, _ result: Result<ChangeSet?, ContextError>) {
        self.running = nil
        running.connection.awaitingRead = false
        host?.stepsEnded(running, result)
    }

    /// The save in steps for `Status`: its store, caller and progress, or null.
    func status() -> JSON {
        guard let running else { return .null }
        let progress = running.save.progress
        return .object(["store": .string(running.save.store), "connection": .integer(Int64(running.connection.id)),
                        "operations": .integer(Int64(running.request.operations.count)),
                        "done": .integer(Int64(progress.done)), "of": .integer(Int64(progress.of))])
    }
}
