/// A kind of row: a table in its store file.
///
/// Every entity has a required `uuid` attribute of type uuid; rows are addressed by it.
public struct Entity: Sendable, Hashable {
    public var name: String
    public var attributes: [Attribute]
    public var indexes: [Index]
    public var uniqueConstraints: [UniqueConstraint]
    public var links: [Link]
    /// The name this entity had in the previous version, when it was renamed.
    public var renamingIdentifier: String?
    public var versionHashModifier: String?
    public var documentation: String?

    public init(
        _ name: String,
        attributes: [Attribute],
        indexes: [Index] = [],
        unique: [UniqueConstraint] = [],
        links: [Link] = [],
        renamingIdentifier: String? = nil,
        versionHashModifier: String? = nil,
        documentation: String? = nil
    ) {
        self.name = name
        self.attributes = attributes
        self.indexes = indexes
        self.uniqueConstraints = unique
        self.links = links
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.documentation = documentation
    }

    /// The attribute called `name`, if any.
    public func attribute(_ name: String) -> Attribute? {
        attributes.first { $0.name == name }
    }

    /// Each attribute's type by its name: built once by a caller that looks up many values'.
    public var attributeTypes: [String: AttributeType] {
        Dictionary(attributes.map { ($0.name, $0.type) }, uniquingKeysWith: { a, _ in a })
    }

    /// The link declared on attribute `name`, if any.
    public func link(on attribute: String) -> Link? {
        links.first { $0.attribute == attribute }
    }

    /// The attribute every entity is addressed by.
    public static let identity = "uuid"
}

extension Entity {
    /// The name a store gives the index of `attributes` (a unique constraint's when `unique`).
    /// Validation checks that no two of a version's indexes, nor an index and an entity, share one.
    public static func indexName(_ entity: String, _ attributes: [String], unique: Bool) -> String {
        "\(entity)_\(unique ? "unique" : "idx")_\(attributes.joined(separator: "_"))"
    }
}
