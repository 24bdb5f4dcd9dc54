import SeamSchema

/// What a store file holds, compared with what this build expects.
public struct StoreClassification: Sendable {
    /// One model's standing in the file.
    public enum ModelStatus: Sendable {
        /// At the current version's shape.
        case current(ModelVersion)
        /// At an older version this build lists: migrate from it in one step.
        case older(ModelVersion)
        /// Not in the file yet: its tables are to be created.
        case absent
        /// A shape this build does not list, read back from the model embedded in the file.
        case embedded(ModelVersion, label: Int)
        /// Newer than this build.
        case newer(label: Int)
        /// Unknown, with no usable embedded model; or a model this build does not have at all.
        case unknown(detail: String)

        /// The version the file holds, when this build can read it.
        public var source: ModelVersion? {
            switch self {
            case .current(let v), .older(let v), .embedded(let v, _): return v
            default: return nil
            }
        }
    }

    public enum State: Sendable, Equatable {
        /// No file, or an empty database: it will be created at the current version.
        case new
        /// Every model at its current shape: opens with no write.
        case current
        /// Some model older (or absent, or unknown with an embedded model): migrate first.
        case older
        /// Written by a newer build: refused, untouched.
        case newer
        /// Matches nothing and carries nothing usable: refused, untouched.
        case unknown
    }

    public var configuration: String
    public var path: String
    public var state: State
    /// Model name → status, for every model recorded in the file or expected in it.
    public var models: [(name: String, status: ModelStatus)]
    /// What the file holds that no model version it records declares (`ForeignObjects.read`).
    public var foreign: [ForeignObject] = []
    /// The `CREATE TABLE` statements of the file's own bookkeeping tables (`seam_…`).
    public var bookkeeping: [String] = []

    /// The names of the tables and indexes the file's model versions lay out.
    public var declaredNames: Set<String> {
        var names: Set<String> = []
        for (_, status) in models {
            for e in status.source?.entities(in: configuration) ?? [] {
                names.insert(e.name)
                for i in SchemaSQL.indexes(e) { names.insert(i.name) }
            }
        }
        return names
    }

    /// Compares a file's metadata with `schema`. `metadata` is `nil` when the file has no Seam
    /// metadata; `isEmpty` says whether it has no tables at all.
    public static func classify(
        configuration: String, path: String, metadata: StoreMetadata?, isEmpty: Bool, schema: Schema
    ) -> StoreClassification {
        guard let metadata else {
            return StoreClassification(configuration: configuration, path: path, state: isEmpty ? .new : .unknown,
                                       models: isEmpty ? [] : [("?", .unknown(detail: "tables without Seam metadata"))])
        }
        var models: [(String, ModelStatus)] = []
        for record in metadata.models {
            guard let model = schema.model(record.model) else {
                models.append((record.model, .unknown(detail: "model \(record.model) is not part of this build")))
                continue
            }
            models.append((record.model, status(of: record, model: model, configuration: configuration)))
        }
        for model in schema.models(in: configuration) where !metadata.models.contains(where: { $0.model == model.name }) {
            models.append((model.name, .absent))
        }
        let state: State
        if models.contains(where: { if case .newer = $0.1 { return true } else { return false } }) {
            state = .newer
        } else if models.contains(where: { if case .unknown = $0.1 { return true } else { return false } }) {
            state = .unknown
        } else if models.allSatisfy({ if case .current = $0.1 { return true } else { return false } }) {
            state = .current
        } else {
            state = .older
        }
        return StoreClassification(configuration: configuration, path: path, state: state, models: models)
    }

    private static func status(of record: StoreMetadata.ModelRecord, model: VersionedModel, configuration: String) -> ModelStatus {
        if model.current.hashes.configurations[configuration] == record.configurationHash { return .current(model.current) }
        if let v = model.version(matching: record.configurationHash, in: configuration) { return .older(v) }
        if record.version > model.current.version { return .newer(label: record.version) }
        guard let embedded = try? ModelVersion(canonicalJSON: record.canonicalJSON, label: record.version),
              embedded.hashes.configurations[configuration] == record.configurationHash
        else {
            return .unknown(detail: "\(record.model) hash \(record.configurationHash.prefix(12))… matches no version of this build "
                            + "and the embedded model is unusable")
        }
        return .embedded(embedded, label: record.version)
    }

    /// A line a person can read: "Cloud.sqlite: older (Timers v2 → v4, SyncMetadata current)".
    public var summary: String {
        let parts = models.map { name, status -> String in
            switch status {
            case .current(let v): return "\(name) v\(v.version) (current)"
            case .older(let v): return "\(name) v\(v.version) (older)"
            case .absent: return "\(name) absent"
            case .embedded(_, let label): return "\(name) unknown v\(label) with embedded model"
            case .newer(let label): return "\(name) v\(label) (newer than this build)"
            case .unknown(let detail): return "\(name) unknown: \(detail)"
            }
        }
        return "\(configuration): \(state)" + (parts.isEmpty ? "" : " — " + parts.joined(separator: ", "))
    }
}
