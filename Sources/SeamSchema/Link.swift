/// What happens to linking rows when the row they point at is deleted.
public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
    /// Delete the linking rows too.
    case cascade
    /// Set the linking attribute to nil.
    case nullify
    /// Refuse the delete while linking rows exist.
    case deny
    /// Leave linking rows as they are (they dangle).
    case none
}

/// How a link is kept.
public enum LinkKind: String, Sendable, Hashable {
    /// A plain attribute holding the target's uuid; it may cross stores. The broker enforces the
    /// delete rule. This is the seam between stores.
    case value
    /// A store-level foreign key. Both entities must live in the same store.
    case relationship
}

/// A link from an attribute of one entity to the `uuid` of another.
///
/// `Session.timerUUID → Timer.uuid` is a value link with a cascade rule: deleting a timer deletes
/// its session, though the two live in different files.
public struct Link: Sendable, Hashable {
    /// The linking attribute, in the entity that declares the link.
    public var attribute: String
    /// The entity whose `uuid` the attribute holds.
    public var target: String
    public var deleteRule: DeleteRule
    public var kind: LinkKind

    public init(_ attribute: String, to target: String, onDelete deleteRule: DeleteRule, kind: LinkKind = .value) {
        self.attribute = attribute
        self.target = target
        self.deleteRule = deleteRule
        self.kind = kind
    }
}

/// An index over one or more attributes, in order.
public struct Index: Sendable, Hashable {
    public var attributes: [String]
    public init(_ attributes: [String]) { self.attributes = attributes }
    public init(_ attributes: String...) { self.attributes = attributes }
}

/// A uniqueness constraint over one or more attributes.
///
/// Rows whose constrained values include nil never conflict (SQL's rule), so a unique
/// `Session.timerUUID` allows any number of flash sessions and one session per timer.
public struct UniqueConstraint: Sendable, Hashable {
    public var attributes: [String]
    public init(_ attributes: [String]) { self.attributes = attributes }
    public init(_ attributes: String...) { self.attributes = attributes }
}
