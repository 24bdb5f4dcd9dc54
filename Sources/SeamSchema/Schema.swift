/// Everything one application stores: several versioned models, composed into store files by
/// configuration name.
///
/// Seam's timer app has two models: `Timers` (Timer and UserGroup in `Cloud`, Session in `Local`)
/// and `SyncMetadata` (in `Cloud`, beside the timers). So `Cloud.sqlite` is a combined store that
/// holds two models, each versioned on its own.
public struct Schema: Sendable {
    public let models: [VersionedModel]

    /// Composes `models`, checking that no two of them put an entity of one name in one store.
    public init(_ models: [VersionedModel]) throws(SchemaError) {
        self.models = models
        var owner: [String: String] = [:]
        for m in models {
            for e in m.current.entities {
                if let other = owner[e.name] {
                    throw SchemaError(.entityNameClash(otherModel: other), model: m.name, version: m.current.version,
                                      entity: e.name)
                }
                owner[e.name] = m.name
            }
        }
    }

    /// The configuration names (store files) of the current versions, sorted.
    public var configurations: [String] {
        Set(models.flatMap { $0.current.configurations.map(\.name) }).sorted()
    }

    /// The model called `name`.
    public func model(_ name: String) -> VersionedModel? { models.first { $0.name == name } }

    /// The current definition of entity `name`, with its model and configuration.
    public func entity(_ name: String) -> (model: VersionedModel, entity: Entity, configuration: String)? {
        for m in models {
            if let e = m.current.entity(name), let c = m.current.configuration(of: name) { return (m, e, c) }
        }
        return nil
    }

    /// The models that have entities in configuration `name` in their current version.
    public func models(in configuration: String) -> [VersionedModel] {
        models.filter { !$0.current.entities(in: configuration).isEmpty }
    }
}
