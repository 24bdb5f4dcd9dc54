import SeamSchema

/// What happened to one row in one save.
public struct RowChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case insert, update, delete }

    /// The configuration (store file) the row lives in.
    public var store: String
    public var entity: String
    public var uuid: String
    public var kind: Kind
    /// For updates, the attributes whose values changed; for inserts and deletes, every attribute.
    public var changedKeys: [String]
    /// The row before (nil for an insert) and after (nil for a delete).
    public var old: [String: AttributeValue]?
    public var new: [String: AttributeValue]?

    public init(store: String, entity: String, uuid: String, kind: Kind, changedKeys: [String],
                old: [String: AttributeValue]?, new: [String: AttributeValue]?) {
        self.store = store
        self.entity = entity
        self.uuid = uuid
        self.kind = kind
        self.changedKeys = changedKeys
        self.old = old
        self.new = new
    }
}

/// Everything one committed save changed, in both stores, under one sequence number.
public struct ChangeSet: Sendable, Hashable {
    /// Increases by one per save, across both stores; never reused.
    public var sequence: Int64
    public var author: String
    /// Unix seconds.
    public var time: Double
    public var changes: [RowChange]

    public init(sequence: Int64, author: String, time: Double, changes: [RowChange]) {
        self.sequence = sequence
        self.author = author
        self.time = time
        self.changes = changes
    }

    /// The stores this save touched.
    public var stores: Set<String> { Set(changes.map(\.store)) }
}

/// The most recent change sets, for readers that fell a little behind.
///
/// Bounded by count; `since(_:)` answers `nil` when the ring no longer reaches back that far,
/// so a reader knows to fetch afresh instead of silently missing changes.
public struct ChangeRing: Sendable {
    public let capacity: Int
    private var items: [ChangeSet] = []
    private var start = 0

    public init(capacity: Int) { self.capacity = max(1, capacity) }

    public mutating func append(_ set: ChangeSet) {
        if items.count < capacity {
            items.append(set)
        } else {
            items[start] = set
            start = (start + 1) % capacity
        }
    }

    /// The oldest sequence number held, or nil when empty.
    public var oldest: Int64? { items.isEmpty ? nil : items[items.count < capacity ? 0 : start].sequence }

    /// Every change set after `sequence`, oldest first; `nil` when some of them were dropped.
    public func since(_ sequence: Int64) -> [ChangeSet]? {
        let ordered = items.count < capacity ? items : Array(items[start...] + items[..<start])
        let newer = ordered.filter { $0.sequence > sequence }
        if let first = newer.first, first.sequence != sequence + 1 { return nil }
        if newer.isEmpty, let last = ordered.last, last.sequence > sequence { return nil }
        return newer
    }
}
