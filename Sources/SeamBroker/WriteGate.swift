import SeamContext
import SeamJSON
import SeamProtocol

/// What the write gate asks of the broker that hosts it.
protocol WriteGateHost: AnyObject {
    /// A parked call may go on: `frame` is handled now, then `c`'s later calls as `laterCalls` says
    /// (at once, or in turns with everyone else's).
    func resume(_ c: Connection, _ frame: ArraySlice<UInt8>, laterCalls: WriteGate.LaterCalls)
}

/// Writes that wait for their store (`WriteGate`): while a store's check at open runs, or a store
/// holds its writes. A store holds its writes
///
/// - while its checkpointer copies the WAL back after a writer that never paused long enough for
///   it (`Context.storesHoldingWrites`), a few milliseconds;
/// - while a big save is written into it in steps (`SteppedSaves`), whose transaction is open.
///
/// A call that may write into such a store waits, with every later call of its connection
/// (`Connection.parked`), until the hold ends (`resumeHeldWrites`: woken by the checkpointer, or
/// at the save's last step). Calls that write the other store, and every read, go on: a writer
/// of timers that never pauses makes itself wait now and then, and no longer the ticker's alarms,
/// which write Sessions alone. (Reads of a store held by a save in steps go to the store's
/// read-only connection, which sees what is committed: `Context.readConnection`.)
///
/// While a store's check at open runs (`Context.isChecking`), every call that may write waits,
/// with the calls after it, until the checks end (`resumeAfterChecks`).
final class WriteGate {
    enum LaterCalls { case now, inTurns }

    weak var host: (any WriteGateHost)?
    private let context: Context
    /// The application's interfaces: what each method writes (`ServiceInterface.writes`).
    private let interfaces: [ServiceInterface]
    /// Connections whose next call writes, held while a store's check at open runs.
    private var waitingForChecks: [Connection] = []
    /// Connections whose next call waits for a store that holds its writes, and the stores it may write.
    private var waitingForHolds: [(connection: Connection, writes: Set<String>?)] = []

    init(context: Context, interfaces: [ServiceInterface]) {
        self.context = context
        self.interfaces = interfaces
    }

    /// Whether no call waits here.
    var isEmpty: Bool { waitingForChecks.isEmpty && waitingForHolds.isEmpty }

    /// The methods that only read: served while a store's check at open runs. Every other call
    /// may write, and waits.
    static let readOnlyMethods: Set<String> = [
        "org.varlink.service.GetInfo", "org.varlink.service.GetInterfaceDescription",
        "org.seam.Store.Hello", "org.seam.Store.Schema", "org.seam.Store.Fetch", "org.seam.Store.Count", "org.seam.Store.Status",
        "org.seam.Store.Subscribe", "org.seam.Store.Unsubscribe", "org.seam.Migration.Plan", "org.seam.Sync.Status",
        "org.seam.Maintenance.Backup", "org.seam.Maintenance.Check",
    ]

    /// The methods seamd cannot tell the stores of that read them on the loop: they wait while a
    /// save in steps holds a store (its open transaction is on the loop's connection).
    static let loopReadingMethods: Set<String> = [
        "org.seam.Migration.Plan", "org.seam.Sync.Status", "org.seam.Maintenance.Backup", "org.seam.Maintenance.Check",
    ]

    /// The stores holding their writes now.
    var storesHoldingWrites: Set<String> {
        var held = context.storesHoldingWrites
        if let stepped = context.steppedStore { held.insert(stepped) }
        // A save in steps being committed has taken the next sequence number: every store waits.
        if context.sequenceClaimed { held.formUnion(context.storeNames) }
        return held
    }

    /// Whether a call of `c` in `frame` must wait for the stores' checks at open — it is a call
    /// that may write — and if so, parks `c` with it (and every later call of it).
    func parkIfChecking(_ c: Connection, _ frame: ArraySlice<UInt8>) -> Bool {
        guard mustWaitForChecks(frame) else { return false }
        c.parked = frame
        waitingForChecks.append(c)
        return true
    }

    private func mustWaitForChecks(_ frame: ArraySlice<UInt8>) -> Bool {
        guard context.isChecking else { return false }
        if QuickFetch(frame) != nil { return false }
        guard let json = try? JSON.decode(frame, limits: JSONLimits(maxDepth: Limits.maxJSONDepth)),
              let method = json["method"]?.stringValue
        else { return false }  // answered as an error, which writes nothing
        return !Self.readOnlyMethods.contains(method)
    }

    /// The stores' checks at open have ended: the calls that waited for them go on, each
    /// connection's later calls at once after its parked one.
    func resumeAfterChecks() {
        guard !context.isChecking else { return }
        let waiting = waitingForChecks
        waitingForChecks = []
        for c in waiting where !c.closed {
            guard let frame = c.parked else { continue }
            c.parked = nil
            host?.resume(c, frame, laterCalls: .now)
        }
    }

    /// Whether a call of `c` in `frame` must wait — it may write into a store that holds its
    /// writes now — and if so, parks `c` with it.
    func parkIfHeld(_ c: Connection, _ frame: ArraySlice<UInt8>) -> Bool {
        guard context.steppedStore != nil || context.anyStoreHoldsWrites else { return false }
        let written = storesWritten(by: frame)
        guard mustWait(writing: written) else { return false }
        c.parked = frame
        waitingForHolds.append((c, written))
        return true
    }

    /// Whether a call that may write into `written` (nil: any store) must wait now.
    private func mustWait(writing written: Set<String>?) -> Bool {
        let held = storesHoldingWrites
        guard !held.isEmpty else { return false }
        return written.map { !$0.isDisjoint(with: held) } ?? true
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
        if context.steppedStore != nil, Self.loopReadingMethods.contains(method) { return nil }
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
        guard let service = interfaces.first(where: { $0.name == interface }),
              let entities = service.writes(member)
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
    /// came); one whose store still holds waits on. (What each may write was worked out when it
    /// was parked: a 1,000-row save is not read again at every look.)
    func resumeHeldWrites() {
        guard !waitingForHolds.isEmpty else { return }
        let waiting = waitingForHolds
        waitingForHolds = []
        for (c, written) in waiting where !c.closed {
            guard let frame = c.parked else { continue }
            if mustWait(writing: written) {
                waitingForHolds.append((c, written))
                continue
            }
            c.parked = nil
            host?.resume(c, frame, laterCalls: .inTurns)
        }
    }
}
