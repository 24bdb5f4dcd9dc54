/// A named subset of a model's entities, mapped to one store file.
///
/// `Cloud` and `Local` are files; `Default` is implicit, holds every entity and is used for
/// the in-memory store of tests and previews.
public struct Configuration: Sendable, Hashable {
    public var name: String
    public var entities: [String]

    public init(_ name: String, entities: [String]) {
        self.name = name
        self.entities = entities
    }

    /// The implicit configuration that holds every entity of a model.
    public static let defaultName = "Default"
}
