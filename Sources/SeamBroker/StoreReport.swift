import SeamContext
import SeamJSON
import SeamProtocol
import SeamStore
import SeamSystem

/// What `Status` says of the stores and of backups/: functions of the context and the store
/// directory as they are now.
enum StoreReport {
    /// Each store as `Status` lists it: its file, state, versions, reasons, last backup, WAL.
    static func stores(_ context: Context, dataDirectory: String, isMigrating: (String) -> Bool) -> [JSON] {
        let layout = StoreLayout(directory: dataDirectory)
        let generations = Backups.list(layout)
        return context.schema.configurations.map { name in
            let path = layout.store(name)
            var o: JSONObject = ["name": .string(name), "path": .string(path), "size": .integer(FileSystem.size(path) ?? 0)]
            o["state"] = .string(state(name, context, isMigrating: isMigrating))
            o["readOnly"] = .bool(context.readOnly[name] != nil)
            if let why = context.readOnly[name] { o["readOnlyReason"] = .string(why) }
            if let note = context.olderThanTold[name] { o["note"] = .string(note) }
            if let versions = context.servedVersions[name] {
                o["versions"] = .array(versions.sorted { $0.key < $1.key }.map { model, version in
                    let v = version.version
                    // A shape several versions share (`Cloud` the same from v3 to v5): the first of them too.
                    let shape = version.hashes.configurations[name]
                    let oldest = context.schema.model(model)?.versions.first { $0.hashes.configurations[name] == shape }?.version ?? v
                    return .object(["model": .string(model), "version": .integer(Int64(v)), "oldest": .integer(Int64(oldest)),
                                    "current": .integer(Int64(context.schema.model(model)?.current.version ?? v))])
                })
            } else {
                o["versions"] = .null
            }
            o["reason"] = context.closedStores[name].map(JSON.string) ?? .null
            let kept = generations.last { $0.stores.contains(name) && FileSystem.exists($0.file(name)) }
            o["backup"] = kept.map { .string($0.file(name)) } ?? .null
            if let c = context.checkpointing(name) {
                o["checkpoints"] = .integer(Int64(c.checkpoints))
                o["checkpointError"] = c.lastFailure.map(JSON.string) ?? .null
                o["walFrames"] = .integer(Int64(c.walFrames))
                o["writeHolds"] = .integer(Int64(c.writeHolds))
            }
            // How often seamd has flushed its WAL itself: about once per save (or group) with full
            // durability; with normal, only around two-store saves and at close (PROTOCOL.md, Status).
            if let n = context.walSyncs[name] { o["walSyncs"] = .integer(Int64(n)) }
            return .object(o)
        }
    }

    /// A store's state as `Status` says it: open, outdated, checking, migrating, damaged or closed.
    static func state(_ name: String, _ context: Context, isMigrating: (String) -> Bool) -> String {
        if context.damaged[name] != nil { return "damaged" }
        if let versions = context.servedVersions[name] {
            if context.checking.contains(name) { return "checking" }
            let outdated = versions.contains { context.schema.model($0.key)?.current.version != $0.value.version }
            return outdated ? "outdated" : "open"
        }
        return isMigrating(name) ? "migrating" : "closed"
    }

    /// Every generation in backups/, oldest first, as `Status` lists them.
    static func backups(dataDirectory: String) -> JSON {
        .array(Backups.list(StoreLayout(directory: dataDirectory)).map { g in
            .object(["name": .string(g.name), "path": .string(g.path), "reason": .string(g.reason),
                     "createdAt": .string(RFC3339.format(g.createdAt)), "stores": .array(g.stores.map(JSON.string)),
                     "versions": .object(JSONObject(uniqueKeysWithValues: g.versions.sorted { $0.key < $1.key }.map { ($0.key, JSON.integer(Int64($0.value))) })),
                     "bytes": .integer(g.bytes)])
        })
    }
}
