import SeamJSON

/// One reply of an `org.seam.Store.Subscribe` call, read from its parameters.
public struct SubscriptionUpdate: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// The whole result: replace what you hold.
        case result
        /// What one commit changed (or, first after a resume, everything since `since`).
        case diff
        /// The whole result after diffs were missed from `from` (a subscriber that fell behind, or a
        /// resume the broker could not serve with a diff): replace what you hold.
        case resync
        /// The subscription ended (Unsubscribe); no reply follows.
        case end
    }

    public struct Deleted: Sendable, Equatable {
        public var uuid: String
        public var index: Int
    }

    public struct Inserted: Sendable, Equatable {
        public var uuid: String
        public var index: Int
        public var row: JSONObject
    }

    public struct Updated: Sendable, Equatable {
        public var uuid: String
        public var index: Int
        public var changedKeys: [String]
        public var row: JSONObject
    }

    public struct Moved: Sendable, Equatable {
        public var uuid: String
        public var from: Int
        public var to: Int
    }

    public var subscription: Int
    public var kind: Kind
    public var sequence: Int64
    /// For a resync: the last sequence number whose diff the subscriber had.
    public var from: Int64?
    /// For a result or a resync: the rows.
    public var rows: [JSONObject] = []
    public var deleted: [Deleted] = []
    public var inserted: [Inserted] = []
    public var updated: [Updated] = []
    public var moved: [Moved] = []

    /// Reads a reply's parameters; the error names what is missing or wrong.
    public init(_ p: JSONObject) throws(VarlinkError) {
        func int(_ o: JSONObject, _ key: String) throws(VarlinkError) -> Int64 {
            guard let n = o[key]?.int64Value else { throw .invalidParameter(key) }
            return n
        }
        func string(_ o: JSONObject, _ key: String) throws(VarlinkError) -> String {
            guard let s = o[key]?.stringValue else { throw .invalidParameter(key) }
            return s
        }
        func objects(_ key: String) throws(VarlinkError) -> [JSONObject] {
            guard let a = p[key] else { return [] }
            guard let items = a.arrayValue else { throw .invalidParameter(key) }
            var out: [JSONObject] = []
            for item in items {
                guard let o = item.objectValue else { throw .invalidParameter(key) }
                out.append(o)
            }
            return out
        }
        func row(_ o: JSONObject) throws(VarlinkError) -> JSONObject {
            guard let r = o["row"]?.objectValue else { throw .invalidParameter("row") }
            return r
        }
        subscription = Int(try int(p, "subscription"))
        guard let kind = Kind(rawValue: try string(p, "kind")) else { throw .invalidParameter("kind") }
        self.kind = kind
        sequence = try int(p, "sequence")
        from = p["from"]?.int64Value
        rows = try objects("rows")
        for o in try objects("deleted") { deleted.append(Deleted(uuid: try string(o, "uuid"), index: Int(try int(o, "index")))) }
        for o in try objects("inserted") {
            inserted.append(Inserted(uuid: try string(o, "uuid"), index: Int(try int(o, "index")), row: try row(o)))
        }
        for o in try objects("updated") {
            let keys = (o["changedKeys"]?.arrayValue ?? []).compactMap(\.stringValue)
            updated.append(Updated(uuid: try string(o, "uuid"), index: Int(try int(o, "index")), changedKeys: keys, row: try row(o)))
        }
        for o in try objects("moved") {
            moved.append(Moved(uuid: try string(o, "uuid"), from: Int(try int(o, "from")), to: Int(try int(o, "to"))))
        }
    }

    /// The update as the broker sent it (its reply's parameters).
    public var json: JSONObject {
        var o: JSONObject = ["subscription": .integer(Int64(subscription)), "kind": .string(kind.rawValue), "sequence": .integer(sequence)]
        if let from { o["from"] = .integer(from) }
        switch kind {
        case .result, .resync: o["rows"] = .array(rows.map(JSON.object))
        case .diff:
            o["deleted"] = .array(deleted.map { ["uuid": .string($0.uuid), "index": .integer(Int64($0.index))] })
            o["inserted"] = .array(inserted.map { ["uuid": .string($0.uuid), "index": .integer(Int64($0.index)), "row": .object($0.row)] })
            o["updated"] = .array(updated.map {
                ["uuid": .string($0.uuid), "index": .integer(Int64($0.index)), "changedKeys": .array($0.changedKeys.map(JSON.string)),
                 "row": .object($0.row)]
            })
            o["moved"] = .array(moved.map { ["uuid": .string($0.uuid), "from": .integer(Int64($0.from)), "to": .integer(Int64($0.to))] })
        case .end: break
        }
        return o
    }
}

