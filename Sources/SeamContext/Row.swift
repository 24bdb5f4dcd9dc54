import SeamSchema

/// One row of an entity: attribute names to typed values. Rows are addressed by `uuid`.
public struct Row: Sendable, Hashable, CustomStringConvertible {
    public var entity: String
    public var values: [String: AttributeValue]

    public init(entity: String, values: [String: AttributeValue]) {
        self.entity = entity
        self.values = values
    }

    /// The row's uuid (empty when the values have none).
    public var uuid: String { values[Entity.identity]?.stringValue ?? "" }

    public subscript(attribute: String) -> AttributeValue { values[attribute] ?? .null }

    public var description: String {
        "\(entity)(" + values.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
    }
}
