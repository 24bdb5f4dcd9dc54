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
    /// A big Save's frame, read off the loop (`Broker+Steps`): its request or why it was refused;
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
extension Broker {
    /// Runs `work` on a reader; `then` gets its outcome on the loop. The time it took is charged
    /// to `c` (`readLane`).
    /// `lane` overrides the one `c`'s reads take (a big save's frame and reply go on the heavy one).
    func onReader(for c: Connection?, lane: ReaderPool.Lane? = nil, _ work: @escaping @Sendable (ReaderPool.Connections) -> ReadOutcome,
                  then: @escaping (ReadOutcome) -> Void) {
        let (id, poster) = offLoop.expect { [unowned self] outcome, seconds in
            if let c { charge(c, readSeconds: seconds) }
            steps.noteActivity(of: c)
            then(outcome)
        }
        readers.submit(priority: c.map(readPriority) ?? .role, lane: lane ?? c.map(readLane) ?? .light) { connections in
            let start = WallClock.monotonic()
            let outcome = work(connections)
            poster.post(id, outcome, seconds: WallClock.monotonic() - start)
        }
    }

    /// How long a plugin's reads may take, on a moving average (`Connection.readAverage`),
    /// before its next ones run on the heavy lane: one slow read moves it there; many quick ones
    /// never do.
    static let heavyReadSeconds = 0.01

    /// The lane of `c`'s next read: for a plugin (or a client that has not said Hello) whose reads
    /// lately took long, the heavy one. The roles' and a person's reads stay on the light lane,
    /// however large (the ticker's first result is).
    func readLane(_ c: Connection) -> ReaderPool.Lane {
        readPriority(c) == .plugin && c.readAverage > Self.heavyReadSeconds ? .heavy : .light
    }

    /// Folds one read's time into `c`'s average: a quarter of the way to each new read.
    private func charge(_ c: Connection, readSeconds: Double) {
        c.readAverage += (readSeconds - c.readAverage) / 4
    }

