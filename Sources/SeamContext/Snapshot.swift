import SeamSchema
import SeamStore

/// Reads pinned to one moment: every fetch through a snapshot sees the stores as they were when
/// it began, whatever saves happen meanwhile.
///
/// On store files this is a read transaction on a second connection per file (WAL lets readers
/// and the writer run side by side); both files' transactions begin together, between saves, so
/// the pair is consistent. SQLite's in-memory database has a single connection, so the
/// in-memory store cannot pin one: `withSnapshot` refuses there instead of pretending.
public final class Snapshot {
    let context: Context
    let readers: [String: Database]

    init(context: Context, readers: [String: Database]) {
        self.context = context
        self.readers = readers
    }

    public func fetch(_ request: FetchRequest) throws(ContextError) -> [Row] {
        let r = try context.route(request.entity)
        return try context.fetch(request, entity: r.entity, db: reader(r.store, for: request.entity), handle: nil)
    }

    public func count(_ request: FetchRequest) throws(ContextError) -> Int {
        let r = try context.route(request.entity)
        return try context.count(request, entity: r.entity, db: reader(r.store, for: request.entity), handle: nil)
    }

    public func row(_ entity: String, _ uuid: String) throws(ContextError) -> Row? {
        let r = try context.route(entity)
        return try context.readRow(r.entity, uuid: uuid, from: reader(r.store, for: entity), handle: nil)
    }

    /// The snapshot's connection to `store`: one for every store open when it was taken.
    private func reader(_ store: String, for entity: String) throws(ContextError) -> Database {
        guard let db = readers[store] else {
            throw ContextError(.storeUnavailable(store: store, entity: entity, reason: "it opened after this snapshot was taken"))
        }
        return db
    }
}

extension Context {
    /// Runs `body` with reads pinned to the stores as they are now.
    ///
    /// Throws `snapshotUnsupported` on the in-memory store (see `Snapshot`).
    public func withSnapshot<T>(_ body: (Snapshot) throws -> T) throws -> T {
        guard let directory else { throw ContextError(.snapshotUnsupported) }
        var begun: [Database] = []
        defer { for db in begun { try? db.execute("COMMIT") } }
        var pinned: [String: Database] = [:]
        do {
            for name in storeNames {
                let db: Database
                if let reader = readers[name] {
                    db = reader
                } else {
                    var o = Database.Options()
                    o.readOnly = true
                    db = try Database(path: StoreLayout(directory: directory).store(name), options: o)
                    readers[name] = db
                }
                try db.execute("BEGIN")
                begun.append(db)
                _ = try db.scalar("SELECT count(*) FROM seam_store")
                pinned[name] = db
            }
        } catch {
            throw ContextError(.database(error))
        }
        return try body(Snapshot(context: self, readers: pinned))
    }
}
