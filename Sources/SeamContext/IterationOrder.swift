import SeamSchema

/// The order a row's values come in when the row is iterated, and where each belongs.
///
/// Rows made from one `InsertTemplate` share the template's layout (a copy keeps its
/// original's buckets, and setting a key it holds moves nothing), so they iterate in one
/// order. Knowing it, a writer puts each value in its place without hashing its name: a
/// 1,000-row save hashed every name of every row once to bind it and once to write its
/// history. Each name is still compared as it comes (short strings compare as two words), and a
/// row in another order is learnt afresh, so any row is read right, however it was made.
struct IterationOrder {
    private var names: [String] = []
    private var places: [Int] = []

    /// Calls `body(place, value)` for every value of `row`, `place` being its name's index in
    /// `target`. False when `row` does not hold exactly `target`'s names — `body` may then have
    /// been called for some of them, and the caller starts over its own way.
    mutating func forEach<E: Error>(
        _ row: [String: AttributeValue], in target: [String], _ body: (Int, AttributeValue) throws(E) -> Void
    ) throws(E) -> Bool {
        guard row.count == target.count else { return false }
        if names.count == row.count {
            var i = 0
            for (name, value) in row {
                guard name == names[i] else { break }
                try body(places[i], value)
                i += 1
            }
            if i == row.count { return true }
        }
        // Another order (or the first row): learn this one, then go again from the start.
        let learnt = Array(row.keys)
        var learntPlaces: [Int] = []
        learntPlaces.reserveCapacity(learnt.count)
        for name in learnt {
            guard let place = target.firstIndex(of: name) else { return false }
            learntPlaces.append(place)
        }
        names = learnt
        places = learntPlaces
        var i = 0
        for (_, value) in row {
            try body(places[i], value)
            i += 1
        }
        return true
    }
}