    /// Whose read goes first: the built-in roles', then people's (`seam`), then plugins'.
    func readPriority(_ c: Connection) -> ReaderPool.Priority {
        if c.supervisedAs != nil, c.hello?.role != "plugin" { return .role }
        switch c.hello?.role {
        case "cli": return .person
        case "ticker", "migrate", "sync": return .role
        default: return .plugin
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
    func answerLater(_ c: Connection, id: JSON?, lane: ReaderPool.Lane? = nil, _ work: @escaping @Sendable (ReaderPool.Connections) -> ReadOutcome) {
        c.awaitingRead = true
        onReader(for: c, lane: lane, work) { [unowned self] outcome in
            c.awaitingRead = false
            let error: VarlinkError? = if case .failed(let f) = outcome { readError(f) } else { nil }
            guard !c.closed else { return }
            switch outcome {
            case .frame(let bytes): connections.send(frame: bytes, to: c)
            case .failed: connections.send(Reply(error!, id: id), to: c)
            case .built, .channelLoaded, .tooManyRows, .readSave, .ran: break
            }
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
        schedule(c)
        if c.readClosed { connections.closeIfFinished(c) }
    }

    /// A reader's failure as the error its caller gets. Damage SQLite found closes the store
    /// (as when the loop's own connection finds it).
    func readError(_ failure: ReaderPool.ReadFailure) -> VarlinkError {
        switch failure {
        case .budgetPassed(let seconds):
            return .queryTooExpensive("the query ran past its budget of \(seconds) s and was stopped; narrow the predicate "
                                      + "(an indexed equality, a prefix rather than a pattern), or add a limit", limit: "querySeconds")
        case .storeClosed(let store):
            let why = context.closedStores[store].map { "it is closed: \($0)" } ?? "it was opened again while the read waited; try again"
            return .storeUnavailable(store: store, "the \(store) store closed under the read (\(why))")
        case .fileReplaced(let store):
            return .storeUnavailable(store: store, "the \(store) store's file was removed or replaced a moment ago and seamd is "
                                     + "putting its data back; try again in a second")
        case .damaged(let store, let e):
            return VarlinkError(context.reportDamage(e, store: store))
        case .database(let e):
            return .storeFailure("\(e)")
        }
    }

    // MARK: - Fetch and Count

    /// `Fetch` without a uuid: routed here; planned (the predicate parsed, priced and compiled),
    /// run and written into its reply frame on a reader — a predicate of any length costs the
    /// loop nothing.
    func fetchOnReader(_ p: JSONObject, id: JSON?, _ c: Connection) -> [UInt8] {
        let r: FetchRequest
        switch request(p) {
        case .success(let x): r = x
        case .failure(let e): return Reply(e, id: id).frame()
        }
        let target: ReadTarget
        do { target = try context.readTarget(r.entity) } catch { return Reply(VarlinkError(error), id: id).frame() }
        let costLimit = configuration.limits.predicateCost
        answerLater(c, id: id) { connections in
            let plan: ReadPlan
            switch Self.checkedPlan(r, kind: .rows, target: target, costLimit: costLimit) {
            case .success(let x): plan = x
            case .failure(let e): return .frame(Reply(e, id: id).frame())
            }
            let order = r.attributes.map { [Entity.identity] + $0.filter { $0 != Entity.identity } } ?? plan.attributes.map(\.name)
            let positions = order.compactMap { name in plan.attributes.firstIndex { $0.name == name } }
            let result: ReadPlan.Result
            do throws(ReaderPool.ReadFailure) { result = try connections.run(plan) } catch { return .failed(error) }
            return .frame(Reply.frame(id: id, capacity: 256 + result.rows.count * 64 * positions.count) { w in
                w.key("rows")
                w.beginArray()
                for row in result.rows {
                    w.beginObject()
                    for i in positions {
                        w.key(plan.attributes[i].name)
                        WireValues.write(row[i], into: &w)
                    }
                    w.endObject()
                }
                w.endArray()
                w.key("sequence")
                w.integer(result.sequence)
            })
        }
        return []
    }

    /// `Count`: routed here, planned and run on a reader.
    func countOnReader(_ p: JSONObject, id: JSON?, _ c: Connection) -> [UInt8] {
        var r: FetchRequest
        // Count takes no sort, limit, offset or fields; like any parameter a method does not know,
        // they are ignored (not checked, and no ORDER BY for a count).
        var p = p
        for ignored in ["sort", "limit", "offset", "fields"] { p[ignored] = nil }
        switch request(p) {
        case .success(let x): r = x
        case .failure(let e): return Reply(e, id: id).frame()
        }
        r.limit = nil
        let request = r
        let target: ReadTarget
        do { target = try context.readTarget(r.entity) } catch { return Reply(VarlinkError(error), id: id).frame() }
        let costLimit = configuration.limits.predicateCost
        answerLater(c, id: id) { connections in
            let plan: ReadPlan
            switch Self.checkedPlan(request, kind: .count, target: target, costLimit: costLimit) {
            case .success(let x): plan = x
            case .failure(let e): return .frame(Reply(e, id: id).frame())
            }
            do throws(ReaderPool.ReadFailure) {
                let result = try connections.run(plan)
                return .frame(Reply(parameters: ["count": .integer(Int64(result.count)), "sequence": .integer(result.sequence)], id: id).frame())
            } catch {
                return .failed(error)
            }
        }
        return []
    }

    /// The plan of `r` (on a reader): refused as a fetch would be, or — before anything runs —
    /// as `QueryTooExpensive` when its predicate costs more per row than `costLimit`.
    static func checkedPlan(_ r: FetchRequest, kind: ReadPlan.Kind, target: ReadTarget, costLimit: Int) -> Result<ReadPlan, VarlinkError> {
        do throws(ContextError) {
            let (plan, predicate) = try target.plan(r, kind: kind)
            if let predicate, let refused = tooCostly(predicate, limit: costLimit) { return .failure(refused) }
            return .success(plan)
        } catch {
            return .failure(VarlinkError(error))
        }
    }

    // MARK: - The cost of a predicate

    /// `QueryTooExpensive` when `predicate` costs more per row than `limit` (`PredicateCost`).
    static func tooCostly(_ predicate: CheckedPredicate, limit: Int) -> VarlinkError? {
        let cost = PredicateCost.perRow(predicate)
        guard cost > limit else { return nil }
        return .queryTooExpensive("the predicate costs about \(cost) units a row to evaluate, above the limit of \(limit) (each LIKE "
                                  + "pattern, wildcard, IN value and OR branch counts; see PROTOCOL.md); split it or narrow it",
                                  limit: "predicateCost")
    }

    /// `QueryTooExpensive` when a subscription's checked predicate costs more per row than the
    /// limit allows (it is matched in memory against every commit of its entity).
    func refusedAsTooCostly(_ predicate: CheckedPredicate) -> VarlinkError? {
        Self.tooCostly(predicate, limit: configuration.limits.predicateCost)
    }
}
