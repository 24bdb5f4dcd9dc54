/// A version of a model while it is being written: the previous version plus changes.
///
/// Versions are written the way the schema seed does it, as a change to the one before:
///
/// ```swift
/// static func v2() throws -> ModelDraft {
///     var m = try v1().next()
///     try m.modify("Timer") { e in try e.add(Attribute("icon", .string, default: .string("timer"))) }
///     return m
/// }
/// ```
///
/// Every method checks what it can at once and throws a `SchemaError` naming the model, the
/// version, the entity and the attribute; the rest is checked when `ModelVersion` is built.
public struct ModelDraft: Sendable {
    public let model: String
    public private(set) var version: Int
    public internal(set) var entities: [Entity] = []
    /// Configuration name → entity names, in declaration order.
    public private(set) var configurations: [(name: String, entities: [String])] = []
    public var versionHashModifier: String?
    public private(set) var customStages: [CustomStage] = []
    /// What this version removes on purpose, by name in the previous version: `Entity` or
    /// `Entity.attribute`. A migration treats anything else that vanishes as possibly a rename
    /// and refuses to guess.
    public private(set) var removals: Set<String> = []
    /// Entities present in the previous version (by their name there), for the "added required
    /// attribute" rule.
    private var previousEntities: Set<String> = []

    /// Starts version 1 of model `model`.
    public init(model: String) {
        self.model = model
        self.version = 1
    }

    /// A draft with an explicit label, for models decoded from a store.
    init(model: String, version: Int) {
        self.model = model
        self.version = version
    }

    /// The next version: the same shape, with renames and custom stages cleared, because those
    /// are relative to the version before.
    public func next() -> ModelDraft {
        var n = self
        n.version += 1
        n.customStages = []
        n.removals = []
        n.previousEntities = Set(entities.map(\.name))
        for i in n.entities.indices {
            n.entities[i].renamingIdentifier = nil
            for j in n.entities[i].attributes.indices { n.entities[i].attributes[j].renamingIdentifier = nil }
        }
        return n
    }

    func error(_ kind: SchemaError.Kind, entity: String? = nil, attribute: String? = nil) -> SchemaError {
        SchemaError(kind, model: model, version: version, entity: entity, attribute: attribute)
    }

    private func entityIndex(_ name: String) throws(SchemaError) -> Int {
        guard let i = entities.firstIndex(where: { $0.name == name }) else { throw error(.unknownEntity, entity: name) }
        return i
    }

    // MARK: - Configurations

    /// Declares a configuration (a store file), initially empty.
    public mutating func addConfiguration(_ name: String) throws(SchemaError) {
        guard name != Configuration.defaultName else { throw error(.reservedConfiguration) }
        guard Names.isValid(name) else { throw error(.invalidName(name)) }
        if !configurations.contains(where: { $0.name == name }) { configurations.append((name, [])) }
    }

    /// Removes a configuration. Its entities must be moved or removed before the version is built.
    public mutating func removeConfiguration(_ name: String) throws(SchemaError) {
        guard configurations.contains(where: { $0.name == name }) else { throw error(.configurationNotDeclared(name)) }
        configurations.removeAll { $0.name == name }
    }

    /// Moves an entity to another configuration: in a store, a change to two files.
    public mutating func moveEntity(_ name: String, to configuration: String) throws(SchemaError) {
        _ = try entityIndex(name)
        guard let target = configurations.firstIndex(where: { $0.name == configuration }) else {
            throw error(.configurationNotDeclared(configuration), entity: name)
        }
        for i in configurations.indices { configurations[i].entities.removeAll { $0 == name } }
        configurations[target].entities.append(name)
    }

    // MARK: - Entities

    /// Adds a new entity to configuration `configuration`.
    public mutating func addEntity(_ entity: Entity, in configuration: String) throws(SchemaError) {
        guard !entities.contains(where: { $0.name == entity.name }) else { throw error(.duplicateEntity, entity: entity.name) }
        guard let c = configurations.firstIndex(where: { $0.name == configuration }) else {
            throw error(.configurationNotDeclared(configuration), entity: entity.name)
        }
        entities.append(entity)
        configurations[c].entities.append(entity.name)
    }

    /// `addEntity` for a decoder that has made sure no name comes twice: without the search
    /// through every entity so far, which made reading a model of thousands quadratic.
    mutating func appendDecodedEntity(_ entity: Entity, in configuration: String) throws(SchemaError) {
        guard let c = configurations.firstIndex(where: { $0.name == configuration }) else {
            throw error(.configurationNotDeclared(configuration), entity: entity.name)
        }
        entities.append(entity)
        configurations[c].entities.append(entity.name)
    }

