import SeamContext
import SeamJSON
import SeamProtocol
import SeamQuery
import SeamSchema

/// The reads that run on a reader thread, and the reply frames they write: a general `Fetch` and
/// a `Count` (planned — the predicate parsed, priced and compiled —, run and written there, so a
/// predicate of any length costs the loop nothing), and the reply to a fetch by uuid. Nothing
/// here touches the broker: each job gets the request, where to read it and its limits.
enum ReadJobs {
    /// A reader's work: it reads through the pool's connections and says what it found.
    typealias Job = @Sendable (ReaderPool.Connections) -> ReadOutcome

    /// `Fetch` without a uuid: its reply frame, rows in the order the request names
    /// (the uuid first), or every attribute in the entity's order.
    static func fetch(_ r: FetchRequest, target: ReadTarget, costLimit: Int, id: JSON?) -> Job {
        { connections in
            let plan: ReadPlan
            switch checkedPlan(r, kind: .rows, target: target, costLimit: costLimit) {
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
    }

    /// `Count`: its reply frame.
    static func count(_ r: FetchRequest, target: ReadTarget, costLimit: Int, id: JSON?) -> Job {
        { connections in
            let plan: ReadPlan
            switch checkedPlan(r, kind: .count, target: target, costLimit: costLimit) {
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
    }

    /// Count's parameters as a fetch's: Count takes no sort, limit, offset or fields; like any
    /// parameter a method does not know, they are ignored (not checked, and no ORDER BY for a count).
    static func countParameters(_ p: JSONObject) -> JSONObject {
        var p = p
        for ignored in ["sort", "limit", "offset", "fields"] { p[ignored] = nil }
        return p
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

    /// `QueryTooExpensive` when `predicate` costs more per row than `limit` (`PredicateCost`).
    static func tooCostly(_ predicate: CheckedPredicate, limit: Int) -> VarlinkError? {
        let cost = PredicateCost.perRow(predicate)
        guard cost > limit else { return nil }
        return .queryTooExpensive("the predicate costs about \(cost) units a row to evaluate, above the limit of \(limit) (each LIKE "
                                  + "pattern, wildcard, IN value and OR branch counts; see PROTOCOL.md); split it or narrow it",
                                  limit: "predicateCost")
    }

    /// The reply to a fetch by uuid: the row as the wire encodes it (`WireValues.writeRow`), or
    /// none, and the save sequence the stores stand at.
    static func rowReply(_ encoded: [UInt8]?, sequence: Int64, id: JSON?) -> [UInt8] {
        Reply.frame(id: id, capacity: 96 + (encoded?.count ?? 0)) { w in
            w.key("rows")
            w.beginArray()
            if let encoded { w.encoded(encoded[...]) }
            w.endArray()
            w.key("sequence")
            w.integer(sequence)
        }
    }
}
