/// One version of a model: validated, frozen, with its canonical JSON and structural hashes.
public struct ModelVersion: Sendable {
    public let model: String
    /// The label: an integer from 1. Identity is the hash, not the label.
    public let version: Int
    public let entities: [Entity]
    /// The declared configurations (never `Default`), each with its entities sorted by name.
    public let configurations: [Configuration]
    public let versionHashModifier: String?
    /// Stages that run when a store crosses into this version.
    public let customStages: [CustomStage]
    /// What this version removed on purpose (`Entity` or `Entity.attribute`, by previous names).
    public let removals: Set<String>
    public let hashes: ModelHashes
    /// The canonical JSON the hashes are computed from (see `Protocol/schema.md`).
    public let canonicalJSON: String
    /// Entity name → its place in `entities`, and → the configuration holding it: lookups that
    /// stay cheap in a model of thousands of entities (one read from a store file may be).
    private let places: [String: Int]
    private let holders: [String: String]

    /// Validates `draft` and computes its canonical form and hashes.
    public init(_ draft: ModelDraft) throws(SchemaError) {
        try Validation.check(draft)
        model = draft.model
        version = draft.version
        entities = draft.entities
        configurations = draft.configurations.map {
            Configuration($0.name, entities: $0.entities.sorted(by: CanonicalJSON.utf8Less))
        }.sorted { CanonicalJSON.utf8Less($0.name, $1.name) }
        versionHashModifier = draft.versionHashModifier
        customStages = draft.customStages
        removals = draft.removals
        places = Dictionary(entities.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        holders = Dictionary(configurations.flatMap { c in c.entities.map { ($0, c.name) } }, uniquingKeysWith: { first, _ in first })
        let encoding = SchemaEncoding.model(name: model, entities: entities, configurations: configurations,
                                            modifier: versionHashModifier)
        canonicalJSON = encoding.text
        hashes = SchemaEncoding.hashes(model: model, entities: entities, configurations: configurations,
                                       modifier: versionHashModifier, modelJSON: canonicalJSON)
    }

    /// The entity called `name`.
    public func entity(_ name: String) -> Entity? { places[name].map { entities[$0] } }

    /// The configuration holding `entity` (there is exactly one).
    public func configuration(of entity: String) -> String? { holders[entity] }

    /// The entities stored in configuration `name`; `Default` holds them all.
    public func entities(in configuration: String) -> [Entity] {
        if configuration == Configuration.defaultName { return entities }
        guard let c = configurations.first(where: { $0.name == configuration }) else { return [] }
        let members = Set(c.entities)
        return entities.filter { members.contains($0.name) }
    }
}

/// The structural hashes of one model version, as lowercase hex SHA-256.
public struct ModelHashes: Sendable, Hashable, Codable {
    /// The hash of the whole model's canonical JSON.
    public var model: String
    /// Entity name → hash of its canonical entity object.
    public var entities: [String: String]
    /// Configuration name → hash of its configuration document; includes `Default`.
    public var configurations: [String: String]
}
