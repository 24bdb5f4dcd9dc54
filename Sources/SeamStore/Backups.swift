import SeamSchema
import SeamSystem

/// One generation in `backups/`: the store files one migration or restore replaced, kept as they
/// were (hard links of the originals), in a directory of its own named by time and model versions:
///
/// ```
/// backups/20261205-143000-migration-Timers-v1/Cloud.sqlite
/// backups/20261205-143000-migration-Timers-v1/Local.sqlite
/// backups/20261205-143000-migration-Timers-v1/backup.json   {"reason", "createdAt", "stores", "versions"}
/// ```
///
/// A generation is never overwritten; only `Backups.prune` removes whole generations, oldest
/// first, when seamd.json bounds them.
public struct BackupGeneration: Sendable, Equatable {
    /// The directory's name under `backups/`.
    public var name: String
    public var path: String
    /// "migration" or "restore"; "earlier Seam" for the single generation older builds kept.
    public var reason: String
    /// Unix seconds.
    public var createdAt: Double
    /// The configurations whose files it holds.
    public var stores: [String]
    /// Model name → the version those files held.
    public var versions: [String: Int]
    /// What its files take on the disk.
    public var bytes: Int64

    public init(name: String, path: String, reason: String, createdAt: Double, stores: [String], versions: [String: Int], bytes: Int64) {
        self.name = name
        self.path = path
        self.reason = reason
        self.createdAt = createdAt
        self.stores = stores
        self.versions = versions
        self.bytes = bytes
    }

    public func file(_ configuration: String) -> String { FileSystem.join(path, "\(configuration).sqlite") }

    /// The manifest written beside the files.
    var manifest: [UInt8] {
        Array(CanonicalJSON.object([
            "format": .integer(1), "reason": .string(reason), "createdAt": .integer(Int64(createdAt)),
            "stores": .array(stores.map(CanonicalJSON.string)),
            "versions": .object(versions.mapValues { CanonicalJSON.integer(Int64($0)) }),
        ]).text.utf8)
    }
}

public enum Backups {
    static let manifestName = "backup.json"

    /// A new generation's name and place (not yet made): time, reason and the versions the files
    /// hold; a suffix keeps it apart from one made in the same second.
    public static func newGeneration(_ layout: StoreLayout, reason: String, stores: [String], versions: [String: Int],
                                     at time: Double = WallClock.now()) -> BackupGeneration {
        let held = versions.sorted { $0.key < $1.key }.map { "\($0.key)-v\($0.value)" }.joined(separator: "-")
        let base = WallClock.fileStamp(time) + "-" + reason + (held.isEmpty ? "" : "-" + held)
        var name = base
        var n = 2
        while FileSystem.exists(FileSystem.join(layout.backups, name)) {
            name = "\(base)-\(n)"
            n += 1
        }
        return BackupGeneration(name: name, path: FileSystem.join(layout.backups, name), reason: reason, createdAt: time,
                                stores: stores, versions: versions, bytes: 0)
    }

    /// Makes a generation's directory and manifest, on the disk, before anything is linked in.
    static func make(_ generation: BackupGeneration) throws(SystemError) {
        try FileSystem.makeDirectory(generation.path)
        try FileSystem.writeAtomically(generation.manifest, to: FileSystem.join(generation.path, manifestName))
        try FileSystem.syncDirectory(generation.path)
        try FileSystem.syncDirectory(FileSystem.parentDirectory(generation.path))
    }

