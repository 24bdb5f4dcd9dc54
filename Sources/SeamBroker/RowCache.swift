import SeamContext

/// Rows as their wire encoding, by entity and uuid, for `Fetch` by uuid — the hottest read.
///
/// seamd is the only process that writes its stores in service, and every save passes through
/// `SavePath.publish`, which evicts each row the commit touched (link-rule cascades included:
/// they are in the change set). So a cached row is always the row in the store, and a fetch by
/// uuid that hits costs a dictionary lookup instead of a read transaction. Bounded in bytes:
/// when full, it starts over.
final class RowCache {
    private var rows: [String: [String: [UInt8]]] = [:]
    private(set) var bytes = 0
    private(set) var count = 0
    let maxBytes: Int

    init(maxBytes: Int = 8 << 20) { self.maxBytes = maxBytes }

    func row(_ entity: String, _ uuid: String) -> [UInt8]? { rows[entity]?[uuid] }

    func store(_ encoded: [UInt8], _ entity: String, _ uuid: String) {
        if bytes + encoded.count > maxBytes { removeAll() }
        if let old = rows[entity, default: [:]].updateValue(encoded, forKey: uuid) {
            bytes -= old.count
        } else {
            count += 1
        }
        bytes += encoded.count
    }

    /// Forgets every row `set` inserted, updated or deleted.
    func evict(_ set: ChangeSet) {
        guard count > 0 else { return }
        // By index, so that no change is copied (and retained) whole: a thousand copies were
        // most of a big save's eviction.
        let changes = set.changes
        for i in changes.indices where rows[changes[i].entity] != nil {
            guard let old = rows[changes[i].entity]?.removeValue(forKey: changes[i].uuid) else { continue }
            bytes -= old.count
            count -= 1
        }
    }

    func removeAll() {
        rows = [:]
        bytes = 0
        count = 0
    }
}
