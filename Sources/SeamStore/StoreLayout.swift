import SeamSystem

/// Where a directory's store files and their companions live.
///
/// ```
/// DIR/Cloud.sqlite              a configuration's store (and its -wal, -shm)
/// DIR/.Cloud.sqlite.migrating   a migration's copy, until it is swapped in
/// DIR/migration.intent          written when every copy is verified: "swap these in"
/// DIR/backups/Cloud.sqlite      the original a migration replaced (one generation)
/// DIR/stores.open               while the stores are open with normal durability
/// DIR/sequence.lease            how far sequence numbers may have been handed out
/// ```
public struct StoreLayout: Sendable {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    public func store(_ configuration: String) -> String { FileSystem.join(directory, "\(configuration).sqlite") }
    public func copy(_ configuration: String) -> String { FileSystem.join(directory, ".\(configuration).sqlite.migrating") }
    public var intent: String { FileSystem.join(directory, "migration.intent") }
    public var backups: String { FileSystem.join(directory, "backups") }
    /// Present while a context has the stores open (`Context` with normal durability): found at
    /// an open, it says the last one did not close cleanly, and saves it numbered may be lost.
    public var openMarker: String { FileSystem.join(directory, "stores.open") }
    /// The highest sequence number that may have been handed out (`Context+Sequence`): kept
    /// apart from the stores, so that a store restored from an older copy is found out.
    public var sequenceLease: String { FileSystem.join(directory, "sequence.lease") }
    public func backup(_ configuration: String) -> String { FileSystem.join(backups, "\(configuration).sqlite") }

    /// The companion files SQLite may keep beside a database.
    public static func companions(_ path: String) -> [String] { [path + "-wal", path + "-shm", path + "-journal"] }

    /// Removes a database file and its companions.
    public static func removeDatabase(_ path: String) throws(SystemError) {
        for p in [path] + companions(path) { try FileSystem.remove(p) }
    }
}
