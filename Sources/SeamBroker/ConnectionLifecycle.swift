/// One connection's life as a state machine: what happened on its socket goes in, what the
/// broker is to do comes out. Pure: the broker reads, writes, handles calls and closes
/// (`Broker.swift`). Three things move on their own, until the connection closes:
///
/// ```
///   input    open ── end of file ──▶ ended ── a call is out as its client goes ──▶ unwatched
///   output   delivering ── its client is gone (a write failed, it hung up, its role ended) ──▶ discarding
///   calls    flowing ── more queued than it may leave unread ──▶ heldBack
///            heldBack ── all of it written ──▶ resuming ── handled, from the loop's next turn ──▶ flowing
///            resuming ── more queued than it may leave unread, again ──▶ heldBack
///            heldBack ── its client is gone ──▶ flowing (nobody will read: they are handled at once)
/// ```
///
/// While its input is open the loop watches it for calls; once ended, only for room to write and
/// its client's full close; unwatched, not at all (it closes after the call that is out). Room
/// to write is watched while anything is queued. A connection whose input has ended closes once
/// nothing is left for it (`isFinished`).
struct ConnectionLifecycle: Sendable, Equatable {
    enum Input: Sendable, Equatable { case open, ended, unwatched }
    enum Output: Sendable, Equatable { case delivering, discarding }
    enum Calls: Sendable, Equatable { case flowing, heldBack, resuming }

    private(set) var input = Input.open
    private(set) var output = Output.delivering
    private(set) var calls = Calls.flowing
    private(set) var isClosed = false
    /// Whether the loop watches for room to write (only while something is queued).
    private(set) var watchesWrites = false

    enum Event: Sendable, Equatable {
        /// Its calls found more queued than it may leave unread (`Limits.pauseCallsBytes`).
        case outboxPastPause
        /// A flush wrote what the socket took: everything queued, or not.
        case written(drained: Bool)
        /// The calls that waited were handled (the turn after `resumeCallsNextTurn`).
        case resumed
        /// Its client closed its writing half (end of file).
        case inputEnded
        /// Its client, having closed its writing half, closed the rest.
        case hungUp
        /// A write failed because its client has gone (broken pipe, reset).
        case peerGone
        /// The role it was handed to ended.
        case roleEnded
        /// A call is out (a read, a write parked for a store) as its client goes: stop watching.
        case callOutAsItGoes
        case closed
    }

    /// What the broker is to do, in this order (a set: no allocation on the path of every
    /// reply that waits for room).
    struct Actions: OptionSet, Sendable {
        let rawValue: UInt8
        /// Drop what is queued: nobody will read it.
        static let dropOutbox = Actions(rawValue: 1 << 0)
        /// Tell the loop what to watch for (`interest`).
        static let watch = Actions(rawValue: 1 << 1)
        /// Handle every call read and not yet handled, now.
        static let handleCalls = Actions(rawValue: 1 << 2)
        /// Handle the calls that waited, from the loop's next turn.
        static let resumeCallsNextTurn = Actions(rawValue: 1 << 3)
        /// Everything queued is written: start an owed resync, or close if finished.
        static let afterDrain = Actions(rawValue: 1 << 4)
        /// Close if nothing is left for it (`isFinished`).
        static let closeIfFinished = Actions(rawValue: 1 << 5)
        /// Close unless a call is out (`callOutAsItGoes` then).
        static let closeUnlessCallOut = Actions(rawValue: 1 << 6)
    }

    /// What the loop watches the socket for.
    var interest: (read: Bool, write: Bool) { (input == .open && !isClosed, watchesWrites && !isClosed) }

    mutating func handle(_ event: Event) -> Actions {
        guard !isClosed else { return [] }
        switch event {
        case .outboxPastPause:
            // Also while the calls that waited are being handled: they wait again.
            guard output == .delivering else { return [] }
            calls = .heldBack
            return []
        case .written(let drained):
            guard output == .delivering else { return [] }  // nothing is written for a client that is gone
            var actions: Actions = []
            if drained == watchesWrites {
                watchesWrites = !drained
                actions.insert(.watch)
            }
            guard drained else { return actions }
            if calls == .heldBack {
                calls = .resuming
                return actions.union(.resumeCallsNextTurn)
            }
            return actions.union(.afterDrain)
        case .resumed:
            if calls == .resuming { calls = .flowing }
            return []
        case .inputEnded:
            guard input == .open else { return [] }
            input = .ended
            return [.watch, .closeIfFinished]
        case .hungUp, .roleEnded:
            output = .discarding
            watchesWrites = false
            if calls == .heldBack { calls = .flowing }
            return [.dropOutbox, .handleCalls, .closeUnlessCallOut]
        case .peerGone:
            let wasHeld = calls == .heldBack
            output = .discarding
            watchesWrites = false
            if wasHeld { calls = .resuming }
            return [.dropOutbox, .watch, wasHeld ? .resumeCallsNextTurn : .closeIfFinished]
        case .callOutAsItGoes:
            input = .unwatched
            return [.watch]
        case .closed:
            isClosed = true
            return []
        }
    }

    /// What else keeps a connection whose input has ended.
    struct Remaining: Sendable {
        var queuedBytes: Int
        var subscriptions: Int
        var owesResync: Bool
        var repliesOwed: Int
        /// A call of it is out: on a reader, or parked for a store.
        var callOut: Bool
        /// A whole call is read and not yet handled.
        var callWaiting: Bool
    }

    /// Whether the connection may close: its input has ended, no call of it is held, out or
    /// waiting, and (while anyone reads) nothing is queued or owed and no subscription is left.
    /// (`remaining` is looked at only once the input has ended: it is asked after every drained
    /// flush.)
    func isFinished(_ remaining: @autoclosure () -> Remaining) -> Bool {
        guard input != .open, !isClosed, calls == .flowing else { return false }
        let r = remaining()
        guard !r.callOut, !r.callWaiting else { return false }
        return output == .discarding || (r.queuedBytes == 0 && r.subscriptions == 0 && !r.owesResync && r.repliesOwed == 0)
    }
}
