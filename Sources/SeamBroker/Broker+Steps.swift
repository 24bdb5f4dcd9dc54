import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamSystem

/// Big saves in steps (issue: one client cannot take the broker). A save of more than
/// `stepsAbove` operations into one store is staged and written `rowsPerStep` at a time, for
/// about `stepSeconds` per round of the loop, inside one transaction (`Context+Steps`):
/// between its turns everyone else is served — reads, and saves into the other store (the
/// ticker's alarms while a plugin saves 1,000 timers). Calls that would write into its store wait
/// for it (`Broker+HeldWrites`); while its commit runs on a thread of its own, every store's
/// writes wait. It is still one atomic save with one reply; its caller's later calls wait for that
/// reply, as they wait for a read (`Connection.awaitingRead`).
extension Broker {
    /// Saves of more operations than this go in steps: fewer take less than a turn anyway.
    static let stepsAbove = 64
    /// Operations staged, or rows written, per step: a step takes tens of microseconds.
    static let rowsPerStep = 16
    /// The loop time a save in steps takes per round, at most: short, since whoever waits for the
    /// loop — a reply from a reader, the ticker's alarm — waits for a round to end. A turn ends
    /// sooner when an event waits (`EventLoop.hasPendingEvents`).
    static let stepSeconds = 0.0005
    /// While others have calls (in the last `busySeconds`), the save in steps rests this long
    /// after each turn: the loop then waits in `epoll` half the time, so that a call that comes
    /// (the ticker's alarm, a reply from a reader) is taken at once — a loop that never rests is
    /// preempted by the kernel for milliseconds at a time on a busy machine — and the big save,
    /// not everyone else, takes the slowdown. Alone, it runs flat out.
    static let stepRestSeconds = 0.001
    static let busySeconds = 0.05

    /// Whether the save in steps may take a turn now (not resting).
    var stepsMayRun: Bool { stepping != nil && !stepCommitting && WallClock.monotonic() >= stepsResumeAt }

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
    func saveInSteps(_ request: SaveRequest, author: String, _ c: Connection, id: JSON?, answers: Bool) -> [UInt8]? {
        guard request.operations.count > Self.stepsAbove, stepping == nil else { return nil }
        let save: SteppedSave?
        do { save = try context.beginSteps(request, author: author) } catch { return Reply(WireRequests.error(error, in: request), id: id).frame() }
        guard let save else { return nil }
        save.commitsElsewhere = true
        refetchIfInvalidated()  // a save that had committed in part was finished first
        stepping = Stepping(save: save, connection: c, request: request, id: id, answers: answers)
        lastStepper = c
        c.awaitingRead = true  // its later calls wait for this one's reply
        return []
    }

