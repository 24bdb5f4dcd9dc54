import SeamJSON
import SeamProtocol

/// The running sessions the ticker follows, each with its step end as a number, kept current by
/// the subscription's updates; and from them, which sessions are due and when to wake next. Pure.
///
/// Work per event is bounded by the event, not by the sessions followed: a diff parses the dates
/// of the rows it carries and no others and moves each in a heap (O(log n)); `due` visits the
/// sessions that are due, `nextWake` the earliest of those left out and one more; a lookup is a
/// dictionary probe. Only a whole result (the first, or a resync) reads every row. `work` counts
/// dates parsed and rows touched, so a test can hold it to that.
public struct TickerSchedule: Sendable {
    /// Work done so far: what a test compares between 10 and 10,000 followed sessions.
    public struct Work: Sendable, Equatable {
        /// RFC 3339 step ends parsed into numbers.
        public var datesParsed = 0
        /// Sessions read from a diff, or visited while looking for due ones or the next wake.
        public var rowsTouched = 0
    }

    /// A diff that does not fit the sessions held (a row deleted that is not there, one inserted
    /// twice), or comes before any result or after a newer one. After one, subscribe afresh.
    public struct Mismatch: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Every followed session with a step end, earliest first at the top.
    private var heap = EndHeap()
    /// The followed sessions without a step end: never due.
    private var endless: Set<String> = []
    /// The sequence number the sessions reflect (nil before the first result).
    public private(set) var sequence: Int64?
    public private(set) var work = Work()

    public init() {}

    /// How many sessions are followed.
    public var count: Int { heap.count + endless.count }

    /// A followed session's step end: nil when the session is not followed, `.some(nil)` when it
    /// has none.
    public func end(of session: String) -> Double?? {
        if let end = heap.end(of: session) { return .some(end) }
        return endless.contains(session) ? .some(nil) : nil
    }

    /// Applies one update of the subscription (see `Protocol/PROTOCOL.md`). Only uuids and step
    /// ends matter here, so a diff's indexes are not needed: the heap keeps the order.
    public mutating func apply(_ u: SubscriptionUpdate) throws(Mismatch) {
        switch u.kind {
        case .result, .resync:
            var entries: [EndHeap.Entry] = []
            endless = []
            for row in u.rows {
                guard let uuid = row["uuid"]?.stringValue else { throw Mismatch(description: "a row without a uuid") }
                if let end = endsAt(row) { entries.append((end, uuid)) } else { endless.insert(uuid) }
            }
            heap = EndHeap(entries)
            guard heap.count + endless.count == u.rows.count else { throw Mismatch(description: "a result holds a session twice") }
            work.rowsTouched += u.rows.count
        case .diff:
            guard let held = sequence else { throw Mismatch(description: "a diff (sequence \(u.sequence)) arrived before any result") }
            let empty = u.deleted.isEmpty && u.inserted.isEmpty && u.updated.isEmpty && u.moved.isEmpty
            guard u.sequence > held || (u.sequence == held && empty) else {
                throw Mismatch(description: "a diff of sequence \(u.sequence) arrived after the result of \(held)")
            }
            for d in u.deleted {
                guard remove(d.uuid) else { throw Mismatch(description: "session \(d.uuid) was deleted but is not followed") }
            }
            for m in u.moved where end(of: m.uuid) == nil {
                throw Mismatch(description: "session \(m.uuid) moved but is not followed")
            }
            for i in u.inserted {
                guard end(of: i.uuid) == nil else { throw Mismatch(description: "session \(i.uuid) was inserted but is followed already") }
                set(i.uuid, endsAt(i.row))
            }
            for up in u.updated {
                guard remove(up.uuid) else { throw Mismatch(description: "session \(up.uuid) was updated but is not followed") }
                set(up.uuid, endsAt(up.row))
            }
            work.rowsTouched += u.deleted.count + u.moved.count + u.inserted.count + u.updated.count
        case .end:
            break
        }
        sequence = u.sequence
    }

    /// The uuids of the sessions whose step has ended by `now`, earliest first, leaving out those
    /// in `excluded` (being advanced, or held back).
    public mutating func due(at now: Double, excluding excluded: Set<String>) -> [String] {
        var found: [EndHeap.Entry] = []
        var visited = 0
        heap.visit(while: { $0.end <= now }) { entry in
            visited += 1
            if !excluded.contains(entry.uuid) { found.append(entry) }
        }
        work.rowsTouched += visited
        return found.sorted(by: EndHeap.less).map(\.uuid)
    }

