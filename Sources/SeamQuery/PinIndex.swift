import SeamSchema

/// The engine behind `ChannelIndex`: predicates in numbered slots, filed under their pins.
///
/// Not generic, so that the lookups on the hot path are compiled for their concrete types;
/// `ChannelIndex` maps its callers' identifiers to slots around it.
@usableFromInline
struct PinIndex: Sendable {
    private var predicates: [CheckedPredicate?] = []
    private var pinsBySlot: [[Pin]?] = []
    private var freeSlots: [Int] = []
    private var postings: [Pin.Field: [IndexKey: Posting]] = [:]
    /// Slots of predicates that pin nothing, ascending.
    private(set) var scanned: [Int] = []

    @usableFromInline init() {}

    func predicate(at slot: Int) -> CheckedPredicate? { predicates[slot] }

    /// Files `predicate` and returns its slot. Cost: O(pins).
    mutating func insert(_ predicate: CheckedPredicate) -> Int {
        let slot = freeSlots.popLast() ?? appendSlot()
        let pins = Pin.pins(of: predicate.root)
        predicates[slot] = predicate
        pinsBySlot[slot] = pins
        if let pins {
            for pin in pins { postings[pin.field, default: [:]][pin.key, default: .none].add(slot) }
        } else {
            scanned.insert(slot, at: scanned.firstIndex { $0 > slot } ?? scanned.count)
        }
        return slot
    }

    private mutating func appendSlot() -> Int {
        predicates.append(nil)
        pinsBySlot.append(nil)
        return predicates.count - 1
    }

    /// Removes the predicate in `slot`. Cost: O(pins × predicates sharing each pin).
    mutating func remove(_ slot: Int) {
        if let pins = pinsBySlot[slot] {
            for pin in pins { removePosting(slot, pin) }
        } else if let i = scanned.firstIndex(of: slot) {
            scanned.remove(at: i)
        }
        predicates[slot] = nil
        pinsBySlot[slot] = nil
        freeSlots.append(slot)
    }

    /// Mutates the postings in place: copying a field's dictionary out would copy all of it
    /// (it is still referenced), making each removal cost every predicate on that field.
    private mutating func removePosting(_ slot: Int, _ pin: Pin) {
        postings[pin.field]?[pin.key]?.remove(slot)
        if postings[pin.field]?[pin.key]?.isEmpty == true { postings[pin.field]?[pin.key] = nil }
        if postings[pin.field]?.isEmpty == true { postings[pin.field] = nil }
    }

    /// Slots whose pins match `old` or `new`, and every scanned slot: ascending, each once.
    ///
    /// Cost: two hash lookups per pinned attribute, plus the scanned and found slots.
    @usableFromInline
    func candidates(old: [String: AttributeValue]?, new: [String: AttributeValue]?) -> [Int] {
        var found: [Int] = []
        for (field, byKey) in postings {
            let oldKey = old.map(field.key(in:))
            if let oldKey { byKey[oldKey]?.append(to: &found) }
            if let newKey = new.map(field.key(in:)), newKey != oldKey { byKey[newKey]?.append(to: &found) }
        }
        if found.isEmpty { return scanned }
        found += scanned
        found.sort()
        var unique: [Int] = []
        unique.reserveCapacity(found.count)
        for slot in found where slot != unique.last { unique.append(slot) }
        return unique
    }

    /// The candidate slots whose predicate matches `old` or `new`, with both answers.
    @usableFromInline
    func affected(old: [String: AttributeValue]?, new: [String: AttributeValue]?) -> [(slot: Int, was: Bool, now: Bool)]
    {
        var out: [(slot: Int, was: Bool, now: Bool)] = []
        for slot in candidates(old: old, new: new) {
            guard let predicate = predicates[slot] else { continue }
            let was = old.map(predicate.matches) ?? false
            let now = new.map(predicate.matches) ?? false
            if was || now { out.append((slot, was, now)) }
        }
        return out
    }
}

/// The slots filed under one key. Most keys pin one predicate, so one slot is held inline and
/// only a shared key allocates an array.
enum Posting: Sendable {
    case none
    case one(Int)
    case many([Int])

    var isEmpty: Bool {
        if case .none = self { return true }
        return false
    }

    mutating func add(_ slot: Int) {
        switch self {
        case .none: self = .one(slot)
        case .one(let first): self = .many([first, slot])
        case .many(var slots):
            self = .none  // lets `slots` be uniquely referenced while it grows
            slots.append(slot)
            self = .many(slots)
        }
    }

    /// Removes `slot`. Cost: O(slots under this key).
    mutating func remove(_ slot: Int) {
        switch self {
        case .one(slot): self = .none
        case .many(var slots):
            guard let i = slots.firstIndex(of: slot) else { return }
            self = .none
            slots.swapAt(i, slots.count - 1)
            slots.removeLast()
            self = slots.count == 1 ? .one(slots[0]) : .many(slots)
        default: return
        }
    }

    func append(to found: inout [Int]) {
        switch self {
        case .none: return
        case .one(let slot): found.append(slot)
        case .many(let slots): found += slots
        }
    }
}
