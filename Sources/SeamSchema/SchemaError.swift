/// A mistake in a schema definition, found when the model is built.
///
/// Carries where it is (model, version, entity, attribute) so the message points at the line to fix.
public struct SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case invalidName(String)
        case duplicateEntity
        case duplicateAttribute
        case unknownEntity
        case unknownAttribute
        case missingIdentity
        case requiredAddedWithoutDefault
        case defaultTypeMismatch(expected: AttributeType, found: AttributeType?)
        case requiredDefaultIsNull
        case invalidDefault(String)
        case linkToUnknownEntity(String)
        case linkAttributeNotUUID(AttributeType)
        case duplicateLink
        case relationshipAcrossConfigurations(source: String, target: String)
        case entityInNoConfiguration
        case entityInSeveralConfigurations([String])
        case reservedConfiguration
        case duplicateIndex([String])
        case emptyIndex
        case unknownIndex([String])
        case unknownConstraint([String])
        case renameTargetExists(String)
        case versionOutOfOrder(expected: Int)
        case emptyHistory
        case sameShapeAsVersion(Int)
        case duplicateStageName(String)
        case entityNameClash(otherModel: String)
        case configurationNotDeclared(String)
        case namesDifferOnlyInCase(String)
        case duplicateConstraint([String])
        case indexNameClash(String)
        case nullifyRequired
    }

    public var kind: Kind
    public var model: String
    public var version: Int?
    public var entity: String?
    public var attribute: String?

    public init(_ kind: Kind, model: String, version: Int? = nil, entity: String? = nil, attribute: String? = nil) {
        self.kind = kind
        self.model = model
        self.version = version
        self.entity = entity
        self.attribute = attribute
    }

    /// Where the mistake is, as "model Timers v3, entity Timer, attribute icon".
    public var location: String {
        var parts = ["model \(model)" + (version.map { " v\($0)" } ?? "")]
        if let entity { parts.append("entity \(entity)") }
        if let attribute { parts.append("attribute \(attribute)") }
        return parts.joined(separator: ", ")
    }

    public var problem: String {
        switch kind {
        case .invalidName(let name):
            return "'\(name)' is not a valid name (letters, digits and '_', not starting with a digit or 'seam_')"
        case .duplicateEntity: return "the entity is defined twice"
        case .duplicateAttribute: return "the attribute is defined twice"
        case .unknownEntity: return "no such entity in this version"
        case .unknownAttribute: return "no such attribute in this entity"
        case .missingIdentity: return "every entity needs a required attribute 'uuid' of type uuid"
        case .requiredAddedWithoutDefault:
            return "a required attribute added to an existing entity needs a default, or existing rows would have no value"
        case .defaultTypeMismatch(let expected, let found):
            return "the default is of type \(found?.rawValue ?? "nil") but the attribute is \(expected.rawValue)"
        case .requiredDefaultIsNull: return "a required attribute cannot default to nil"
        case .invalidDefault(let why): return "invalid default: \(why)"
        case .linkToUnknownEntity(let target): return "the link points at '\(target)', which is not an entity of this model"
        case .linkAttributeNotUUID(let type): return "a linking attribute must be of type uuid, not \(type.rawValue)"
        case .duplicateLink: return "the attribute carries two links"
        case .relationshipAcrossConfigurations(let source, let target):
            return "a store-level relationship from \(source) to \(target) crosses configurations; use a value link"
        case .entityInNoConfiguration: return "the entity is in no configuration, so no store would hold it"
        case .entityInSeveralConfigurations(let names):
            return "the entity is in several configurations (\(names.joined(separator: ", "))); an insert could not be routed"
        case .reservedConfiguration: return "'Default' is implicit and holds every entity; it cannot be declared"
        case .duplicateIndex(let attrs): return "the index (\(attrs.joined(separator: ", "))) is declared twice"
        case .emptyIndex: return "an index or unique constraint needs at least one attribute"
        case .unknownIndex(let attrs): return "no index (\(attrs.joined(separator: ", "))) to remove"
        case .unknownConstraint(let attrs): return "no unique constraint (\(attrs.joined(separator: ", "))) to remove"
        case .renameTargetExists(let name): return "cannot rename to '\(name)': that name is taken"
        case .versionOutOfOrder(let expected): return "version labels are consecutive integers from 1; expected \(expected)"
        case .emptyHistory: return "a model needs at least one version"
        case .sameShapeAsVersion(let other):
            return "this version has the same structural hash as version \(other); two labels would name one shape"
        case .duplicateStageName(let name): return "the custom stage '\(name)' is declared twice"
        case .entityNameClash(let other): return "the entity name is also used by model \(other) in the same store"
        case .configurationNotDeclared(let name): return "no configuration named '\(name)' in this version"
        case .namesDifferOnlyInCase(let other):
            return "the name differs from '\(other)' only in case; SQLite takes the two for one name"
        case .duplicateConstraint(let attrs): return "the unique constraint (\(attrs.joined(separator: ", "))) is declared twice"
        case .indexNameClash(let name):
            return "two indexes, or an index and an entity, would share the name '\(name)' in the store; rename an attribute"
        case .nullifyRequired:
            return "a nullify link needs an optional attribute: deleting the target sets it to nil"
        }
    }

    public var description: String { "\(location): \(problem)" }
}
