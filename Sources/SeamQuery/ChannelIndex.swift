import SeamSchema

/// Finds, among many predicates over one entity, those a changed row can affect, without
/// testing them all.
///
/// Each registered predicate is indexed by the values it pins (see `Pin`): `timerUUID == X`
/// is filed under (timerUUID, X). A changed row looks up its old and its new value of every
/// pinned attribute, so deciding costs one hash lookup per pinned attribute and row version,
/// plus the predicates that pin nothing (the scan list), plus the candidates found — not the
/// number registered. Matching the old row catches rows that leave a result.
///
/// Generic over the caller's channel identifier. A value type; not thread-safe to mutate.
public struct ChannelIndex<ID: Hashable & Sendable>: Sendable {
    /// A registered predicate that the change affects.
    public struct Match: Sendable, Hashable {
        public var id: ID
        /// Whether the old row matched (it was in the channel's result).
        public var wasIncluded: Bool
        /// Whether the new row matches (it is in the channel's result now).
        public var isIncluded: Bool

        public init(id: ID, wasIncluded: Bool, isIncluded: Bool) {
            self.id = id
            self.wasIncluded = wasIncluded
            self.isIncluded = isIncluded
        }
    }

    /// The entity every registered predicate is checked against.
    public let entity: Entity
    @usableFromInline var engine = PinIndex()
    private var slots: [ID: Int] = [:]
    /// The identifier in each slot. (`@usableFromInline` so that the deciding methods below
    /// specialise for the caller's `ID` instead of resolving generic metadata on every call.)
    @usableFromInline var ids: [ID?] = []

    public init(entity: Entity) {
        self.entity = entity
    }

    /// How many predicates are registered.
    public var count: Int { slots.count }

    /// How many registered predicates pin nothing and are tested for every change.
    public var scanCount: Int { engine.scanned.count }

    /// The predicate registered under `id`.
    public func predicate(for id: ID) -> CheckedPredicate? {
        slots[id].flatMap(engine.predicate(at:))
    }

    /// Whether the predicate under `id` is found by its pinned values (rather than scanned).
    public func isIndexed(_ id: ID) -> Bool {
        slots[id].map { !engine.scanned.contains($0) } ?? false
    }

    // MARK: - Registering

    /// Registers `predicate` under `id`, replacing what was registered under it.
    ///
    /// Throws `entityMismatch` when the predicate was checked against another entity (or
    /// another version of it). Cost: O(pins), plus O(predicates sharing a pin) to replace.
    public mutating func register(_ id: ID, _ predicate: CheckedPredicate) throws(QueryError) {
        guard predicate.entity == entity else {
            throw QueryError(
                .entityMismatch, at: 0,
                "the predicate was checked against \(predicate.entity.name), this index holds \(entity.name)")
        }
        unregister(id)
        let slot = engine.insert(predicate)
        if slot == ids.count { ids.append(id) } else { ids[slot] = id }
        slots[id] = slot
    }

    /// Removes the predicate under `id` and returns it (`nil` when there was none).
    ///
    /// Cost: O(pins × predicates sharing each pin).
    @discardableResult
    public mutating func unregister(_ id: ID) -> CheckedPredicate? {
        guard let slot = slots.removeValue(forKey: id) else { return nil }
        let predicate = engine.predicate(at: slot)
        engine.remove(slot)
        ids[slot] = nil
        return predicate
    }

    // MARK: - Deciding

    /// The predicates a change can affect: those whose pins match the old or the new row, and
    /// every scanned predicate. A superset of the affected ones; `affected` tests them.
    ///
    /// `old` is nil for an insert, `new` for a delete. In registration-slot order, each once.
    @inlinable
    public func candidates(old: [String: AttributeValue]?, new: [String: AttributeValue]?) -> [ID] {
        engine.candidates(old: old, new: new).compactMap { ids[$0] }
    }

    /// The predicates that match the old row or the new row, each with both answers.
    ///
    /// A channel whose predicate matched neither is not affected; one that matched only the
    /// old row loses the row; only the new, gains it; both, sees it change (or move).
    @inlinable
    public func affected(old: [String: AttributeValue]?, new: [String: AttributeValue]?) -> [Match] {
        engine.affected(old: old, new: new).compactMap { hit in
            ids[hit.slot].map { Match(id: $0, wasIncluded: hit.was, isIncluded: hit.now) }
        }
    }
}
