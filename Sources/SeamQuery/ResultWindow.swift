import SeamSchema

/// A live query result kept in memory: the rows of one entity that match a predicate, in a sort
/// order, at most `limit` of them — what one subscription channel holds.
///
/// `apply` takes the changes of one commit and answers the diff from the old result to the new
/// one, computed in memory. A limited window knows only its own rows; when a commit takes a row
/// out of a full window, the row that should move up is not known, and `apply` answers
/// `.refetch`: the caller runs the query again and hands the rows to `replace(with:)`, which
/// answers the diff. The window is left unchanged by a `.refetch`.
public struct ResultWindow: Sendable {
    public enum Outcome: Sendable, Equatable {
        case diff(QueryDiff)
        case refetch
    }

    public let predicate: CheckedPredicate
    public let sorting: Sorting
    public let limit: Int?
    /// The attributes a subscriber receives, `uuid` first.
    public let fields: [String]
    /// `fields` and the sort keys: what each row keeps.
    private let kept: [String]
    /// The current result, in order, each row holding the `kept` attributes.
    public private(set) var rows: [[String: AttributeValue]]
    /// Whether `rows` holds every matching row (false when a limit cut the result).
    public private(set) var isComplete: Bool

    /// A window over `rows`, the result of the query as run in SQL (ordered, at most `limit`).
    public init(predicate: CheckedPredicate, sorting: Sorting, limit: Int?, fields: [String]?, rows: [[String: AttributeValue]]) {
        self.predicate = predicate
        self.sorting = sorting
        self.limit = limit
        let all = fields ?? predicate.entity.attributes.map(\.name)
        // Each attribute once (a subscriber may name one twice): a row holding exactly these is
        // then its own projection (`QueryDiff.project`).
        var seen: Set<String> = [Entity.identity]
        self.fields = [Entity.identity] + all.filter { seen.insert($0).inserted }
        var kept = self.fields
        for key in sorting.keys where !kept.contains(key.attribute) { kept.append(key.attribute) }
        self.kept = kept
        self.rows = []
        self.isComplete = true
        (self.rows, self.isComplete) = normalised(rows)
    }

    /// The current result as a subscriber sees it: `fields` only.
    public var result: [[String: AttributeValue]] { rows.map { QueryDiff.project($0, fields) } }

    /// Applies the changes of one commit to this window's entity: each the row before (nil for an
    /// insert) and after (nil for a delete), whole; one change per row.
    ///
    /// Costs O(changes × log rows) comparisons plus one copy of the row array: the diff is built
    /// from the changed rows alone (and the rows a limit pushed out), never by comparing whole
    /// results. A changed row is moved when its sort keys changed, updated when a field did.
    public mutating func apply(_ changes: [(old: [String: AttributeValue]?, new: [String: AttributeValue]?)]) -> Outcome {
        // A cut window may need a refetch, diffed against the old rows: it works on a copy (of at
        // most `limit` rows). A complete window is never refetched: it is edited in place, so a
        // large result is not copied for every commit.
        if !isComplete { return applyToCopy(changes) }
        var touched: [(uuid: String, from: Int?, old: [String: AttributeValue]?, new: [String: AttributeValue]?)] = []
        for change in changes {
            var from: Int?
            var old: [String: AttributeValue]?
            if let o = change.old, predicate.matches(o), let i = position(of: o, in: rows) {
                from = i
                old = rows[i]
            }
            let new = change.new.flatMap { predicate.matches($0) ? QueryDiff.project($0, kept) : nil }
            if from != nil || new != nil { touched.append((QueryDiff.uuid(change.new ?? change.old ?? [:]), from, old, new)) }
        }
        let oldCount = rows.count
        var next = rows
        rows = []  // `next` is now the only reference: the edits below happen in place
        for i in touched.compactMap(\.from).sorted(by: >) { next.remove(at: i) }
        for t in touched {
            guard let new = t.new else { continue }
            next.insert(new, at: sorting.insertionIndex(of: new, in: next))
        }
        var diff = QueryDiff()
        if let limit, next.count > limit {
            // Rows pushed out: the changed ones are simply not in the result; the others were at
            // the end of the old result, in the same order, at the last positions no changed row held.
            let cut = next[limit...]
            let changedUUIDs = Set(touched.map(\.uuid))
            let removedFrom = Set(touched.compactMap(\.from))
            var position = oldCount - 1
            for row in cut.reversed() where !changedUUIDs.contains(QueryDiff.uuid(row)) {
                while removedFrom.contains(position) { position -= 1 }
                diff.deleted.append(QueryDiff.Deletion(uuid: QueryDiff.uuid(row), index: position))
                position -= 1
            }
            next.removeLast(next.count - limit)
            isComplete = false
        }
        for t in touched {
            let to = t.new.flatMap { position(of: $0, in: next) }
            record(&diff, t.uuid, from: t.from, old: t.old, to: to, in: next)
        }
        rows = next
        return .diff(Self.ordered(diff))
    }

