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
    /// Rows (or a count) for the loop to use (a channel's first result).
    case result(ReadPlan.Result)
    /// The read failed; the loop says why (`readError`), and closes a store found damaged.
    case failed(ReaderPool.ReadFailure)
}

/// Reads off the loop (issue: one client cannot take the broker): a general Fetch, a Count and a
/// channel's first result run on the `ReaderPool`; the loop routes and checks the request,
/// and answers when the reader is done. A connection waits meanwhile (`Connection.awaitingRead`):
/// its later calls are handled after, so that replies keep their order.
extension Broker {
    /// Runs `work` on a reader; `then` gets its outcome on the loop.
    func onReader(for c: Connection?, _ work: @escaping @Sendable (ReaderPool.Connections) -> ReadOutcome,
                  then: @escaping (ReadOutcome) -> Void) {
        nextReadID += 1
        let id = nextReadID
        readContinuations[id] = then
        let outcomes = readOutcomes
        let waker = readWaker
        readers.submit(priority: c.map(readPriority) ?? .role) { connections in
            outcomes.post((id, work(connections)))
            waker?.wake()
        }
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
        for (id, outcome) in readOutcomes.take() {
            readContinuations.removeValue(forKey: id)?(outcome)
        }
    }

    /// Answers call `id` of `c` with the reply a reader makes: the connection waits for it, then
    /// goes on with the calls it sent after.
    func answerLater(_ c: Connection, id: JSON?, _ work: @escaping @Sendable (ReaderPool.Connections) -> ReadOutcome) {
        c.awaitingRead = true
        onReader(for: c, work) { [unowned self] outcome in
            c.awaitingRead = false
            let error: VarlinkError? = if case .failed(let f) = outcome { readError(f) } else { nil }
            guard !c.closed else { return }
            switch outcome {
            case .frame(let bytes): send(frame: bytes, to: c)
            case .failed: send(Reply(error!, id: id), to: c)
            case .result: break
            }
            resumeAfterRead(c)
        }
    }

    /// A connection whose read was answered goes on with its calls (on this turn's schedule).
    func resumeAfterRead(_ c: Connection) {
        if c.readClosed, c.discardsOutput, !c.closed, c.parked == nil {
            // Its client left while the read ran: the calls it sent before are handled, then it closes.
            processFrames(c)
            if !c.awaitingRead { close(c) }
            return
        }
        schedule(c)
        if c.readClosed { closeIfFinished(c) }
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
        case .damaged(let store, let e):
            return Self.varlink(context.reportDamage(e, store: store))
        case .database(let e):
            return .storeFailure("\(e)")
        }
    }

    // MARK: - Fetch and Count

    /// `Fetch` without a uuid: planned here, run and written into its reply frame on a reader.
    func fetchOnReader(_ p: JSONObject, id: JSON?, _ c: Connection) -> [UInt8] {
        let r: FetchRequest
        switch request(p) {
        case .success(let x): r = x
        case .failure(let e): return Reply(e, id: id).frame()
        }
        if let refused = refusedAsTooCostly(r) { return Reply(refused, id: id).frame() }
        let plan: ReadPlan
        do { plan = try context.readPlan(r, kind: .rows) } catch { return Reply(Self.varlink(error), id: id).frame() }
        let order = r.attributes.map { [Entity.identity] + $0.filter { $0 != Entity.identity } } ?? plan.attributes.map(\.name)
        let positions = order.compactMap { name in plan.attributes.firstIndex { $0.name == name } }
        answerLater(c, id: id) { connections in
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

    /// `Count`: planned here, run on a reader.
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
        if let refused = refusedAsTooCostly(r) { return Reply(refused, id: id).frame() }
        let plan: ReadPlan
        do { plan = try context.readPlan(r, kind: .count) } catch { return Reply(Self.varlink(error), id: id).frame() }
        answerLater(c, id: id) { connections in
            do throws(ReaderPool.ReadFailure) {
                let result = try connections.run(plan)
                return .frame(Reply(parameters: ["count": .integer(Int64(result.count)), "sequence": .integer(result.sequence)], id: id).frame())
            } catch {
                return .failed(error)
            }
        }
        return []
    }

    // MARK: - The cost of a predicate

    /// `QueryTooExpensive` when the request's predicate costs more per row than the limit allows
    /// (`PredicateCost`), before anything runs; nil when it may run.
    func refusedAsTooCostly(_ r: FetchRequest) -> VarlinkError? {
        guard let text = r.predicate, let entity = try? context.servedEntity(r.entity),
              let predicate = try? CheckedPredicate(text, entity: entity, parameters: r.parameters)
        else { return nil }  // one that does not check is refused by the plan, naming its field
        let cost = PredicateCost.perRow(predicate)
        guard cost > configuration.limits.predicateCost else { return nil }
        return .queryTooExpensive("the predicate costs about \(cost) units a row to evaluate, above the limit of "
                                  + "\(configuration.limits.predicateCost) (each LIKE/MATCHES pattern, wildcard, IN value and "
                                  + "OR branch counts; see PROTOCOL.md); split it or narrow it", limit: "predicateCost")
    }
}