    /// The save in steps' turn in a round: steps for about `seconds` — less when someone
    /// else's event waits — charged to its caller's turns. Its commit runs on a thread of its own
    /// (`commitOffLoop`); a save that fails ends here, with its reply and the calls that waited.
    func takeStepTurn(seconds: Double) {
        guard let running = stepping, !stepCommitting else { return }
        let began = WallClock.monotonic()
        var outcome = SteppedSave.Outcome.unfinished
        do throws(ContextError) {
            // A step at least; then until the turn's time is up, or someone else's event waits.
            while true {
                outcome = try context.step(running.save, rows: Self.rowsPerStep)
                guard case .unfinished = outcome, WallClock.monotonic() - began < seconds, !loop.hasPendingEvents else { break }
            }
        } catch {
            finishSteps(running, .failure(error))
            return
        }
        let ended = WallClock.monotonic()
        runnable.charge(Int(running.connection.fd), seconds: ended - began)
        switch outcome {
        case .finished(let set):
            finishSteps(running, .success(set))
        case .readyToCommit(let commit):
            commitOffLoop(commit, of: running)
        case .unfinished:
            if ended - othersActiveAt < Self.busySeconds {
                stepsResumeAt = ended + Self.stepRestSeconds
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
        stepCommitting = true
        let (id, poster) = offLoop.expect { [unowned self] _, _ in
            stepCommitting = false
            // Its store may have closed meanwhile, which completed it (`Context.endSteps`).
            let result: Result<ChangeSet?, ContextError>
            do throws(ContextError) { result = .success(try context.completeCommit(running.save)) } catch { result = .failure(error) }
            if stepping?.save === running.save { finishSteps(running, result) }
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

    /// Tells subscribers, and the caller, how the save in steps ended. Its reply — a thousand
    /// changes took the loop 0.75 ms to write — is built on a reader; its caller waits for it.
    private func finishSteps(_ running: Stepping, _ result: Result<ChangeSet?, ContextError>) {
        stepping = nil
        let c = running.connection
        c.awaitingRead = false
        if case .success(let set?) = result {
            publish(set)
            sync.noteCommit(set)
        }
        if context.hasNotices { reportStoreNotices() }
        if !c.closed {
            let id = running.id
            switch result {
            case .success(let set) where running.answers:
                // Only the changes to entities its caller may read, when it said which.
                let capabilities = c.hello.flatMap { $0.capabilities.reads == nil ? nil : $0.capabilities }
                answerLater(c, id: id) { _ in .frame(Self.saveReply(set, id: id, shows: capabilities.map { caps in { caps.mayRead($0) } })) }
            case .failure(let error) where running.answers:
                connections.send(Reply(WireRequests.error(error, in: running.request), id: id), to: c)
                resumeAfterRead(c)
            default:
                resumeAfterRead(c)
            }
        }
        resumeHeldWrites()
    }

    /// The save in steps for `Status`: its store, caller and progress, or null.
    func stepsStatus() -> JSON {
        guard let running = stepping else { return .null }
        let progress = running.save.progress
        return .object(["store": .string(running.save.store), "connection": .integer(Int64(running.connection.id)),
                        "operations": .integer(Int64(running.request.operations.count)),
                        "done": .integer(Int64(progress.done)), "of": .integer(Int64(progress.of))])
    }

    // MARK: - Reading a big save off the loop

    /// Frames from this size are read on a reader when they may be a save: reading a 1,000-row
    /// save's frame took the loop 1.6–2.7 ms, the longest piece of such a save left on it.
    static let offLoopFrameBytes = 32 * 1024

    /// Reads `frame` of `c` — big, and perhaps a save — on a reader: its request comes back to
    /// the loop, which saves it as if it had read it itself (a frame that is not a plain save, or
    /// is not valid, is read on the loop as any other). The connection's later calls wait.
    func readBigSaveOffLoop(_ frame: ArraySlice<UInt8>, from c: Connection) {
        let schema = context.schema
        c.awaitingRead = true
        onReader(for: c, { _ in
            let types: (Entity) -> [String: AttributeType] = { $0.attributeTypes }
            if let q = QuickSave(frame), let request = WireRequests.save(q, schema: schema, types: types) {
                return .readSave(.success(request), id: q.id, answers: true)
            }
            guard let json = try? JSON.decode(frame, limits: JSONLimits(maxDepth: Limits.maxJSONDepth)), let call = try? Call(json),
                  call.method == "org.seam.Store.Save"
            else { return .readSave(nil, id: nil, answers: true) }
            return .readSave(WireRequests.save(call.parameters, schema: schema, types: types), id: call.id, answers: !call.oneway)
        }, then: { [unowned self] outcome in
            c.awaitingRead = false
            guard !c.closed else { return }
            guard case .readSave(let read?, let id, let answers) = outcome, let hello = c.hello else {
                handleFrame(frame, from: c, readOffLoop: false)
                connections.flush(c)
                return resumeAfterRead(c)
            }
            // A store it writes may have begun to hold its writes meanwhile: it waits, as read.
            if parkIfHeld(c, frame) { return }
            switch read {
            case .success(let request):
                let reply = save(request, author: hello.author, c, id: id, answers: answers)
                if answers { connections.send(frame: reply, to: c) }
            case .failure(let error):
                if answers { connections.send(Reply(error, id: id), to: c) }
            }
            if context.hasNotices { reportStoreNotices() }
            connections.flush(c)
            if !c.awaitingRead { resumeAfterRead(c) }  // else it began a save in steps
        })
    }
}
