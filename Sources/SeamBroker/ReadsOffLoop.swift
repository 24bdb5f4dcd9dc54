import SeamContext
import SeamJSON
import SeamProtocol
import SeamQuery
import SeamSchema
import SeamSystem

/// What a read run on a reader thread hands back to the loop.
enum ReadOutcome: Sendable {
    /// A whole reply frame, made on the reader.
    case frame([UInt8])
    /// A subscriber's reply frame, and the sequence its result then stands at.
    case built([UInt8], sequence: Int64)
    /// A new channel's result as of `sequence`: its window, and its rows as the wire writes them.
    case channelLoaded(ResultWindow, rows: ArraySlice<UInt8>, sequence: Int64)
    /// A channel's query matched more rows than a channel may hold.
    case tooManyRows
    /// The read failed; the loop says why (`readError`), and closes a store found damaged.
    case failed(ReaderPool.ReadFailure)
    /// A big Save's frame, read off the loop (`CallHandler.readBigSaveOffLoop`): its request or why it was refused;
    /// nil when it is not a save the reader could read (the loop reads it as any frame).
    case readSave(Result<SaveRequest, VarlinkError>?, id: JSON?, answers: Bool)
    /// Work off the loop that hands nothing back (a save in steps' commit).
    case ran

    /// The sequence number a subscriber's result stands at.
    var resultSequence: Int64? {
        switch self {
        case .built(_, let sequence), .channelLoaded(_, _, let sequence): sequence
        default: nil
        }
    }
}

/// Reads off the loop (issue: one client cannot take the broker): a general Fetch, a Count and a
/// channel's first result run on the `ReaderPool`; the loop routes and checks the request,
/// and answers when the reader is done. A connection waits meanwhile (`Connection.awaitingRead`):
/// its later calls are handled after, so that replies keep their order.
final class ReadsOffLoop: SubscribersHost {
    private let context: Context
    private let connections: ConnectionTable
    private let readers: ReaderPool
    /// What the readers and the committer hand back, each to what asked for it.
    private let offLoop: OffLoopResults
    private let steps: SteppedSaves
    private let metrics: BrokerMetrics
    private let turns: TurnScheduler
    private let predicateCost: Int
    /// Handles every call `c` has read (`CallHandler.processFrames`).
    var processFrames: (Connection) -> Void = { _ in }

    init(context: Context, connections: ConnectionTable, readers: ReaderPool, offLoop: OffLoopResults, steps: SteppedSaves,
         metrics: BrokerMetrics, turns: TurnScheduler, predicateCost: Int) {
        self.context = context
        self.connections = connections
        self.readers = readers
        self.offLoop = offLoop
        self.steps = steps
        self.metrics = metrics
        self.turns = turns
        self.predicateCost = predicateCost
    }

    /// Runs `work` on a reader; `then` gets its outcome on the loop. The time it took is charged
    /// to `c` (`readLane`).
    /// `lane` overrides the one `c`'s reads take (a big save's frame and reply go on the heavy one).
    func onReader(for c: Connection?, lane: ReaderPool.Lane? = nil, _ work: @escaping @Sendable (ReaderPool.Connections) -> ReadOutcome,
                  then: @escaping (ReadOutcome) -> Void) {
        let (id, poster) = offLoop.expect { [unowned self] outcome, seconds in
            c?.charge(readSeconds: seconds)
            steps.noteActivity(of: c)
            then(outcome)
        }
        readers.submit(priority: c?.readPriority ?? .role, lane: lane ?? c?.readLane ?? .light) { connections in
            let start = WallClock.monotonic()
            let outcome = work(connections)
            poster.post(id, outcome, seconds: WallClock.monotonic() - start)
        }
    }

    /// The outcomes the readers posted, each to what asked for it.
    func takeReadOutcomes() {
        // A subscriber's result read after a save in steps committed on its thread, and before
        // the loop has told anyone of it, waits until it has: the save's diff must come before
        // the result that holds it, and then be dropped (`SubscriptionFlow`).
        offLoop.take { [unowned self] outcome in
            guard steps.committing, let at = outcome.resultSequence else { return false }
            return at > context.sequence
        }
    }

    /// Answers call `id` of `c` with the reply a reader makes: the connection waits for it, then
    /// goes on with the calls it sent after.
    /// `method` names the call in the metrics (nil: counted by whoever asked).
    func answerLater(_ c: Connection, id: JSON?, method: String? = nil, lane: ReaderPool.Lane? = nil,
                     _ work: @escaping @Sendable (ReaderPool.Connections) -> ReadOutcome) {
        c.awaitingRead = true
        let started = metrics.start()
        onReader(for: c, lane: lane, work) { [unowned self] outcome in
            c.awaitingRead = false
            let error: VarlinkError? = if case .failed(let f) = outcome { context.readError(f) } else { nil }
            var reply: [UInt8] = []
            switch outcome {
            case .frame(let bytes): reply = bytes
            case .failed: reply = Reply(error!, id: id).frame()
            case .built, .channelLoaded, .tooManyRows, .readSave, .ran: break
            }
            if let method { metrics.answered(method, reply: reply, started: started) }
            guard !c.closed else { return }
            if !reply.isEmpty { connections.send(frame: reply, to: c) }
            resumeAfterRead(c)
        }
    }

    /// A connection whose read was answered goes on with its calls (on this turn's schedule).
    func resumeAfterRead(_ c: Connection) {
        if c.readClosed, c.discardsOutput, !c.closed, c.parked == nil {
            // Its client left while the read ran: the calls it sent before are handled, then it closes.
            processFrames(c)
            // Unless a call waits again — for a reader, or parked for a store — which ends it then.
            if !c.awaitingRead, c.parked == nil { connections.close(c) }
            return
        }
        turns.schedule(c)
        if c.readClosed { connections.closeIfFinished(c) }
    }

    // MARK: - Fetch and Count

    /// `Fetch` without a uuid, and `Count`: the request is read and routed here, and run on a
    /// reader (`ReadJobs`).
    func readOnReader(_ call: Call, _ c: Connection) -> [UInt8] {
        let counts = call.member == "Count"
        var r: FetchRequest
        switch context.fetchRequest(counts ? ReadJobs.countParameters(call.parameters) : call.parameters) {
        case .success(let x): r = x
        case .failure(let e): return Reply(e, id: call.id).frame()
        }
        if counts { r.limit = nil }
        let target: ReadTarget
        do { target = try context.readTarget(r.entity) } catch { return Reply(VarlinkError(error), id: call.id).frame() }
        let costLimit = predicateCost
        answerLater(c, id: call.id, method: call.method, counts ? ReadJobs.count(r, target: target, costLimit: costLimit, id: call.id)
                                           : ReadJobs.fetch(r, target: target, costLimit: costLimit, id: call.id))
        return []
    }
}
