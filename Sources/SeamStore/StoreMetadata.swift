import SeamSchema

/// What a store file says about itself, in its `seam_models` and `seam_store` tables.
///
/// Every store records, per model it holds: the version label, the model hash, the hash of the
/// configuration it holds, the entity hashes, and the model's canonical JSON (so that a build
/// that does not know the version can still read the store's shape).
public struct StoreMetadata: Sendable, Hashable {
    public struct ModelRecord: Sendable, Hashable {
        public var model: String
        public var version: Int
        public var modelHash: String
        public var configurationHash: String
        public var entityHashes: [String: String]
        public var canonicalJSON: String
    }

    /// The configuration this file holds (`Cloud`, `Local`, or `Default`).
    public var configuration: String
    /// The store layout format; bumped when the metadata tables themselves change.
    public var format: Int
    public var models: [ModelRecord]

    public static let currentFormat = 1

    public init(configuration: String, format: Int, models: [ModelRecord]) {
        self.configuration = configuration
        self.format = format
        self.models = models
    }

    public static let createSQL = """
        CREATE TABLE IF NOT EXISTS seam_store (key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL) STRICT;
        CREATE TABLE IF NOT EXISTS seam_models (
            model TEXT NOT NULL PRIMARY KEY,
            version INTEGER NOT NULL,
            modelHash TEXT NOT NULL,
            configurationHash TEXT NOT NULL,
            entityHashes TEXT NOT NULL,
            canonicalJSON TEXT NOT NULL
        ) STRICT;
        """

    /// The record of `version` as it is stored in a file of `configuration`.
    public static func record(_ version: ModelVersion, configuration: String) -> ModelRecord {
        let members = Set(version.entities(in: configuration).map(\.name))
        return ModelRecord(
            model: version.model, version: version.version, modelHash: version.hashes.model,
            configurationHash: version.hashes.configurations[configuration] ?? "",
            entityHashes: version.hashes.entities.filter { members.contains($0.key) },
            canonicalJSON: version.canonicalJSON)
    }

    /// Writes the metadata tables and rows into `db` (inside the caller's transaction),
    /// replacing the model records and the layout keys; other keys of `seam_store` (the save
    /// sequence, for one) are kept.
    public func write(to db: Database) throws(DatabaseError) {
        try db.execute(Self.createSQL)
        try db.execute("DELETE FROM seam_models")
        try db.run("INSERT OR REPLACE INTO seam_store(key, value) VALUES ('configuration', ?), ('format', ?)",
                   [.string(configuration), .string(String(format))])
        for m in models {
            let hashes = CanonicalJSON.object(m.entityHashes.mapValues(CanonicalJSON.string)).text
            try db.run("INSERT INTO seam_models VALUES (?, ?, ?, ?, ?, ?)",
                       [.string(m.model), .integer(Int64(m.version)), .string(m.modelHash), .string(m.configurationHash),
                        .json(hashes), .json(m.canonicalJSON)])
        }
    }

    /// Reads the metadata of `db`, or `nil` when it has no Seam metadata tables.
    public static func read(from db: Database) throws(DatabaseError) -> StoreMetadata? {
        let tables = try db.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ('seam_store', 'seam_models')")
        guard tables.count == 2 else { return nil }
        var configuration = ""
        var format = 0
        for row in try db.rows("SELECT key, value FROM seam_store", types: [.string, .string]) {
            switch row[0].stringValue {
            case "configuration": configuration = row[1].stringValue ?? ""
            case "format": format = Int(row[1].stringValue ?? "") ?? 0
            default: break
            }
        }
        var models: [ModelRecord] = []
        let rows = try db.rows(
            "SELECT model, version, modelHash, configurationHash, entityHashes, canonicalJSON FROM seam_models ORDER BY model",
            types: [.string, .integer, .string, .string, .string, .string])
        for r in rows {
            var entityHashes: [String: String] = [:]
            if let parsed = try? JSONText.parse(r[4].stringValue ?? ""), let members = parsed.objectValue {
                for (k, v) in members { entityHashes[k] = v.stringValue }
            }
            models.append(ModelRecord(
                model: r[0].stringValue ?? "", version: Int(r[1].integerValue ?? 0), modelHash: r[2].stringValue ?? "",
                configurationHash: r[3].stringValue ?? "", entityHashes: entityHashes, canonicalJSON: r[5].stringValue ?? ""))
        }
        return StoreMetadata(configuration: configuration, format: format, models: models)
    }
}