    /// Every generation in `backups/`, oldest first. Files an older build kept directly in
    /// `backups/` show as one generation of reason "earlier Seam".
    public static func list(_ layout: StoreLayout) -> [BackupGeneration] {
        guard let names = try? FileSystem.contents(of: layout.backups) else { return [] }
        var out: [BackupGeneration] = []
        var loose: [String] = []
        for name in names {
            let path = FileSystem.join(layout.backups, name)
            if FileSystem.isDirectory(path) {
                out.append(read(name: name, path: path))
            } else if name.hasSuffix(".sqlite") {
                loose.append(String(name.dropLast(".sqlite".count)))
            }
        }
        if !loose.isEmpty {
            let oldest = loose.compactMap { FileSystem.modified(FileSystem.join(layout.backups, "\($0).sqlite")) }.min() ?? 0
            out.append(BackupGeneration(name: ".", path: layout.backups, reason: "earlier Seam", createdAt: oldest, stores: loose,
                                        versions: [:], bytes: loose.reduce(0) { $0 + (FileSystem.size(FileSystem.join(layout.backups, "\($1).sqlite")) ?? 0) }))
        }
        return out.sorted { ($0.createdAt, $0.name) < ($1.createdAt, $1.name) }
    }

    /// A generation as its manifest describes it (or, without one, as its files and name say).
    static func read(name: String, path: String) -> BackupGeneration {
        var g = BackupGeneration(name: name, path: path, reason: "unknown", createdAt: FileSystem.modified(path) ?? 0, stores: [],
                                 versions: [:], bytes: 0)
        if let bytes = try? FileSystem.read(FileSystem.join(path, manifestName)),
           let m = try? JSONText.parse(String(decoding: bytes, as: UTF8.self)) {
            g.reason = m["reason"]?.stringValue ?? g.reason
            if let t = m["createdAt"]?.int64Value { g.createdAt = Double(t) }
            g.stores = m["stores"]?.arrayValue?.compactMap(\.stringValue) ?? []
            for (k, v) in m["versions"]?.objectValue ?? [] { if let n = v.int64Value { g.versions[k] = Int(n) } }
        }
        let files = (try? FileSystem.contents(of: path)) ?? []
        if g.stores.isEmpty { g.stores = files.filter { $0.hasSuffix(".sqlite") }.map { String($0.dropLast(".sqlite".count)) } }
        g.bytes = files.reduce(0) { $0 + (FileSystem.size(FileSystem.join(path, $1)) ?? 0) }
        return g
    }

    /// A bound on what `backups/` keeps (seamd.json's `backups`): at most `keep` generations and
    /// `maxBytes` bytes. Nil: no bound.
    public struct Bound: Sendable, Equatable {
        public var keep: Int?
        public var maxBytes: Int64?
        public init(keep: Int? = nil, maxBytes: Int64? = nil) {
            self.keep = keep
            self.maxBytes = maxBytes
        }
    }

    /// The generations `bound` lets go, oldest first (the newest is always kept). Pure.
    public static func toPrune(_ generations: [BackupGeneration], bound: Bound) -> [BackupGeneration] {
        var kept = generations.sorted { ($0.createdAt, $0.name) < ($1.createdAt, $1.name) }
        var pruned: [BackupGeneration] = []
        func over() -> Bool {
            if let keep = bound.keep, kept.count > max(keep, 1) { return true }
            if let maxBytes = bound.maxBytes, kept.count > 1, kept.reduce(0, { $0 + $1.bytes }) > maxBytes { return true }
            return false
        }
        while over() { pruned.append(kept.removeFirst()) }
        return pruned
    }

    /// Removes the generations `bound` lets go; returns them (for the log).
    @discardableResult
    public static func prune(_ layout: StoreLayout, bound: Bound) throws(SystemError) -> [BackupGeneration] {
        let pruned = toPrune(list(layout), bound: bound)
        for g in pruned {
            if g.name == "." {
                for c in g.stores { try StoreLayout.removeDatabase(FileSystem.join(layout.backups, "\(c).sqlite")) }
                continue
            }
            for name in try FileSystem.contents(of: g.path) { try FileSystem.remove(FileSystem.join(g.path, name)) }
            try FileSystem.removeDirectory(g.path)
        }
        if !pruned.isEmpty { try FileSystem.syncDirectory(layout.backups) }
        return pruned
    }
}
