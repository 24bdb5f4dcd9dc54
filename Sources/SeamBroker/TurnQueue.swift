/// The connections whose calls are read and not yet handled, in the order they get their turns:
/// the built-in roles' first (the ticker's alarms must not wait behind a plugin's flood), then
/// everyone else's round-robin. Each turn handles a few calls (`BrokerLimits.callsPerTurn`);
/// a connection with more is queued again, behind the others. Pure: keyed by connection number.
struct TurnQueue: Sendable {
    private var urgent: [Int] = []
    private var others: [Int] = []
    private var queued: Set<Int> = []

    var isEmpty: Bool { queued.isEmpty }
    var count: Int { queued.count }

    /// Queues `id` for a turn (once, however often it is added before its turn).
    mutating func add(_ id: Int, urgent isUrgent: Bool) {
        guard queued.insert(id).inserted else { return }
        if isUrgent { urgent.append(id) } else { others.append(id) }
    }

    /// The next connection to have its turn, taken off the queue.
    mutating func next() -> Int? {
        let id: Int
        if !urgent.isEmpty { id = urgent.removeFirst() } else if !others.isEmpty { id = others.removeFirst() } else { return nil }
        queued.remove(id)
        return id
    }

    /// Forgets `id` (its connection closed).
    mutating func remove(_ id: Int) {
        guard queued.remove(id) != nil else { return }
        urgent.removeAll { $0 == id }
        others.removeAll { $0 == id }
    }
}
