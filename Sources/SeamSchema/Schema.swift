/// Everything one application stores: several versioned models, composed into store files by
/// configuration name.
///
/// Seam's timer app has two models: `Timers` (Timer and UserGroup in `Cloud`, Session in `Local`)
/// and `SyncMetadata` (in `Cloud`, beside the timers). So `Cloud.sqlite` is a combined store that
/// holds two models, each versioned on its own.
public struct Schema: Sendable {
    public let models: [VersionedModel]
    /// Entity name → its model (an index into `models`), current definition and configuration:
    /// every save looks entities up by name.
    private let entities: [String: (model: Int, entity: Entity, configuration: String)]

    /// Composes `models`, checking that no two of them put an entity of one name in one store.
    public init(_ models: [VersionedModel]) throws(SchemaError) {
        self.models = models
        var entities: [String: (model: Int, entity: Entity, configuration: String)] = [:]
        var owners: [String: Int] = [:]  // by lowercased name: SQLite's table names ignore case
        for (i, m) in models.enumerated() {
            let current = m.current
            for e in current.entities {
                if let other = owners.updateValue(i, forKey: e.name.lowercased()) {
                    throw SchemaError(.entityNameClash(otherModel: models[other].name), model: m.name, version: current.version,
                                      entity: e.name)
                }
                if let c = current.configuration(of: e.name) { entities[e.name] = (i, e, c) }
            }
        }
        self.entities = entities
    }

    /// The configuration names (store files) of the current versions, sorted.
    public var configurations: [String] {
        Set(models.flatMap { $0.current.configurations.map(\.name) }).sorted()
    }

    /// The model called `name`.
    public func model(_ name: String) -> VersionedModel? { models.first { $0.name == name } }

    /// The current definition of entity `name`, with its model and configuration.
    public func entity(_ name: String) -> (model: VersionedModel, entity: Entity, configuration: String)? {
        guard let found = entities[name] else { return nil }
        return (models[found.model], found.entity, found.configuration)
    }

    /// The models that have entities in configuration `name` in their current version.
    public func models(in configuration: String) -> [VersionedModel] {
        models.filter { !$0.current.entities(in: configuration).isEmpty }
    }
}
