import SeamProtocol
import SeamSystem

/// Fair turns (issue: one client cannot take the broker): the calls a connection sends are read
/// as they come, and handled in turns — a few per connection (`BrokerLimits.callsPerTurn`, and
/// no call begun after `turnSeconds`), the built-in roles' first, then the others by the loop
/// time they have had (`TurnQueue`) — so that a client that pipelines thousands of calls, or big
/// saves, does not hold everyone else's for their whole length.
extension Broker {
    /// Starts taking turns on the loop.
    func takeTurns() {
        loop.inTurns(pending: { [unowned self] in !runnable.isEmpty || steps.mayRun }, run: { [unowned self] in runTurns() })
        loop.atEndOfRound { [unowned self] in saves.releaseHeld() }
    }

    /// Queues `c` for a turn when it has calls read and nothing holds them (a read it waits
    /// for, a full outbox, the stores' checks).
    func schedule(_ c: Connection) {
        guard !c.closed, !c.awaitingRead, c.parked == nil, !c.callsPaused, c.decoder.hasCompleteFrame() else { return }
        runnable.add(Int(c.fd), urgent: isRole(c))
    }

    /// Whether `c` is one of the built-in roles seamd started (the ticker, the migration and
    /// sync workers): their calls go first.
    func isRole(_ c: Connection) -> Bool {
        c.supervisedAs != nil && c.hello?.role != "plugin"
    }

    /// The loop time one connection's turn may take before its next call waits for the others'
    /// turns (a call begun is finished: a big save ends a turn by itself).
    static let turnSeconds = 0.002

    /// One round: every connection queued now has a turn, in order.
    func runTurns() {
        // The saves of the round are committed together (`SavePath`).
        saves.beginGroup()
        defer { saves.endGroup() }
        var left = runnable.count
        while left > 0, let fd = runnable.next() {
            left -= 1
            guard let c = connections[Int32(fd)] else { continue }
            let began = WallClock.monotonic()
            turn = (c, left == 0)
            defer { turn = nil }
            processFrames(c, budget: configuration.limits.callsPerTurn, until: began + Self.turnSeconds)
            let ended = WallClock.monotonic()
            runnable.charge(fd, seconds: ended - began)
            steps.noteActivity(of: c, at: ended)
            schedule(c)  // more left: behind the others
            if c.readClosed { connections.closeIfFinished(c) }
        }
        // A big save in steps has a turn like any connection's (`SteppedSaves`).
        if steps.mayRun { steps.takeTurn(seconds: SteppedSaves.stepSeconds) }
    }
}

extension Broker {
    /// Whether the broker has nothing left to do until a client or the clock moves: no turn
    /// queued, no read, commit or save in steps running, no store check or held write pending.
    var isResting: Bool {
        runnable.count == 0 && offLoop.isEmpty && steps.running == nil && !steps.committing && writeGate.isEmpty
            && saves.heldForSync.isEmpty && maintenance.job == nil
    }

    /// What is wrong with the broker's connections while it rests (`isResting`), and with how
    /// it files them: empty when every one is where it may rest.
    func restingProblems() -> [String] {
        var problems: [String] = []
        for (fd, c) in connections.byDescriptor {
            if c.fd != fd { problems.append("\(c.label) filed under fd \(fd)") }
            problems += c.restingProblems(limits: outboxLimits)
            if c.calls == 0, clock.monotonic - c.connectedAt > configuration.handshakeTimeout + 1 {
                problems.append("\(c.label) has sent nothing for \(clock.monotonic - c.connectedAt) s, past the handshake timeout")
            }
            if c.subscriptions.count > Limits.maxSubscriptionsPerConnection { problems.append("\(c.label) holds \(c.subscriptions.count) subscriptions") }
        }
        let held = connections.values.reduce(0) { $0 + $1.subscriptions.count }
        if held != subscriptions.count { problems.append("\(held) subscriptions held by connections, \(subscriptions.count) registered") }
        return problems
    }
}
