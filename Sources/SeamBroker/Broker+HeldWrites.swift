import SeamContext
import SeamJSON
import SeamProtocol

/// Writes that wait for their store. A store holds its writes while its checkpointer copies the
/// WAL back after a writer that never paused long enough for it (`Context.storesHoldingWrites`):
/// a call that may write into it waits, with every later call of its connection
/// (`Connection.parked`), until the checkpointer says the hold is over (`resumeHeldWrites`, on the
/// loop through `writesWaker`). Calls that write the other store, and every read, go on: a writer
/// of timers that never pauses makes itself wait a few milliseconds every couple of seconds, and
/// no longer the ticker's alarms, which write Sessions alone.
extension Broker {
    /// Whether `frame` must wait: it may write into a store that holds its writes now.
    func mustWaitForHeldWrites(_ frame: ArraySlice<UInt8>) -> Bool {
        guard context.anyStoreHoldsWrites else { return false }
        guard let written = storesWritten(by: frame) else { return true }
        return !written.isDisjoint(with: context.storesHoldingWrites)
    }

    /// The stores a call in `frame` may write into: empty for a call that only reads (or is
    /// answered with an error); nil when it may write into any (a call this cannot tell).
    func storesWritten(by frame: ArraySlice<UInt8>) -> Set<String>? {
        if QuickFetch(frame) != nil { return [] }
        if let q = QuickSave(frame) {
            return q.deletes.isEmpty ? stores(of: (q.inserts + q.updates).map(\.entity)) : nil
        }
        guard let json = try? JSON.decode(frame, limits: JSONLimits(maxDepth: Limits.maxJSONDepth)),
              let method = json["method"]?.stringValue
        else { return [] }
        if Self.readOnlyMethods.contains(method) { return [] }
        let parameters = json["parameters"]?.objectValue ?? [:]
        if method == "org.seam.Store.Save" {
            // A delete may cascade into the other store (a timer's sessions): any.
            if let deletes = parameters["deletes"]?.arrayValue, !deletes.isEmpty { return nil }
            let items = (parameters["inserts"]?.arrayValue ?? []) + (parameters["updates"]?.arrayValue ?? [])
            return stores(of: items.compactMap { $0["entity"]?.stringValue })
        }
        let dot = method.lastIndex(of: ".") ?? method.startIndex
        let interface = String(method[..<dot]), member = String(method[method.index(after: dot)...])
        guard let service = configuration.interfaces.first(where: { $0.name == interface }),
              let entities = service.touches(member)
        else { return nil }
        return stores(of: Array(entities))
    }

    /// The stores that hold `entities` (one the schema does not know is left out: its call is
    /// refused without writing).
    private func stores(of entities: [String]) -> Set<String> {
        var names: Set<String> = []
        for e in entities { if let s = try? context.store(of: e) { names.insert(s) } }
        return names
    }

    /// Goes on with the calls that waited for a store whose hold has ended (in the order they
    /// came); one whose store still holds waits on.
    func resumeHeldWrites() {
        guard !parkedForHeldWrites.isEmpty else { return }
        let waiting = parkedForHeldWrites
        parkedForHeldWrites = []
        for c in waiting where !c.closed {
            guard let frame = c.parked else { continue }
            if mustWaitForHeldWrites(frame) {
                parkedForHeldWrites.append(c)
                continue
            }
            c.parked = nil
            handleFrame(frame, from: c)
            flush(c)
            schedule(c)  // its later calls: in turns, with everyone else's
            closeIfFinished(c)
        }
    }
}
