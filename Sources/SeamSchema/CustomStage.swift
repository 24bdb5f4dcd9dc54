/// A row as a custom migration stage sees it: attribute names to typed values.
public struct RowSnapshot: Sendable, Hashable {
    public var values: [String: AttributeValue]

    public init(_ values: [String: AttributeValue] = [:]) { self.values = values }

    /// The value of `attribute`, `.null` when absent.
    public subscript(attribute: String) -> AttributeValue {
        get { values[attribute] ?? .null }
        set { values[attribute] = newValue }
    }
}

/// Code that runs during a migration, once per row of one entity, after the inferred mapping.
///
/// `old` is the row as the store held it, under the attribute names of the store's version;
/// `new` is the row the inferred mapping produced for the target version, which the stage may
/// change. A stage is declared on the version that introduces it and runs whenever a store
/// crosses that version, however many versions it skips.
public struct CustomStage: Sendable {
    public typealias Transform = @Sendable (_ old: RowSnapshot, _ new: inout RowSnapshot) throws -> Void

    public var name: String
    /// The entity (by its name in the version that declares the stage) whose rows the stage sees.
    public var entity: String
    public var transform: Transform

    public init(_ name: String, entity: String, transform: @escaping Transform) {
        self.name = name
        self.entity = entity
        self.transform = transform
    }
}

/// The error a custom stage throws to stop a migration with a reason.
public struct CustomStageError: Error, Sendable, CustomStringConvertible {
    public var stage: String
    public var message: String
    public init(stage: String, message: String) {
        self.stage = stage
        self.message = message
    }
    public var description: String { "custom stage \(stage): \(message)" }
}
