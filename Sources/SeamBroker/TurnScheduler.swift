import SeamProtocol
import SeamSystem

/// Fair turns (issue: one client cannot take the broker): the calls a connection sends are read
/// as they come, and handled in turns — a few per connection (`BrokerLimits.callsPerTurn`, and
/// no call begun after `turnSeconds`), the built-in roles' first, then the others by the loop
/// time they have had (`TurnQueue`) — so that a client that pipelines thousands of calls, or big
/// saves, does not hold everyone else's for their whole length. The saves of one round are
/// committed together (`SavePath`'s group commit).
final class TurnScheduler: SavePathHost {
    /// The loop time one connection's turn may take before its next call waits for the others'
    /// turns (a call begun is finished: a big save ends a turn by itself).
    static let turnSeconds = 0.002

    private let loop: EventLoop
    private let connections: ConnectionTable
    private let steps: SteppedSaves
    private let saves: SavePath
    private let callsPerTurn: Int
    /// Connections with calls read and not yet handled, in turn order.
    private var runnable = TurnQueue()
    /// The connection whose turn it is, and whether it is the round's last.
    private var turn: (connection: Connection, last: Bool)?
    /// Handles `c`'s calls, at most so many, none begun after a deadline (`CallHandler.processFrames`).
    var process: (_ c: Connection, _ budget: Int, _ deadline: Double) -> Void = { _, _, _ in }

    init(loop: EventLoop, connections: ConnectionTable, steps: SteppedSaves, saves: SavePath, callsPerTurn: Int) {
        self.loop = loop
        self.connections = connections
        self.steps = steps
        self.saves = saves
        self.callsPerTurn = callsPerTurn
    }

    /// Starts taking turns on the loop.
    func start() {
        loop.inTurns(pending: { [unowned self] in !runnable.isEmpty || steps.mayRun }, run: { [unowned self] in runTurns() })
        loop.atEndOfRound { [unowned self] in saves.releaseHeld() }
    }

    /// Connections queued for a turn.
    var queued: Int { runnable.count }

    /// Queues `c` for a turn when it has calls read and nothing holds them (a read it waits
    /// for, a full outbox, the stores' checks).
    func schedule(_ c: Connection) {
        guard !c.closed, !c.awaitingRead, c.parked == nil, !c.callsPaused, c.decoder.hasCompleteFrame() else { return }
        runnable.add(Int(c.fd), urgent: Self.isRole(c))
    }

    /// Charges `c` with loop time spent for it outside its turns (a save in steps' step).
    func charge(_ c: Connection, seconds: Double) { runnable.charge(Int(c.fd), seconds: seconds) }

    /// `c` has closed: it has no more turns.
    func remove(_ c: Connection) { runnable.remove(Int(c.fd)) }

    /// Whether `c` is one of the built-in roles seamd started (the ticker, the migration and
    /// sync workers): their calls go first.
    static func isRole(_ c: Connection) -> Bool {
        c.supervisedAs != nil && c.hello?.role != "plugin"
    }

    /// Whether the save being handled is the last the round's group can take: the round's last
    /// turn, with no call after it read from its connection.
    var isLastSaveOfRound: Bool {
        guard let turn else { return false }
        return turn.last && !turn.connection.decoder.hasCompleteFrame()
    }

    /// One round: every connection queued now has a turn, in order.
    private func runTurns() {
        saves.beginGroup()
        defer { saves.endGroup() }
        var left = runnable.count
        while left > 0, let fd = runnable.next() {
            left -= 1
            guard let c = connections[Int32(fd)] else { continue }
            let began = WallClock.monotonic()
            turn = (c, left == 0)
            defer { turn = nil }
            process(c, callsPerTurn, began + Self.turnSeconds)
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
