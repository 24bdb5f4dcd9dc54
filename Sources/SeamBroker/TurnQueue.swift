/// The connections whose calls are read and not yet handled, in the order they get their turns:
/// the built-in roles' first (the ticker's alarms must not wait behind a plugin's flood), then
/// everyone else by the loop time their turns have taken — the one that has had least goes next
/// (`charge`) — so that a client whose calls are long (1,000-row saves) has as much of the loop
/// as one whose calls are short, not a call for each of theirs. Each turn handles a few calls
/// (`BrokerLimits.callsPerTurn`, `TurnScheduler.turnSeconds`). Pure: keyed by connection number.
struct TurnQueue: Sendable {
    private var urgent: [Int] = []
    private var others: [Int] = []
    private var queued: Set<Int> = []
    /// Loop seconds each connection's turns have taken (roles are not counted).
    private var used: [Int: Double] = [:]
    /// The least a connection waiting now has had: one that comes back from being idle starts
    /// there, so that time spent idle is no credit to spend against the others.
    private var floor = 0.0

    var isEmpty: Bool { queued.isEmpty }
    var count: Int { queued.count }

    /// Queues `id` for a turn (once, however often it is added before its turn).
    mutating func add(_ id: Int, urgent isUrgent: Bool) {
        guard queued.insert(id).inserted else { return }
        if isUrgent {
            urgent.append(id)
            return
        }
        used[id] = max(used[id] ?? 0, floor)
        others.append(id)
    }

    /// The next connection to have its turn, taken off the queue: a role's, else the one that
    /// has had least of the loop (the first queued of those that had as little).
    mutating func next() -> Int? {
        if !urgent.isEmpty {
            let id = urgent.removeFirst()
            queued.remove(id)
            return id
        }
        guard !others.isEmpty else { return nil }
        var best = 0
        for i in others.indices.dropFirst() where (used[others[i]] ?? 0) < (used[others[best]] ?? 0) { best = i }
        let id = others.remove(at: best)
        queued.remove(id)
        floor = max(floor, used[id] ?? 0)
        return id
    }

    /// Counts `seconds` of the loop against `id`'s turns.
    mutating func charge(_ id: Int, seconds: Double) {
        guard let before = used[id] else { return }  // a role's, or one forgotten
        used[id] = before + seconds
    }

    /// Forgets `id` (its connection closed).
    mutating func remove(_ id: Int) {
        used[id] = nil
        guard queued.remove(id) != nil else { return }
        urgent.removeAll { $0 == id }
        others.removeAll { $0 == id }
    }
}
