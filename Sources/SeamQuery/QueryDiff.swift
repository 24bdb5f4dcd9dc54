import SeamSchema

/// How one query result (an ordered list of rows, each with a `uuid`) changed in one commit.
///
/// Indexes follow the usual batch-update rule: `deleted[].index` and `moved[].from` are positions
/// in the old result; `inserted[].index`, `moved[].to` and `updated[].index` are positions in the
/// new one. To apply (`apply(to:)`): remove the deleted and the moved rows; insert the inserted
/// and the moved rows at their new positions, in ascending order of position; replace the
/// updated rows. The rows that are neither deleted nor moved keep their relative order, so this
/// rebuilds the new result exactly. `between` finds the fewest moves (the rows outside a longest
/// increasing run of old positions).
public struct QueryDiff: Sendable, Hashable {
    public struct Deletion: Sendable, Hashable {
        public var uuid: String
        public var index: Int
        public init(uuid: String, index: Int) { self.uuid = uuid; self.index = index }
    }

    public struct Insertion: Sendable, Hashable {
        public var uuid: String
        public var index: Int
        public var row: [String: AttributeValue]
        public init(uuid: String, index: Int, row: [String: AttributeValue]) { self.uuid = uuid; self.index = index; self.row = row }
    }

    public struct Update: Sendable, Hashable {
        public var uuid: String
        public var index: Int
        /// The fields whose values changed, in field order.
        public var changedKeys: [String]
        /// The row's fields after the change.
        public var row: [String: AttributeValue]
        public init(uuid: String, index: Int, changedKeys: [String], row: [String: AttributeValue]) {
            self.uuid = uuid; self.index = index; self.changedKeys = changedKeys; self.row = row
        }
    }

    public struct Move: Sendable, Hashable {
        public var uuid: String
        public var from: Int
        public var to: Int
        public init(uuid: String, from: Int, to: Int) { self.uuid = uuid; self.from = from; self.to = to }
    }

    public var deleted: [Deletion] = []
    public var inserted: [Insertion] = []
    public var updated: [Update] = []
    public var moved: [Move] = []

    public init() {}

    public var isEmpty: Bool { deleted.isEmpty && inserted.isEmpty && updated.isEmpty && moved.isEmpty }

    /// The diff from `old` to `new`. Rows are told apart by `uuid`; a row in both is updated when
    /// one of `fields` differs, and only `fields` are carried in the diff. A row in both is moved
    /// when one of its `sortKeys` changed (as a diff worked out commit by commit says), and
    /// otherwise only when the new order needs it: of the rest, those outside a longest run that
    /// kept its order (none, when `sortKeys` are the result's sort and `old` and `new` are its
    /// whole results — rows whose keys did not change keep their order).
    public static func between(_ old: [[String: AttributeValue]], _ new: [[String: AttributeValue]], fields: [String],
                               sortKeys: [String] = []) -> QueryDiff {
        var diff = QueryDiff()
        var oldIndex: [String: Int] = [:]
        oldIndex.reserveCapacity(old.count)
        for (i, row) in old.enumerated() { oldIndex[uuid(row)] = i }
        var newUUIDs = Set<String>()
        newUUIDs.reserveCapacity(new.count)
        // Rows in both, in new order, with their old positions: those whose sort keys changed are
        // moves, and of the others, the ones outside a longest increasing run of old positions.
        var common: [(new: Int, old: Int, keysChanged: Bool)] = []
        for (j, row) in new.enumerated() {
            let u = uuid(row)
            newUUIDs.insert(u)
            if let i = oldIndex[u] {
                common.append((j, i, sortKeys.contains { !same(old[i][$0], row[$0]) }))
                let changed = fields.filter { !same(old[i][$0], row[$0]) }
                if !changed.isEmpty {
                    diff.updated.append(Update(uuid: u, index: j, changedKeys: changed, row: project(row, fields)))
                }
            } else {
                diff.inserted.append(Insertion(uuid: u, index: j, row: project(row, fields)))
            }
        }
        for (i, row) in old.enumerated() where !newUUIDs.contains(uuid(row)) {
            diff.deleted.append(Deletion(uuid: uuid(row), index: i))
        }
        let unchangedKeys = common.indices.filter { !common[$0].keysChanged }
        let staying = Set(longestIncreasingRun(unchangedKeys.map { common[$0].old }).map { unchangedKeys[$0] })
        for (k, pair) in common.enumerated() where !staying.contains(k) {
            diff.moved.append(Move(uuid: uuid(new[pair.new]), from: pair.old, to: pair.new))
        }
        return diff
    }

    /// Applies the diff to `rows` (the old result), giving the new result.
    public func apply(to rows: inout [[String: AttributeValue]]) {
        let leaving = Set(deleted.map(\.uuid)).union(moved.map(\.uuid))
        var carried: [String: [String: AttributeValue]] = [:]
        for row in rows where moved.contains(where: { $0.uuid == Self.uuid(row) }) { carried[Self.uuid(row)] = row }
        rows.removeAll { leaving.contains(Self.uuid($0)) }
        var arrivals: [(index: Int, row: [String: AttributeValue])] = inserted.map { ($0.index, $0.row) }
        arrivals += moved.compactMap { m in carried[m.uuid].map { (m.to, $0) } }
        for arrival in arrivals.sorted(by: { $0.index < $1.index }) {
            rows.insert(arrival.row, at: min(arrival.index, rows.count))
        }
        for u in updated {
            if u.index < rows.count, Self.uuid(rows[u.index]) == u.uuid {
                rows[u.index] = u.row
            } else if let i = rows.firstIndex(where: { Self.uuid($0) == u.uuid }) {
                rows[i] = u.row
            }
        }
    }

    /// Whether a value is unchanged, as the store keeps it (`AttributeValue.isIdentical`).
    static func same(_ a: AttributeValue?, _ b: AttributeValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let x?, let y?): return x.isIdentical(to: y)
        default: return false
        }
    }

    static func uuid(_ row: [String: AttributeValue]) -> String {
        switch row[Entity.identity] {
        case .uuid(let s)?, .string(let s)?: return s
        default: return ""
        }
    }

    /// `row` with only `fields`. A row that holds exactly `fields` — a channel that keeps every
    /// attribute, the common case — is its own projection: no dictionary is built (that was half
    /// the cost of applying a commit to a channel).
    static func project(_ row: [String: AttributeValue], _ fields: [String]) -> [String: AttributeValue] {
        if row.count == fields.count, fields.allSatisfy({ row.index(forKey: $0) != nil }) { return row }
        var out: [String: AttributeValue] = [:]
        out.reserveCapacity(fields.count)
        for f in fields { if let v = row[f] { out[f] = v } }
        return out
    }

    /// The positions (into `values`) of one longest strictly increasing subsequence. O(n log n).
    static func longestIncreasingRun(_ values: [Int]) -> Set<Int> {
        var tails: [Int] = []          // tails[k]: position of the smallest tail of a run of length k+1
        var previous = [Int](repeating: -1, count: values.count)
        for (i, v) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if values[tails[mid]] < v { low = mid + 1 } else { high = mid }
            }
            if low > 0 { previous[i] = tails[low - 1] }
            if low == tails.count { tails.append(i) } else { tails[low] = i }
        }
        var run = Set<Int>()
        var k = tails.last ?? -1
        while k >= 0 {
            run.insert(k)
            k = previous[k]
        }
        return run
    }
}
