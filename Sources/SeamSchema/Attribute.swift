/// One column of an entity.
///
/// What is hashed: name, type, optionality, default, `transformer` and `versionHashModifier`.
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
    /// How the value is changed where it leaves the machine: `encrypted` (the only one) seals it
    /// before sync sends it, so the server holds ciphertext; the store keeps it in clear.
    public var transformer: Transformer?
    public var documentation: String?

    /// What may be done to an attribute's value on its way out (`Protocol/schema.md`).
    public enum Transformer: String, Sendable, Hashable, CaseIterable {
        /// Sealed by the sync worker with the zone's key (XChaCha20-Poly1305; `Protocol/sync.md`).
        case encrypted
    }

    public init(
        _ name: String,
        _ type: AttributeType,
        optional: Bool = false,
        default defaultValue: AttributeValue? = nil,
        renamingIdentifier: String? = nil,
        versionHashModifier: String? = nil,
        transformer: Transformer? = nil,
        documentation: String? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = defaultValue
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.transformer = transformer
        self.documentation = documentation
    }
}