    /// `apply` for a window cut by its limit, on a copy: a row that leaves it asks for a refetch.
    private mutating func applyToCopy(_ changes: [(old: [String: AttributeValue]?, new: [String: AttributeValue]?)]) -> Outcome {
        var next = rows
        var complete = isComplete
        // Per changed row: its kept values in the old window (nil when it was not there), and in
        // the new one before any cut (nil when it does not match or lies beyond a cut window).
        var touched: [(uuid: String, old: [String: AttributeValue]?, new: [String: AttributeValue]?)] = []
        for change in changes {
            var before: [String: AttributeValue]?
            if let old = change.old, predicate.matches(old), let i = position(of: old, in: next) { before = next.remove(at: i) }
            var after: [String: AttributeValue]?
            if let new = change.new, predicate.matches(new) {
                let projected = QueryDiff.project(new, kept)
                let j = sorting.insertionIndex(of: projected, in: next)
                // A limited window that lacks rows beyond its end cannot place a row there.
                if complete || j < next.count {
                    next.insert(projected, at: j)
                    after = projected
                }
            }
            if before != nil || after != nil { touched.append((QueryDiff.uuid(change.new ?? change.old ?? [:]), before, after)) }
        }
        var cut: ArraySlice<[String: AttributeValue]> = []
        if let limit, next.count > limit {
            cut = next[limit...]
            next.removeLast(next.count - limit)
            complete = false
        }
        if !complete, let limit, next.count < limit { return .refetch }
        var diff = QueryDiff()
        let changed = Set(touched.map(\.uuid))
        for row in cut where !changed.contains(QueryDiff.uuid(row)) {
            if let i = position(of: row, in: rows) { diff.deleted.append(QueryDiff.Deletion(uuid: QueryDiff.uuid(row), index: i)) }
        }
        for t in touched {
            let from = t.old.flatMap { position(of: $0, in: rows) }
            let to = t.new.flatMap { position(of: $0, in: next) }
            record(&diff, t.uuid, from: from, old: t.old, to: to, in: next)
        }
        rows = next
        isComplete = complete
        return .diff(Self.ordered(diff))
    }

    /// One changed row's part of the diff, from its place in the old result (`from`, with its old
    /// values) and in the new one (`to`, in `next`): deleted, inserted, or — in both — moved when
    /// its sort keys changed and updated when a field did.
    private func record(_ diff: inout QueryDiff, _ uuid: String, from: Int?, old: [String: AttributeValue]?, to: Int?,
                        in next: [[String: AttributeValue]]) {
        switch (from, to) {
        case (nil, nil):
            return
        case (let i?, nil):
            diff.deleted.append(QueryDiff.Deletion(uuid: uuid, index: i))
        case (nil, let j?):
            diff.inserted.append(QueryDiff.Insertion(uuid: uuid, index: j, row: QueryDiff.project(next[j], fields)))
        case (let i?, let j?):
            let old = old ?? [:], new = next[j]
            if sorting.keys.contains(where: { !QueryDiff.same(old[$0.attribute], new[$0.attribute]) }) {
                diff.moved.append(QueryDiff.Move(uuid: uuid, from: i, to: j))
            }
            let keys = fields.filter { !QueryDiff.same(old[$0], new[$0]) }
            if !keys.isEmpty { diff.updated.append(QueryDiff.Update(uuid: uuid, index: j, changedKeys: keys, row: QueryDiff.project(new, fields))) }
        }
    }

    private static func ordered(_ diff: QueryDiff) -> QueryDiff {
        var d = diff
        d.deleted.sort { $0.index < $1.index }
        d.inserted.sort { $0.index < $1.index }
        d.moved.sort { $0.to < $1.to }
        return d
    }

    /// Replaces the rows by a fresh result of the query; answers the diff from the old ones.
    public mutating func replace(with fresh: [[String: AttributeValue]]) -> QueryDiff {
        let (next, complete) = normalised(fresh)
        let diff = QueryDiff.between(rows, next, fields: fields, sortKeys: sorting.keys.map(\.attribute))
        rows = next
        isComplete = complete
        return diff
    }

    /// The result this window had before `changes` (the rows as they were before each change),
    /// given `current`, the query's rows now with up to `limit + changes.count` of them: what a
    /// subscriber that saw the older result holds, so that it can be sent the diff to now.
    public func reconstructed(before changes: [String: [String: AttributeValue]?], current: [[String: AttributeValue]]) -> [[String: AttributeValue]] {
        var earlier = current.filter { changes[QueryDiff.uuid($0)] == nil }.map { QueryDiff.project($0, kept) }
        for case let (_, old?) in changes where predicate.matches(old) {
            let projected = QueryDiff.project(old, kept)
            earlier.insert(projected, at: sorting.insertionIndex(of: projected, in: earlier))
        }
        if let limit, earlier.count > limit { earlier.removeLast(earlier.count - limit) }
        return earlier
    }

    private func normalised(_ fresh: [[String: AttributeValue]]) -> ([[String: AttributeValue]], Bool) {
        var projected = fresh.map { QueryDiff.project($0, kept) }
        var complete = true
        if let limit, projected.count >= limit {
            // A result that fills its limit may have had more rows beyond it.
            complete = false
            if projected.count > limit { projected.removeLast(projected.count - limit) }
        }
        return (projected, complete)
    }

    /// Where `row` (as the window last saw it) sits in `rows`, or nil when it is not there (beyond
    /// the limit). A binary search: the order is total, since ties break by uuid.
    /// The row need not be projected first: the comparison reads only the sort keys (uuid last),
    /// which every row, whole or kept, holds.
    private func position(of row: [String: AttributeValue], in rows: [[String: AttributeValue]]) -> Int? {
        var low = 0
        var high = rows.count
        while low < high {
            let mid = (low + high) / 2
            if sorting.compare(rows[mid], row) < 0 { low = mid + 1 } else { high = mid }
        }
        return low < rows.count && QueryDiff.uuid(rows[low]) == QueryDiff.uuid(row) ? low : nil
    }
}
