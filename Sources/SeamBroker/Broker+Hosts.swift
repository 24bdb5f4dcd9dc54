// The broker as the host of its parts: what each part (`ConnectionTable`, `WriteGate`,
// `Supervisor`) asks of it, in one place. (`JobHost` and `ReplySink` are in `Broker+Stores`;
// `SteppedSavesHost` in `Broker+Steps`.)

import SeamProtocol
import SeamSystem

/// What the broker does for its `ConnectionTable` (the rest of `ConnectionHost` — `schedule`,
/// `processFrames`, `startResync`, `mustHoldOutput`, `holdForSync` — is where its work is).
extension Broker: ConnectionHost {
    func startResync(_ c: Connection) { subscribers.startResync(c) }

    func connectionClosed(_ c: Connection) {
        runnable.remove(Int(c.fd))
        for s in Array(c.subscriptions.values) { subscriptions.remove(s) }
    }
}

/// What the broker does for its `WriteGate`: a parked call is handled when its store lets it.
extension Broker: WriteGateHost {
    func resume(_ c: Connection, _ frame: ArraySlice<UInt8>, laterCalls: WriteGate.LaterCalls) {
        handleFrame(frame, from: c)
        if laterCalls == .now { processFrames(c) }
        connections.flush(c)
        if laterCalls == .inTurns { schedule(c) }  // with everyone else's
        connections.closeIfFinished(c)
    }
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
                                   workerOwned: workerOwned)
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
            processFrames(c)
        }
        connections.closeUnlessCallOut(c)
    }

    func oneShotEnded(_ p: SupervisedProcess, _ how: String) {
        if p.spec.role == SupervisorConfiguration.defaultMigrator.role { migrations.workerEnded(p, how) }
    }
}

/// What the broker does for its `Subscribers`: runs their reads (`Broker+Reads`), and lets a
/// connection whose first reply came go on with its calls.
extension Broker: SubscribersHost {}