    /// Removes an entity and its rows.
    public mutating func removeEntity(_ name: String) throws(SchemaError) {
        let i = try entityIndex(name)
        removals.insert(entities[i].renamingIdentifier ?? name)
        entities.remove(at: i)
        for c in configurations.indices { configurations[c].entities.removeAll { $0 == name } }
    }

    /// Renames an entity; its rows are kept (the new entity's renaming identifier is the old name).
    public mutating func renameEntity(_ name: String, to newName: String) throws(SchemaError) {
        let i = try entityIndex(name)
        guard !entities.contains(where: { $0.name == newName }) else { throw error(.renameTargetExists(newName), entity: name) }
        entities[i].renamingIdentifier = entities[i].renamingIdentifier ?? name
        entities[i].name = newName
        for c in configurations.indices {
            configurations[c].entities = configurations[c].entities.map { $0 == name ? newName : $0 }
        }
        for e in entities.indices {
            for l in entities[e].links.indices where entities[e].links[l].target == name {
                entities[e].links[l].target = newName
            }
        }
    }

    /// Changes an existing entity.
    public mutating func modify(_ name: String, _ body: (inout EntityEditor) throws(SchemaError) -> Void) throws(SchemaError) {
        let i = try entityIndex(name)
        var editor = EntityEditor(
            entity: entities[i],
            existedBefore: previousEntities.contains(entities[i].renamingIdentifier ?? name),
            draft: self
        )
        try body(&editor)
        entities[i] = editor.entity
        let previousName = entities[i].renamingIdentifier ?? name
        for attribute in editor.removed { removals.insert("\(previousName).\(attribute)") }
    }

    /// Declares code that runs on each row of `stage.entity` when a store crosses this version.
    public mutating func addStage(_ stage: CustomStage) throws(SchemaError) {
        guard !customStages.contains(where: { $0.name == stage.name }) else {
            throw error(.duplicateStageName(stage.name), entity: stage.entity)
        }
        _ = try entityIndex(stage.entity)
        customStages.append(stage)
    }
}

/// Changes to one entity inside a `ModelDraft`.
public struct EntityEditor: Sendable {
    public internal(set) var entity: Entity
    /// Attributes removed on purpose, by their name in the previous version.
    public private(set) var removed: [String] = []
    let existedBefore: Bool
    let model: String
    let version: Int

    init(entity: Entity, existedBefore: Bool, draft: ModelDraft) {
        self.entity = entity
        self.existedBefore = existedBefore
        self.model = draft.model
        self.version = draft.version
    }

    func error(_ kind: SchemaError.Kind, attribute: String? = nil) -> SchemaError {
        SchemaError(kind, model: model, version: version, entity: entity.name, attribute: attribute)
    }

    private func index(of name: String) throws(SchemaError) -> Int {
        guard let i = entity.attributes.firstIndex(where: { $0.name == name }) else {
            throw error(.unknownAttribute, attribute: name)
        }
        return i
    }

    /// Adds an attribute. A required one needs a default, so that existing rows get a value.
    public mutating func add(_ attribute: Attribute) throws(SchemaError) {
        guard entity.attribute(attribute.name) == nil else { throw error(.duplicateAttribute, attribute: attribute.name) }
        if existedBefore, !attribute.isOptional, attribute.defaultValue == nil {
            throw error(.requiredAddedWithoutDefault, attribute: attribute.name)
        }
        entity.attributes.append(attribute)
    }

    /// Removes an attribute, with any index, constraint or link that uses it.
    public mutating func remove(_ name: String) throws(SchemaError) {
        let i = try index(of: name)
        if existedBefore { removed.append(entity.attributes[i].renamingIdentifier ?? name) }
        entity.attributes.remove(at: i)
        entity.indexes.removeAll { $0.attributes.contains(name) }
        entity.uniqueConstraints.removeAll { $0.attributes.contains(name) }
        entity.links.removeAll { $0.attribute == name }
    }

