import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema

/// `Fetch` by uuid, the hottest read, answered on the loop: a whole row from the row cache
/// (filled on a miss, exact because every save evicts what it touched), some fields only from the
/// store. (Whether the caller may read the entity is checked before.)
struct UUIDFetch {
    let context: Context
    let rowCache: RowCache

    /// `Fetch(entity, uuid)`: the one row with that uuid (or none), by the primary key.
    func reply(_ p: JSONObject, _ uuid: JSON, id: JSON?) -> [UInt8] {
        guard let u = uuid.stringValue else { return Reply(.invalidParameter("uuid"), id: id).frame() }
        for key in ["predicate", "parameters", "sort", "limit", "offset"] where p[key] != nil && p[key] != .null {
            return Reply(.invalidRequest("a Fetch by uuid takes no \(key): the uuid names the one row", field: key), id: id).frame()
        }
        let e: Entity
        switch context.servedEntity(p) {
        case .success(let x): e = x
        case .failure(let err): return Reply(err, id: id).frame()
        }
        if let fields = p["fields"], fields != .null {
            // Some attributes only (checked as any Fetch checks them): from the store, not the
            // cache, which holds whole rows.
            let r: FetchRequest
            switch context.fetchRequest(p) {
            case .success(let x): r = x
            case .failure(let err): return Reply(err, id: id).frame()
            }
            let order = [Entity.identity] + (r.attributes ?? []).filter { $0 != Entity.identity }
            let row: (attributes: [Attribute], values: [AttributeValue])?
            do { row = try context.rowValues(e.name, u) } catch { return Reply(VarlinkError(error), id: id).frame() }
            let encoded = row.map { row in
                var w = JSONStreamWriter(capacity: 256)
                WireValues.writeRow(order, Dictionary(uniqueKeysWithValues: zip(row.attributes.map(\.name), row.values)), into: &w)
                return w.finish()
            }
            return ReadJobs.rowReply(encoded, sequence: context.sequence, id: id)
        }
        return cachedRow(e, u, id: id)
    }

    /// A fetch by uuid recognised from its frame's bytes (see `QuickFetch`): what `reply` does
    /// for the same call, without a JSON tree.
    func reply(_ q: QuickFetch) -> [UInt8] {
        let e: Entity
        do { e = try context.servedEntity(q.entity) } catch { return Reply(VarlinkError(error), id: q.id).frame() }
        return cachedRow(e, q.uuid, id: q.id)
    }

    /// The reply to a fetch of one whole row by uuid, from the row cache (filled on a miss).
    private func cachedRow(_ e: Entity, _ u: String, id: JSON?) -> [UInt8] {
        var encoded = rowCache.row(e.name, u)
        if encoded == nil {
            let row: (attributes: [Attribute], values: [AttributeValue])?
            do { row = try context.rowValues(e.name, u) } catch { return Reply(VarlinkError(error), id: id).frame() }
            if let row {
                var w = JSONStreamWriter(capacity: 256)
                WireValues.writeRow(row.attributes, row.values, into: &w)
                let bytes = w.finish()
                rowCache.store(bytes, e.name, u)
                encoded = bytes
            }
        }
        return ReadJobs.rowReply(encoded, sequence: context.sequence, id: id)
    }
}
