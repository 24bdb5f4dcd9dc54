import SeamQuery
import SeamSchema

/// What to read: an entity, an optional predicate, an order, a window, the attributes wanted.
public struct FetchRequest: Sendable {
    public var entity: String
    /// A predicate in Seam's language (`Protocol/predicates.md`), e.g. `timerUUID == $t`.
    public var predicate: String?
    public var parameters: [String: AttributeValue]
    /// Sort keys, e.g. `"sortOrder, name[c]"` or `"-startedAt"`; ties always break by uuid.
    public var sort: String?
    public var limit: Int?
    public var offset: Int?
    /// The attributes to return (`uuid` is always included); nil for all.
    public var attributes: [String]?

    public init(_ entity: String, where predicate: String? = nil, parameters: [String: AttributeValue] = [:],
                sort: String? = nil, limit: Int? = nil, offset: Int? = nil, attributes: [String]? = nil) {
        self.entity = entity
        self.predicate = predicate
        self.parameters = parameters
        self.sort = sort
        self.limit = limit
        self.offset = offset
        self.attributes = attributes
    }
}

/// Changes to make in one save: inserts, updates (only the attributes given), deletes.
public struct SaveRequest: Sendable {
    public enum Operation: Sendable {
        case insert(entity: String, values: [String: AttributeValue])
        case update(entity: String, uuid: String, values: [String: AttributeValue])
        case delete(entity: String, uuid: String)

        /// Its kind: insert, update or delete.
        public var kind: Kind {
            switch self {
            case .insert: .insert
            case .update: .update
            case .delete: .delete
            }
        }

        /// The entity it changes.
        public var entity: String {
            switch self {
            case .insert(let e, _), .update(let e, _, _), .delete(let e, _): e
            }
        }
    }

    public var operations: [Operation]
    /// When set, the save is refused (`ContextError.Kind.changedSince`) if a row it would change
    /// has a change in the persistent history after this sequence number: a writer that read
    /// the history up to there and decided from it (the sync worker's import) changes nothing
    /// it has not seen. The history holds the history configuration's changes by authors it
    /// does not ignore, so only those are checked; it must still reach back that far.
    public var unchangedSince: Int64?
    /// Set by a caller that made every value with `WireValues.decode` from a parsed message and
    /// checked every name against its entity (the broker): `json` values are then text its JSON
    /// encoder wrote — valid by construction — and are not parsed again, and names are not
    /// looked up again. Everything else about a value is checked as always.
    public var valuesChecked = false
    /// What the caller asked to hear back (the broker's `reply` parameter); the context does not
    /// read it.
    public var reply: Reply = .changes
    public init(_ operations: [Operation] = []) { self.operations = operations }

    /// A Save's reply: every change it made (the default), or how many (`count`: for a bulk
    /// loader or the sync worker, which never read the list and need not pay to have it written
    /// and parsed).
    public enum Reply: String, Sendable, CaseIterable {
        case changes, count
    }

    public mutating func insert(_ entity: String, _ values: [String: AttributeValue]) {
        operations.append(.insert(entity: entity, values: values))
    }
    public mutating func update(_ entity: String, _ uuid: String, _ values: [String: AttributeValue]) {
        operations.append(.update(entity: entity, uuid: uuid, values: values))
    }
    public mutating func delete(_ entity: String, _ uuid: String) {
        operations.append(.delete(entity: entity, uuid: uuid))
    }

    /// The three kinds of operation, in the order a save applies them, as a message lists them.
    public enum Kind: CaseIterable, Sendable {
        case insert, update, delete

        /// The key of the message's list of them (`inserts`, `updates`, `deletes`).
        public var listName: String {
            switch self {
            case .insert: "inserts"
            case .update: "updates"
            case .delete: "deletes"
            }
        }

        /// Whether an operation of this kind names its row (`uuid`) and carries `values`.
        public var namesRow: Bool { self != .insert }
        public var carriesValues: Bool { self != .delete }
    }

    /// Adds an operation of `kind`; false when it lacks the uuid its kind needs (nothing added).
    @discardableResult
    public mutating func add(_ kind: Kind, _ entity: String, uuid: String?, _ values: [String: AttributeValue]) -> Bool {
        switch kind {
        case .insert:
            insert(entity, values)
        case .update:
            guard let uuid else { return false }
            update(entity, uuid, values)
        case .delete:
            guard let uuid else { return false }
            delete(entity, uuid)
        }
        return true
    }
}
