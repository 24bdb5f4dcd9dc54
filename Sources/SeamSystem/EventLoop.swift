import CSeamSystem
import Glibc

/// A single-threaded epoll loop: descriptors with callbacks, signals through a signalfd, and
/// deadlines. The broker runs on one of these, so its state needs no locks.
public final class EventLoop {
    public struct Interest: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let read = Interest(rawValue: UInt32(SEAM_EPOLLIN))
        public static let write = Interest(rawValue: UInt32(SEAM_EPOLLOUT))
    }

    public struct Events: Sendable {
        public var readable: Bool
        public var writable: Bool
        /// The peer hung up (closed its end, or only its writing half) or the descriptor failed.
        public var hangup: Bool
        /// The peer closed both halves, or the descriptor failed: nothing written reaches it.
        public var peerGone: Bool
    }

    private let epoll: Int32
    private var handlers: [Int32: (Events) -> Void] = [:]
    private var deadlines: [(at: Double, id: Int, action: () -> Void)] = []
    private var nextDeadline = 0
    private var running = false
    private var idle: (due: () -> Bool, work: () -> Void)?
    private var turns: (pending: () -> Bool, run: () -> Void)?
    private var endOfRound: (() -> Void)?
    /// After a turn that handled events, the loop polls for this long (yielding the CPU between
    /// polls) before it sleeps: a request that follows the last closely (a client in a
    /// conversation) is read at once, not after this thread's CPU has woken from idle, which
    /// costs tens of microseconds on a virtual machine. 0: never.
    public var spinSeconds: Double = 0
    private var spinUntil: Double = 0
    /// Descriptor events handled since the loop was made: a figure that keeps growing while
    /// nothing is asked of the process is a descriptor the loop spins on.
    public private(set) var eventsHandled = 0

    /// Where deadlines (`after`) and the spin window read the time.
    public let clock: any Clock

    /// A loop whose deadlines follow `clock` (the system's; a `ManualClock` in tests, which then
    /// `turn` the loop themselves).
    public init(clock: any Clock = SystemClock()) throws(SystemError) {
        self.clock = clock
        epoll = seam_epoll_create()
        guard epoll >= 0 else { throw SystemError("epoll_create1", errno: errno) }
    }

    deinit {
        close(epoll)
        fds.deallocate()
        events.deallocate()
    }

    /// Watches `fd` for `interest`, calling `handler` on the loop's thread.
    public func watch(_ fd: Int32, _ interest: Interest, _ handler: @escaping (Events) -> Void) throws(SystemError) {
        let op = handlers[fd] == nil ? Int32(SEAM_EPOLL_CTL_ADD) : Int32(SEAM_EPOLL_CTL_MOD)
        guard seam_epoll_ctl(epoll, op, fd, interest.rawValue | UInt32(SEAM_EPOLLRDHUP)) == 0 else {
            throw SystemError("epoll_ctl", errno: errno)
        }
        handlers[fd] = handler
    }

    /// Changes what `fd` is watched for. `halfClose`: whether the peer closing its writing half
    /// is reported (`hangup`); once it has been, it would be reported on every turn, so a
    /// descriptor kept for writing after it is watched without (its `peerGone` still comes).
    public func change(_ fd: Int32, _ interest: Interest, halfClose: Bool = true) {
        _ = seam_epoll_ctl(epoll, Int32(SEAM_EPOLL_CTL_MOD), fd, interest.rawValue | (halfClose ? UInt32(SEAM_EPOLLRDHUP) : 0))
    }

    /// Stops watching `fd` (it is not closed).
    public func forget(_ fd: Int32) {
        guard handlers.removeValue(forKey: fd) != nil else { return }
        _ = seam_epoll_ctl(epoll, Int32(SEAM_EPOLL_CTL_DEL), fd, 0)
    }

    /// Calls `handler` with each of `signals` as it arrives (they are blocked for the thread).
    public func onSignals(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) throws(SystemError) {
        let fd = signals.withUnsafeBufferPointer { seam_signalfd($0.baseAddress, Int32($0.count)) }
        guard fd >= 0 else { throw SystemError("signalfd", errno: errno) }
        try watch(fd, .read) { _ in
            while true {
                let signo = seam_signalfd_read(fd)
                if signo <= 0 { break }
                handler(signo)
            }
        }
    }

    /// Something another thread pokes to have `handler` run on the loop's thread (an eventfd the
    /// loop watches). `wake()` is safe from any thread; wakes that come before the handler runs
    /// are merged into one run, so the handler looks at everything waiting for it.
    public final class Waker: @unchecked Sendable {
        let fd: Int32
        init(fd: Int32) { self.fd = fd }
        public func wake() { _ = seam_eventfd_signal(fd) }
        /// The eventfd the loop watches (to `forget` it once no more wakes are wanted).
        public var descriptor: Int32 { fd }
        deinit { close(fd) }
    }

    /// A new `Waker` whose wakes run `handler` on this loop.
    public func waker(_ handler: @escaping () -> Void) throws(SystemError) -> Waker {
        let fd = seam_eventfd()
        guard fd >= 0 else { throw SystemError("eventfd", errno: errno) }
        let waker = Waker(fd: fd)
        try watch(fd, .read) { _ in
            _ = seam_eventfd_drain(fd)
            handler()
        }
        return waker
    }

    /// Runs `action` once, `seconds` from now. Returns an id for `cancel`.
    @discardableResult
    public func after(_ seconds: Double, _ action: @escaping () -> Void) -> Int {
        nextDeadline += 1
        deadlines.append((clock.monotonic + seconds, nextDeadline, action))
        return nextDeadline
    }

    public func cancel(_ id: Int) { deadlines.removeAll { $0.id == id } }

    /// Runs `work` when the loop has nothing to do and `due()` says there is some: instead of
    /// blocking, the loop then polls without waiting, and `work` runs only if nothing is ready.
    /// For upkeep that belongs between requests, never in front of one.
    public func whenIdle(_ due: @escaping () -> Bool, _ work: @escaping () -> Void) { idle = (due, work) }

    /// Work the owner does in turns (`run`, after each turn's events), for as long as `pending`
    /// says some is left: the loop then polls for events without waiting, so that new events and
    /// pending work take turns.
    public func inTurns(pending: @escaping () -> Bool, run: @escaping () -> Void) { turns = (pending, run) }

    /// Runs `work` at the end of every round of the loop — after its events, turns and
    /// deadlines, before it waits again: for what the round's work left to finish together (the
    /// broker's group commit syncs the round's saves once there, then sends their replies).
    public func atEndOfRound(_ work: @escaping () -> Void) { endOfRound = work }

    /// Runs until `stop()`.
    public func run() {
        running = true
        while running { turn() }
    }

    /// What one `epoll_wait` returns, kept for the loop's life: a round allocates nothing, and
    /// checks no exclusive access to an array.
    private let fds = UnsafeMutablePointer<Int32>.allocate(capacity: 128)
    private let events = UnsafeMutablePointer<UInt32>.allocate(capacity: 128)

    /// One round of the loop: waits for events (at most `maxWait` seconds; nil: until the next
    /// deadline), handles them, runs the turns, then the deadlines due by the clock, then the
    /// end-of-round work. `run` turns it until stopped; a test with a `ManualClock` turns it
    /// itself, with no wait, after moving the clock on.
    public func turn(maxWait: Double? = nil) {
        // No allocation per turn: a deadline is pending whenever seamd supervises roles.
        let now = clock.monotonic
        var soonest = Double.infinity
        for d in deadlines where d.at < soonest { soonest = d.at }
        // Upkeep waits for deadlines already due as well as for requests.
        let busy = turns?.pending() ?? false
        let upkeep = !busy && soonest > now && (idle?.due() ?? false)
        var timeout = upkeep || busy ? 0 : Self.milliseconds(until: soonest, from: now)
        if let maxWait { timeout = min(timeout, Int32(max(0, maxWait * 1000))) }
        var n: Int32 = 0
        // Spinning ends when the window does, or at the next deadline, which it must not delay:
        // the wait after it is measured from when it ended.
        let spinEnd = min(spinUntil, soonest)
        var wait = timeout
        if timeout > 0, now < spinEnd {
            repeat {
                n = seam_epoll_wait(epoll, fds, events, 128, 0)
                if n != 0 { break }
                sched_yield()
            } while clock.monotonic < spinEnd
            wait = min(timeout, Self.milliseconds(until: soonest, from: clock.monotonic))
        }
        if n == 0 { n = seam_epoll_wait(epoll, fds, events, 128, wait) }
        if n == 0, upkeep { idle?.work() }
        if n > 0 {
            eventsHandled &+= Int(n)
            for i in 0..<Int(n) {
                let e = events[i]
                let gone = e & (UInt32(SEAM_EPOLLHUP) | UInt32(SEAM_EPOLLERR)) != 0
                handlers[fds[i]]?(Events(readable: e & UInt32(SEAM_EPOLLIN) != 0, writable: e & UInt32(SEAM_EPOLLOUT) != 0,
                                         hangup: gone || e & UInt32(SEAM_EPOLLRDHUP) != 0, peerGone: gone))
            }
        }
        if let turns, turns.pending() { turns.run() }
        let after = clock.monotonic
        if n > 0 || busy { spinUntil = after + spinSeconds }
        if deadlines.contains(where: { $0.at <= after }) {
            let due = deadlines.filter { $0.at <= after }
            deadlines.removeAll { $0.at <= after }
            for d in due { d.action() }
        }
        endOfRound?()
    }

    public func stop() { running = false }

    /// Whether events wait to be handled — a call come in, a reader's reply — so that long work
    /// done in pieces between rounds can end its piece early and let them in. One `poll`.
    public var hasPendingEvents: Bool {
        var p = pollfd(fd: epoll, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0
    }

    /// epoll's timeout to wait for the deadline at `soonest`: rounded up, at most a second.
    private static func milliseconds(until soonest: Double, from now: Double) -> Int32 {
        soonest.isFinite ? Int32(max(0, min(1000, (soonest - now) * 1000 + 1))) : 1000
    }
}
