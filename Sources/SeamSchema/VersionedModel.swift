/// A model with every version it has ever shipped, oldest first.
///
/// Labels run 1, 2, 3 … with no gaps, and no two versions share a structural hash: a label
/// names exactly one shape and a shape has exactly one label.
public struct VersionedModel: Sendable {
    public let name: String
    public let versions: [ModelVersion]

    /// Builds and validates every version. `drafts` are the versions oldest first.
    public init(_ drafts: [ModelDraft]) throws(SchemaError) {
        guard let first = drafts.first else { throw SchemaError(.emptyHistory, model: "?") }
        name = first.model
        var built: [ModelVersion] = []
        for (i, draft) in drafts.enumerated() {
            guard draft.model == name, draft.version == i + 1 else {
                throw SchemaError(.versionOutOfOrder(expected: i + 1), model: draft.model, version: draft.version)
            }
            let v = try ModelVersion(draft)
            if let same = built.first(where: { $0.hashes.model == v.hashes.model }) {
                throw SchemaError(.sameShapeAsVersion(same.version), model: name, version: v.version)
            }
            built.append(v)
        }
        versions = built
    }

    /// The newest version: what this build writes.
    public var current: ModelVersion { versions[versions.count - 1] }

    /// The version labelled `label`.
    public func version(_ label: Int) -> ModelVersion? {
        guard label >= 1, label <= versions.count else { return nil }
        return versions[label - 1]
    }

    /// The newest version whose hash for configuration `configuration` is `hash`.
    ///
    /// Several versions can share one configuration's shape (a change to `Local` leaves `Cloud`
    /// as it was); a store of that configuration matches all of them, and the newest is returned.
    public func version(matching hash: String, in configuration: String) -> ModelVersion? {
        versions.last { $0.hashes.configurations[configuration] == hash }
    }

    /// The version whose whole-model hash is `hash`.
    public func version(withModelHash hash: String) -> ModelVersion? {
        versions.first { $0.hashes.model == hash }
    }
}