/// A query result kept current by applying a subscription's updates: what a UI holds.
public struct LiveResult: Sendable, Equatable {
    /// The rows, in the query's order.
    public private(set) var rows: [JSONObject] = []
    /// The sequence number the rows reflect (nil before the first result).
    public private(set) var sequence: Int64?

    public init() {}

    /// A diff that does not fit the rows held, or comes before any result or after a newer one
    /// (a bug somewhere, never expected). After one, subscribe afresh.
    public struct Mismatch: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Applies one update: a result or resync replaces the rows; a diff edits them (see
    /// `Protocol/PROTOCOL.md`: remove deleted and moved rows, insert inserted and moved ones at
    /// their new indexes in ascending order, then replace updated rows).
    public mutating func apply(_ u: SubscriptionUpdate) throws(Mismatch) {
        switch u.kind {
        case .result, .resync:
            rows = u.rows
        case .diff:
            // A diff edits a result: none held yet, or one already newer, and it has nothing it
            // could be applied to. (A resume's diff may carry the sequence held when nothing
            // changed since: it is empty.)
            guard let held = sequence else { throw Mismatch(description: "a diff (sequence \(u.sequence)) arrived before any result") }
            let empty = u.deleted.isEmpty && u.inserted.isEmpty && u.updated.isEmpty && u.moved.isEmpty
            guard u.sequence > held || (u.sequence == held && empty) else {
                throw Mismatch(description: "a diff of sequence \(u.sequence) arrived after the result of \(held)")
            }
            // By the indexes the diff carries: O(changes) array edits in place, not a pass over the
            // rows (after a Mismatch the rows are unusable: subscribe afresh).
            var next = rows
            rows = []
            var carried: [String: JSONObject] = [:]
            let removals = (u.deleted.map { (index: $0.index, uuid: $0.uuid, moved: false) }
                + u.moved.map { (index: $0.from, uuid: $0.uuid, moved: true) }).sorted { $0.index > $1.index }
            for r in removals {
                guard r.index >= 0, r.index < next.count, next[r.index]["uuid"]?.stringValue == r.uuid else {
                    throw Mismatch(description: "row \(r.uuid) is not at index \(r.index)")
                }
                let row = next.remove(at: r.index)
                if r.moved { carried[r.uuid] = row }
            }
            var arrivals = u.inserted.map { (index: $0.index, row: $0.row) }
            for m in u.moved {
                guard let row = carried.removeValue(forKey: m.uuid) else { throw Mismatch(description: "row \(m.uuid) moves twice") }
                arrivals.append((index: m.to, row: row))
            }
            for a in arrivals.sorted(by: { $0.index < $1.index }) {
                guard a.index >= 0, a.index <= next.count else { throw Mismatch(description: "an insertion index is outside the rows") }
                next.insert(a.row, at: a.index)
            }
            for up in u.updated {
                guard up.index >= 0, up.index < next.count, next[up.index]["uuid"]?.stringValue == up.uuid else {
                    throw Mismatch(description: "an updated row is not where the diff says")
                }
                next[up.index] = up.row
            }
            rows = next
        case .end:
            break
        }
        sequence = u.sequence
    }
}