    /// The earliest step end among the sessions not in `excluded`, or nil when none has one.
    public mutating func nextWake(excluding excluded: Set<String>) -> Double? {
        var visited = 0
        let next = heap.minimum { entry in
            visited += 1
            return !excluded.contains(entry.uuid)
        }
        work.rowsTouched += visited
        return next?.end
    }

    private mutating func set(_ uuid: String, _ end: Double?) {
        if let end { heap.insert((end, uuid)) } else { endless.insert(uuid) }
    }

    /// Stops following `uuid`; false when it was not followed.
    private mutating func remove(_ uuid: String) -> Bool {
        heap.remove(uuid) || endless.remove(uuid) != nil
    }

    private mutating func endsAt(_ row: JSONObject) -> Double? {
        switch row["stepEndsAt"] {
        case .string(let s)?:
            work.datesParsed += 1
            return RFC3339.parse(s)
        case .double(let d)?: return d
        case .integer(let i)?: return Double(i)
        default: return nil
        }
    }
}

/// A binary min-heap of (end, uuid), ordered by end, then uuid, that knows where each uuid is:
/// inserting, removing and looking up a session are O(log n), O(log n) and O(1).
struct EndHeap: Sendable {
    typealias Entry = (end: Double, uuid: String)
    private var items: [Entry] = []
    private var position: [String: Int] = [:]

    init() {}

    /// A heap of `entries`, whose uuids must be distinct (a repeated one is kept once).
    init(_ entries: [Entry]) {
        position.reserveCapacity(entries.count)
        for e in entries where position[e.uuid] == nil {
            position[e.uuid] = items.count
            items.append(e)
        }
        for i in stride(from: items.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    var count: Int { items.count }

    func end(of uuid: String) -> Double? { position[uuid].map { items[$0].end } }

    /// Adds `e`, whose uuid must not be held.
    mutating func insert(_ e: Entry) {
        position[e.uuid] = items.count
        items.append(e)
        siftUp(items.count - 1)
    }

    /// Removes the entry of `uuid`; false when there is none.
    mutating func remove(_ uuid: String) -> Bool {
        guard let i = position.removeValue(forKey: uuid) else { return false }
        let last = items.count - 1
        if i != last {
            items[i] = items[last]
            position[items[i].uuid] = i
        }
        items.removeLast()
        if i < items.count {
            siftUp(i)
            siftDown(i)
        }
        return true
    }

    /// Calls `body` on every entry for which `matches` holds, visiting no subtree whose root fails
    /// it (a heap's children are never earlier than their parent).
    func visit(while matches: (Entry) -> Bool, _ body: (Entry) -> Void) {
        var stack = items.isEmpty ? [] : [0]
        while let i = stack.popLast() {
            guard matches(items[i]) else { continue }
            body(items[i])
            pushChildren(of: i, onto: &stack)
        }
    }

    /// The earliest entry `accepts` takes. It is asked only of entries earlier than any it took,
    /// so it sees the ones it refuses, their children, and no more than that.
    func minimum(_ accepts: (Entry) -> Bool) -> Entry? {
        var best: Entry?
        var stack = items.isEmpty ? [] : [0]
        while let i = stack.popLast() {
            let e = items[i]
            if let b = best, !Self.less(e, b) { continue }
            if accepts(e) {
                best = e  // its children are later still
                continue
            }
            pushChildren(of: i, onto: &stack)
        }
        return best
    }

    private func pushChildren(of i: Int, onto stack: inout [Int]) {
        if 2 * i + 1 < items.count { stack.append(2 * i + 1) }
        if 2 * i + 2 < items.count { stack.append(2 * i + 2) }
    }

    static func less(_ a: Entry, _ b: Entry) -> Bool { (a.end, a.uuid) < (b.end, b.uuid) }

    private mutating func swap(_ i: Int, _ j: Int) {
        items.swapAt(i, j)
        position[items[i].uuid] = i
        position[items[j].uuid] = j
    }

    private mutating func siftUp(_ start: Int) {
        var i = start
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.less(items[i], items[parent]) else { return }
            swap(i, parent)
            i = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1, r = l + 1
            var least = i
            if l < items.count, Self.less(items[l], items[least]) { least = l }
            if r < items.count, Self.less(items[r], items[least]) { least = r }
            guard least != i else { return }
            swap(i, least)
            i = least
        }
    }
}
