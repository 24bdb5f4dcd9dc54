// The broker as the host of its parts: what `ConnectionTable` and `Supervisor` ask of it, in
// one place. (`JobHost` and `ReplySink` are in `Broker+Stores`; the other parts' hosts are
// `CallHandler` — `WriteGate`, `SteppedSaves` —, `ReadsOffLoop` — `Subscribers` — and
// `TurnScheduler` — `SavePath`.)

import SeamProtocol
import SeamSystem

/// What the broker does for its `ConnectionTable`: each to the part whose work it is.
extension Broker: ConnectionHost {
    func schedule(_ c: Connection) { turns.schedule(c) }

    func processFrames(_ c: Connection, budget: Int, until deadline: Double) { calls.processFrames(c, budget: budget, until: deadline) }

    func startResync(_ c: Connection) { subscribers.startResync(c) }

    func connectionClosed(_ c: Connection) {
        turns.remove(c)
        for s in Array(c.subscriptions.values) { subscriptions.remove(s) }
    }

    /// Whether output must wait: saves applied and not committed, or committed and not yet on the disk.
    var mustHoldOutput: Bool { saves.mustHoldOutput }

    /// Holds `c`'s queued output until the round's saves are committed and on the disk.
    func holdForSync(_ c: Connection) { saves.holdForSync(c) }
}

/// What the broker does for its `Supervisor`: serves each role's socket as a connection that
/// already holds the role, handles what an ended role sent, and hears of one-shot workers.
extension Broker: SupervisorHost {
    func connect(role p: SupervisedProcess, fd: Int32, peer: PeerCredentials) -> Connection {
        let c = connections.register(fd, peer: peer)
        c.supervisedAs = p.spec.name
        // A built-in role may touch everything; a plugin, what its Hello declares; the metrics
        // role, which reads only seamd's own figures, nothing.
        let touchesNothing = p.spec.role == "plugin" || p.spec.role == SupervisorConfiguration.metricsRole
        c.hello = Connection.Hello(version: Interfaces.protocolVersions.max() ?? 1, role: p.spec.role, name: p.spec.pluginName,
                                   author: p.spec.author, capabilities: touchesNothing ? .nothing : .everything,
                                   workerOwned: calls.workerOwned)
        return c
    }

    /// Handles what an ended role sent before it ended, then closes its connection. Its writes
    /// returned, so its calls are in the socket: a role that saves (one-way, say) and exits at
    /// once must not lose them. Nobody reads the replies. Bounded, against a process the role
    /// left behind that keeps writing (its group was told to stop).
    func roleEnded(_ c: Connection) {
        // Its calls that waited for the role to read its replies are handled, then what is
        // still in the socket, then it closes unless a call waits (for a reader, for the
        // stores' checks): the rest are handled after it (`resumeAfterRead`, `collectChecks`).
        let actions = c.life.handle(.roleEnded)
        connections.perform(actions.subtracting(.closeUnlessCallOut), for: c)
        guard actions.contains(.closeUnlessCallOut) else { return }
        var reads = 0
        while reads < 4096, !c.hasCallOut, connections.read(c) {
            reads += 1
            calls.processFrames(c)
        }
        connections.closeUnlessCallOut(c)
    }

    func oneShotEnded(_ p: SupervisedProcess, _ how: String) {
        if p.spec.role == SupervisorConfiguration.defaultMigrator.role { migrations.workerEnded(p, how) }
    }
}