    /// Renames an attribute; values are kept.
    public mutating func rename(_ name: String, to newName: String) throws(SchemaError) {
        let i = try index(of: name)
        guard entity.attribute(newName) == nil else { throw error(.renameTargetExists(newName), attribute: name) }
        entity.attributes[i].renamingIdentifier = entity.attributes[i].renamingIdentifier ?? name
        entity.attributes[i].name = newName
        func swap(_ list: [String]) -> [String] { list.map { $0 == name ? newName : $0 } }
        for j in entity.indexes.indices { entity.indexes[j].attributes = swap(entity.indexes[j].attributes) }
        for j in entity.uniqueConstraints.indices {
            entity.uniqueConstraints[j].attributes = swap(entity.uniqueConstraints[j].attributes)
        }
        for j in entity.links.indices where entity.links[j].attribute == name { entity.links[j].attribute = newName }
    }

    /// Makes an attribute optional, or required with a default that fills existing nils.
    public mutating func setOptional(_ name: String, _ optional: Bool, default value: AttributeValue? = nil) throws(SchemaError) {
        let i = try index(of: name)
        if let value { entity.attributes[i].defaultValue = value }
        if !optional, entity.attributes[i].isOptional, entity.attributes[i].defaultValue == nil {
            throw error(.requiredAddedWithoutDefault, attribute: name)
        }
        entity.attributes[i].isOptional = optional
    }

    /// Sets or clears an attribute's default.
    public mutating func setDefault(_ name: String, _ value: AttributeValue?) throws(SchemaError) {
        let i = try index(of: name)
        entity.attributes[i].defaultValue = value
    }

    /// Changes an attribute's version-hash modifier: a change of meaning with no change of shape.
    public mutating func setVersionHashModifier(_ name: String, _ modifier: String?) throws(SchemaError) {
        let i = try index(of: name)
        entity.attributes[i].versionHashModifier = modifier
    }

    /// Sets or clears an attribute's transformer (`.encrypted`: sealed on its way to the sync
    /// server). The values stay as they are in the store: a migration changes no row.
    public mutating func setTransformer(_ name: String, _ transformer: Attribute.Transformer?) throws(SchemaError) {
        let i = try index(of: name)
        entity.attributes[i].transformer = transformer
    }

    public mutating func addIndex(_ index: Index) throws(SchemaError) {
        try checkAttributes(index.attributes)
        guard !entity.indexes.contains(index) else { throw error(.duplicateIndex(index.attributes)) }
        entity.indexes.append(index)
    }

    public mutating func removeIndex(_ index: Index) throws(SchemaError) {
        guard entity.indexes.contains(index) else { throw error(.unknownIndex(index.attributes)) }
        entity.indexes.removeAll { $0 == index }
    }

    public mutating func addUnique(_ constraint: UniqueConstraint) throws(SchemaError) {
        try checkAttributes(constraint.attributes)
        guard !entity.uniqueConstraints.contains(constraint) else { throw error(.duplicateIndex(constraint.attributes)) }
        entity.uniqueConstraints.append(constraint)
    }

    public mutating func removeUnique(_ constraint: UniqueConstraint) throws(SchemaError) {
        guard entity.uniqueConstraints.contains(constraint) else { throw error(.unknownConstraint(constraint.attributes)) }
        entity.uniqueConstraints.removeAll { $0 == constraint }
    }

    public mutating func addLink(_ link: Link) throws(SchemaError) {
        _ = try index(of: link.attribute)
        guard entity.link(on: link.attribute) == nil else { throw error(.duplicateLink, attribute: link.attribute) }
        entity.links.append(link)
    }

    public mutating func removeLink(on attribute: String) throws(SchemaError) {
        guard entity.link(on: attribute) != nil else { throw error(.unknownAttribute, attribute: attribute) }
        entity.links.removeAll { $0.attribute == attribute }
    }

    private func checkAttributes(_ names: [String]) throws(SchemaError) {
        guard !names.isEmpty else { throw error(.emptyIndex) }
        for n in names where entity.attribute(n) == nil { throw error(.unknownAttribute, attribute: n) }
    }
}

/// The rule for entity, attribute and configuration names: they become SQL identifiers.
public enum Names {
    /// Letters, digits and `_`, not starting with a digit, at most 64 bytes, and not in the
    /// `seam_` namespace that store metadata uses.
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 64 else { return false }
        if name.lowercased().hasPrefix("seam_") || name.lowercased().hasPrefix("sqlite_") { return false }
        for (i, b) in bytes.enumerated() {
            let letter = (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == UInt8(ascii: "_")
            let digit = b >= 0x30 && b <= 0x39
            if !(letter || (digit && i > 0)) { return false }
        }
        return true
    }
}
