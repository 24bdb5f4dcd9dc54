import SeamJSON
import SeamProtocol
import SeamSystem

/// One client connection and what the broker knows of it.
final class Connection {
    let fd: Int32
    let id: Int
    let peer: PeerCredentials
    let connectedAt: Double
    var decoder = FrameDecoder()
    var outbox = Outbox()
    /// Set by `Hello`; a connection without it is read-only.
    var hello: Hello?
    var calls = 0
    /// The role this connection was handed to when seamd started the process (its `RoleSpec.name`).
    var supervisedAs: String?
    var handshakeTimer: Int?
    /// Where it is in its life (`ConnectionLifecycle`); moved only by the broker's events.
    var life = ConnectionLifecycle()
    /// Calls of this connection answered later, from elsewhere (a `Migrate` with `more`, the
    /// worker's `Finished`, the sync worker's `Listen`, which lasts as long as the connection):
    /// a connection whose client closed its writing half stays for them.
    var repliesOwed = 0
    /// This connection's subscriptions, by subscription number.
    var subscriptions: [Int: Subscription] = [:]
    /// Set when one of its subscriptions stopped queueing diffs: a resync is owed once the
    /// outbox drains.
    var owesResync = false
    /// A resync of one of its subscriptions is being built (`Subscribers.startResync`): the next
    /// waits until this one is read.
    var resyncInFlight = false
    /// How long its reads took, on a moving average (`readLane`).
    var readAverage = 0.0
    /// A call of this connection runs on a reader (`ReadsOffLoop`): its later calls wait for its reply.
    var awaitingRead = false
    /// A call that writes, read while a store's check at open was running: it and the calls
    /// after it wait until the checks end (`WriteGate`).
    var parked: ArraySlice<UInt8>?

    struct Hello {
        var version: Int
        var role: String
        var name: String?
        /// What the broker records as the author of this connection's saves.
        var author: String
        /// What it may read and write.
        var capabilities = Capabilities.everything
        /// Whether the client declared them (else they are its role's defaults).
        var declared = false
        /// The sync worker's own entities (`SyncToken`, `SyncRecord`), which only the roles in
        /// `Hello.writesWorkerState` may write, whatever the capabilities say.
        var workerOwned: Set<String> = []
    }

    init(fd: Int32, id: Int, peer: PeerCredentials, now: Double) {
        self.fd = fd
        self.id = id
        self.peer = peer
        connectedAt = now
    }

    var isReadOnly: Bool { hello == nil }

    var closed: Bool { life.isClosed }
    /// Nobody reads the replies (the peer closed, or the role ended), while the calls it sent
    /// before are handled: nothing more is queued or written.
    var discardsOutput: Bool { life.output == .discarding }
    /// Its calls wait (read into `decoder`, not handled) until what is queued for it is read.
    var callsPaused: Bool { life.calls == .heldBack }
    /// The calls that waited are about to be handled, or are (from the loop's next turn).
    var callsResuming: Bool { life.calls == .resuming }
    /// The client closed its writing half: every call it sent is read, and the connection is
    /// kept only to answer them and for its subscriptions.
    var readClosed: Bool { life.input != .open }
    /// Whether the loop also watches for room to write (only while output is queued).
    var watchingWrites: Bool { life.watchesWrites }
    /// A call of it runs on a reader, or waits for a store's check.
    var hasCallOut: Bool { awaitingRead || parked != nil }

    /// What else keeps it once its input has ended.
    var remaining: ConnectionLifecycle.Remaining {
        ConnectionLifecycle.Remaining(queuedBytes: pendingOutput, subscriptions: subscriptions.count, owesResync: owesResync,
                                      repliesOwed: repliesOwed, callOut: hasCallOut, callWaiting: decoder.hasCompleteFrame())
    }

    /// A short name for logs.
    var label: String { "connection \(id) (pid \(peer.pid)\(hello.map { ", \($0.author)" } ?? ""))" }

    var pendingOutput: Int { outbox.pending }

    func enqueue(_ frame: [UInt8], written: Int = 0) { outbox.append(frame, written: written) }

    /// Writes what the socket takes; true when everything queued is written.
    func flush() throws(SystemError) -> Bool { try outbox.flush(to: fd) }
}

extension Connection {
    /// What is wrong with this connection once the broker has nothing left to do (no turn, no
    /// read or commit in flight): each flag that should have moved on by then, named. Empty for
    /// a connection that is where it may rest. (Checked after every step of the simulation.)
    func restingProblems(limits: BrokerLimits.OutboxLimits) -> [String] {
        var problems: [String] = []
        func problem(_ what: String) { problems.append("\(label): \(what)") }
        if closed { problem("closed, yet still served") }
        if discardsOutput, pendingOutput > 0 { problem("drops its output, yet \(pendingOutput) bytes are queued") }
        if pendingOutput > 0, !discardsOutput, !watchingWrites { problem("\(pendingOutput) bytes queued, and nobody watches for room to write them") }
        if callsPaused, pendingOutput == 0 { problem("its calls wait for it to read, with nothing left to read") }
        if callsResuming { problem("its calls are still resuming") }
        if owesResync, pendingOutput == 0, !resyncInFlight, !discardsOutput { problem("owes a resync that nothing will start") }
        if awaitingRead { problem("waits for a read that is not running") }
        if parked != nil { problem("a call is parked while no check runs") }
        if pendingOutput > limits.maxOutboxBytes + Limits.maxFrameBytes { problem("\(pendingOutput) bytes queued, past the outbox's bound") }
        if life.isFinished(remaining) { problem("its client closed its end and nothing is left for it, yet it is open") }
        if !readClosed, !callsPaused, decoder.hasCompleteFrame() { problem("a whole call waits, unhandled") }
        return problems
    }
}

extension Connection {
    /// How long a plugin's reads may take, on a moving average (`readAverage`), before its next
    /// ones run on the heavy lane: one slow read moves it there; many quick ones never do.
    static let heavyReadSeconds = 0.01

    /// Whose read goes first: the built-in roles', then people's (`seam`), then plugins'.
    var readPriority: ReaderPool.Priority {
        if supervisedAs != nil, hello?.role != "plugin" { return .role }
        switch hello?.role {
        case "cli": return .person
        case "ticker", "migrate", "sync": return .role
        default: return .plugin
        }
    }

    /// The lane of its next read: for a plugin (or a client that has not said Hello) whose reads
    /// lately took long, the heavy one. The roles' and a person's reads stay on the light lane,
    /// however large (the ticker's first result is).
    var readLane: ReaderPool.Lane {
        readPriority == .plugin && readAverage > Self.heavyReadSeconds ? .heavy : .light
    }

    /// Folds one read's time into its average: a quarter of the way to each new read.
    func charge(readSeconds: Double) {
        readAverage += (readSeconds - readAverage) / 4
    }
}
