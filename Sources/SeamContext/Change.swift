import SeamSystem
import SeamSchema
import SeamStore

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
/// Bounded by count of change sets and by count of row changes over all of them (a few huge
/// saves cannot hold the memory of a thousand); `since(_:)` answers `nil` when the ring no
/// longer reaches back that far, so a reader knows to fetch afresh instead of silently missing
/// changes.
public struct ChangeRing: Sendable {
    public let capacity: Int
    public let maxRows: Int
    private var items: [ChangeSet] = []
    /// Where the oldest held set is in `items` (the ones before are dropped).
    private var head = 0
    private var rows = 0

    /// Change sets of at least this many rows are freed on the disposal thread.
    static let disposedAbove = 256

    public init(capacity: Int, maxRows: Int = 20_000) {
        self.capacity = max(1, capacity)
        self.maxRows = max(1, maxRows)
    }

    public mutating func append(_ set: ChangeSet) {
        items.append(set)
        rows += set.changes.count
        while items.count - head > capacity || (rows > maxRows && items.count - head > 1) {
            rows -= items[head].changes.count
            // Release the rows now — a big save's on another thread: freeing a thousand took the
            // loop 0.4 ms (a few are freed here: waking that thread would cost more).
            if items[head].changes.count >= Self.disposedAbove { Disposal.release(items[head].changes) }
            items[head].changes = []
            head += 1
        }
        if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
    }

    /// How many change sets are held.
    public var count: Int { items.count - head }

    /// The oldest sequence number held, or nil when empty.
    public var oldest: Int64? { head < items.count ? items[head].sequence : nil }

    /// Every change set after `sequence`, oldest first; `nil` when some of them were dropped.
    public func since(_ sequence: Int64) -> [ChangeSet]? {
        var low = head
        var high = items.count
        while low < high {
            let mid = (low + high) / 2
            if items[mid].sequence <= sequence { low = mid + 1 } else { high = mid }
        }
        if low < items.count, items[low].sequence != sequence + 1 { return nil }
        return Array(items[low...])
    }
}

/// A save across two files whose first file committed, with the intent (`SaveJournal`), and
/// whose second did not: what remains to write there.
struct UnfinishedSave {
    var sequence: Int64
    /// The second file's store, and the store whose file holds the intent.
    var target: String
    var intentIn: String
    var operations: [SaveJournal.Operation]
}
