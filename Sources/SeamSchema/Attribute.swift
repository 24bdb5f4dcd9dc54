/// One column of an entity.
///
/// What is hashed: name, type, optionality, default and `versionHashModifier`.
/// What is not: `renamingIdentifier` and `documentation`, which change neither shape nor meaning.
public struct Attribute: Sendable, Hashable {
    public var name: String
    public var type: AttributeType
    public var isOptional: Bool
    /// The value that existing and new rows get when none is given. `nil` means no default.
    public var defaultValue: AttributeValue?
    /// The name this attribute had in the previous version, when it was renamed.
    public var renamingIdentifier: String?
    /// Bumps the hash without changing the shape (for a change of meaning).
    public var versionHashModifier: String?
    public var documentation: String?

    public init(
        _ name: String,
        _ type: AttributeType,
        optional: Bool = false,
        default defaultValue: AttributeValue? = nil,
        renamingIdentifier: String? = nil,
        versionHashModifier: String? = nil,
        documentation: String? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = defaultValue
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.documentation = documentation
    }
}
