import SeamJSON
import SeamProtocol
import SeamSystem

/// The ticker: subscribes to running sessions (sorted by when their step ends), waits on the
/// wall clock for the earliest, and asks the broker to advance the sessions that are due (one
/// `AdvanceMany` call, one save, for all that are due at once). The
/// broker does the step arithmetic (org.seam.Timers), so a ticker that was down, or a machine
/// that slept, catches up exactly: overdue sessions move to where they should be, and the
/// lateness of each step end is logged. One thread, one connection, no state of its own beyond
/// the subscription: a replacement picks up where a killed one left off.
public final class Ticker {
    public struct Options: Sendable {
        /// The socket (nil: `$SEAM_FD`, `$SEAM_SOCKET`, the default path).
        public var socketPath: String?
        /// Seconds to keep trying to reach the broker before giving up (per outage).
        public var reconnectTimeout: Double = 60
        /// Told the lateness (seconds) of every step end the broker reports (the benchmark's probe).
        public var onTransition: (@Sendable (Double) -> Void)?
        /// Log every step end (off for the benchmark's thousands).
        public var logsTransitions = true
        /// Told when a subscription's first result has come (after each connect): the ticker follows
        /// every running session from then on (the benchmark starts its load only then).
        public var onSubscribed: (@Sendable () -> Void)?
        /// Where "now" comes from (a test's `ManualClock` moves step ends by hand).
        public var clock: any Clock = SystemClock()
        public init(socketPath: String? = nil) { self.socketPath = socketPath }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    let options: Options
    let log: @Sendable (String) -> Void
    let timer: WallTimer
    private var fd: Int32 = -1
    private var decoder = FrameDecoder(maxFrameBytes: Limits.maxReplyFrameBytes)
    /// The running sessions followed, with their step ends as numbers.
    private var followed = TickerSchedule()
    /// AdvanceMany calls in flight: call id → their sessions, with the step end each had when
    /// the call was sent.
    private var inFlight: [Int64: [(session: String, end: Double?)]] = [:]
    private var busy: Set<String> = []
    /// Due sessions the broker did not advance — its call failed (the Local store is
    /// migrating, the disk is full), or it left one as it was (a row that does not fit its
    /// steps) — with the step end they had, when to try again, and the pause before the try
    /// after: 1 s, doubling to 60 s for a session the broker leaves as it is. So a session that
    /// cannot advance costs a call now and then and a line in the log, not a loop. A session
    /// whose step end changes (a person stopped or reset it) or that leaves the result is let go.
    private var held: [String: Hold] = [:]
    private struct Hold {
        var end: Double?
        var until: Double
        var pause: Double
    }
    /// When to subscribe again after the subscription failed (the Local store is migrating, a
    /// limit was reached): wall-clock seconds, or nil; and the pause before the try after that.
    private var resubscribeAt: Double?
    private var resubscribePause: Double = 1
    /// The id of the Subscribe call in force, and the broker's number for its subscription.
    private var subscriptionCall: Int64 = 0
    private var subscription: Int?
    private var nextID: Int64 = 100
    private var usedInherited = false

    /// Where reads from the broker land.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
    /// Opens a connection to the broker, instead of `$SEAM_FD` or the socket path.
    private let connector: (() -> Int32?)?

    /// A ticker; `connect`, when given, opens its connections to the broker (a test's broker in
    /// the same process hands it one end of a socket pair).
    public init(options: Options, log: @escaping @Sendable (String) -> Void, connect: (() -> Int32?)? = nil) throws(SystemError) {
        self.options = options
        self.log = log
        connector = connect
        timer = try WallTimer()
    }

    deinit {
        scratch.deallocate()
        if fd >= 0 { Descriptors.close(fd) }
    }

    /// Runs until the broker cannot be reached for `reconnectTimeout` seconds: `start`, then
    /// `tick` and `receive` as the alarm (a `WallTimer`) and the socket say.
    public func run() throws(Failure) {
        // An alarm is due at its time: the thread that ends steps is let in promptly when it wakes.
        Threads.requestShortSlices()
        try start()
        while true {
            let wake = tick()
            do { try timer.arm(at: wake) } catch {
                throw Failure(description: "cannot arm the timer: \(error)")
            }
            let ready = UnixSocket.waitReadable([fd, timer.descriptor])
            if ready[1], timer.acknowledge() == .clockChanged {
                log("the wall clock was set; recomputing")
                clockWasSet()
            }
            if ready[0] { try receive() }
        }
    }

    /// Connects to the broker (trying for up to `reconnectTimeout` seconds) and follows the
    /// running sessions.
    public func start() throws(Failure) { try connect() }

    /// The descriptor of its connection to the broker (readable: `receive` has work).
    public var descriptor: Int32 { fd }

    /// Asks the broker to advance what is due now; returns when something next falls due (its
    /// clock's wall time), nil when nothing does until the broker says more.
    public func tick() -> Double? {
        let now = options.clock.now
        let waiting = holding(at: now)
        let excluded = waiting.isEmpty ? busy : busy.union(waiting)
        let due = followed.due(at: now, excluding: excluded)
        if !due.isEmpty { advance(due) }
        if let at = resubscribeAt, now >= at {
            resubscribeAt = nil
            subscribe()
        }
        return [followed.nextWake(excluding: excluded), resubscribeAt, held.values.map(\.until).filter { $0 > now }.min()]
            .compactMap { $0 }.min()
    }

    /// Reads what the broker sent, once, and handles every whole reply; reconnects when the
    /// connection has ended or its stream cannot be read.
    public func receive() throws(Failure) {
        let result = (try? UnixSocket.read(fd, into: scratch)) ?? .closed
        guard case .bytes(let n) = result else {
            if result == .wouldBlock { return }
            log("the broker went away; reconnecting")
            return try connect()
        }
        decoder.append(UnsafeRawBufferPointer(rebasing: scratch[0..<n]))
        do {
            while let frame = try decoder.next() { try handle(frame) }
        } catch {
            log("unreadable stream from the broker (\(error)); reconnecting")
            try connect()
        }
    }

    // MARK: - The connection

    private func connect() throws(Failure) {
        if fd >= 0 { Descriptors.close(fd) }
        fd = -1
        decoder = FrameDecoder(maxFrameBytes: Limits.maxReplyFrameBytes)
        followed = TickerSchedule()
        inFlight = [:]
        busy = []
        held = [:]
        resubscribeAt = nil
        resubscribePause = 1
        let deadline = options.clock.monotonic + options.reconnectTimeout
        var pause = 0.05
        var told = false
        while true {
            if let c = try openConnection() {
                fd = c
                break
            }
            let path = options.socketPath ?? Environment.socketPath
            guard options.clock.monotonic < deadline else {
                throw Failure(description: "no seamd answers on \(path); start it with `seamd`")
            }
            if !told {
                log("no seamd answers on \(path) yet; trying again for up to \(Int(options.reconnectTimeout)) s")
                told = true
            }
            Threads.sleep(pause)
            pause = min(pause * 2, 1)
        }
        send(Call(method: "org.seam.Store.Hello", parameters: [
            "version": 1, "role": "plugin", "name": "seam-ticker", "capabilities": ["reads": ["Session"], "writes": ["Session"]],
        ], id: .integer(1)))
        subscribe()
        log("connected; following running sessions")
    }

    /// Follows running sessions afresh, under a new call id (the replies of an old one are
    /// ignored). A subscription in force is ended first: two would each deliver every diff.
    private func subscribe() {
        if let subscription {
            send(Call(method: "org.seam.Store.Unsubscribe", parameters: ["subscription": .integer(Int64(subscription))], oneway: true))
        }
        subscription = nil
        followed = TickerSchedule()
        nextID += 1
        subscriptionCall = nextID
        send(Call(method: "org.seam.Store.Subscribe", parameters: [
            "entity": "Session", "predicate": #"state == "running""#, "sort": "stepEndsAt", "fields": ["stepEndsAt"],
        ], more: true, id: .integer(subscriptionCall)))
    }

    private func openConnection() throws(Failure) -> Int32? {
        if let connector { return connector() }
        if options.socketPath == nil, let text = Environment.value("SEAM_FD"), let inherited = Int32(text), inherited >= 0 {
            // A socket seamd handed over cannot be opened again: when it breaks, seamd restarts us.
            guard !usedInherited else { throw Failure(description: "the connection seamd handed over (fd \(inherited)) closed") }
            usedInherited = true
            return inherited
        }
        return try? UnixSocket.connect(path: options.socketPath ?? Environment.socketPath)
    }

    private func send(_ call: Call) {
        // A failed write shows as end-of-file on the next read, which reconnects.
        try? UnixSocket.writeAll(fd, call.frame())
    }

    /// Asks the broker to advance every due session in one call (one save): under load the due
    /// sessions that pile up while a call is in flight go together in the next.
    private func advance(_ sessions: [String]) {
        for batch in stride(from: 0, to: sessions.count, by: 1_000).map({ Array(sessions[$0..<min($0 + 1_000, sessions.count)]) }) {
            nextID += 1
            inFlight[nextID] = batch.map { ($0, followed.end(of: $0) ?? nil) }
            busy.formUnion(batch)
            send(Call(method: "org.seam.Timers.AdvanceMany", parameters: ["sessions": .array(batch.map(JSON.string))], id: .integer(nextID)))
        }
    }

    private struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    /// One frame from the broker. One that cannot be read is not passed over (the call it
    /// answers would stay in flight for ever): the connection starts again.
    private func handle(_ frame: ArraySlice<UInt8>) throws(Unreadable) {
        let reply: Reply
        do { reply = try Reply(try JSON.decode(frame, limits: Limits.replyJSON)) } catch {
            throw Unreadable(description: "\(error)")
        }
        // seamd stopping: the connection closes next, and `run` reconnects.
        if reply.error == VarlinkError.shuttingDown.name { return }
        guard case .integer(let id)? = reply.id else { return }
        if id == subscriptionCall {
            if let error = reply.error {
                // A Local store that is migrating comes back, a limit may be lifted: try again,
                // less and less often.
                log("the subscription failed: \(error) (\(reply.parameters["message"]?.stringValue ?? "")); "
                    + "trying again in \(Int(resubscribePause)) s")
                resubscribeAt = options.clock.now + resubscribePause
                resubscribePause = min(resubscribePause * 2, 60)
                subscription = nil
                return
            }
            do {
                let update = try SubscriptionUpdate(reply.parameters)
                let first = subscription == nil
                subscription = update.subscription
                try followed.apply(update)
                resubscribePause = 1
                if first { options.onSubscribed?() }
            } catch {
                log("a subscription update did not fit (\(error)); subscribing afresh")
                subscribe()
            }
            return
        }
        guard let sent = inFlight.removeValue(forKey: id) else { return }
        let sessions = sent.map(\.session)
        busy.subtract(sessions)
        if let error = reply.error {
            let message = reply.parameters["message"]?.stringValue.map { " (\($0))" } ?? ""
            hold(sessions, doubling: false, why: "advancing them failed: \(error)\(message)")
            return
        }
        var advancedNow: Set<String> = []
        for advanced in reply.parameters["advanced"]?.arrayValue ?? [] {
            let session = advanced["session"]?.stringValue ?? "?"
            advancedNow.insert(session)
            held[session] = nil
            if let earlier = advanced["earlierTransitions"]?.int64Value, earlier > 0, options.logsTransitions {
                log("session \(session.suffix(8)): \(earlier) step ends passed before the last ones")
            }
            for t in advanced["transitions"]?.arrayValue ?? [] {
                options.onTransition?(t["lateness"]?.doubleValue ?? 0)
                guard options.logsTransitions else { continue }
                let late = (t["lateness"]?.doubleValue ?? 0) * 1000
                log("session \(session.suffix(8)): step \((t["stepIndex"]?.int64Value ?? 0) + 1) of round \((t["round"]?.int64Value ?? 0) + 1) "
                    + "ended, \(late < 10 ? String(Int(late * 1000)) + " µs" : String(Int(late)) + " ms") late"
                    + (advanced["state"]?.stringValue == "finished" ? "; finished" : ""))
            }
        }
        // A session someone else moved first (a person's Stop or Skip, another ticker) was not
        // due any more: its diff came before this reply, so its step end changed or it left.
        let left = sent.filter { s in !advancedNow.contains(s.session) && followed.end(of: s.session).map { $0 == s.end } == true }.map(\.session)
        if !left.isEmpty {
            hold(left, doubling: true, why: "the broker left them as they were (a session whose position does not fit its steps "
                 + "cannot advance; `seam stop` ends it)")
        }
    }

    /// The wall clock was set: pauses measured on it may now be far too long. Try again soon.
    private func clockWasSet() {
        let now = options.clock.now
        if let at = resubscribeAt { resubscribeAt = min(at, now + 1) }
        for (session, h) in held { held[session]?.until = min(h.until, now + h.pause) }
    }

    // MARK: - Sessions held back

    /// Holds `sessions` back from the next calls; logs once per session until it advances.
    private func hold(_ sessions: [String], doubling: Bool, why: String) {
        let now = options.clock.now
        var new: [String] = []
        for session in sessions {
            let pause = held[session].map { doubling ? min($0.pause * 2, 60) : 1 } ?? 1
            if held[session] == nil { new.append(session) }
            held[session] = Hold(end: followed.end(of: session) ?? nil, until: now + pause, pause: pause)
        }
        if !new.isEmpty {
            log("\(new.count) due session(s) not advanced (\(new.prefix(3).map { String($0.suffix(8)) }.joined(separator: ", "))): \(why); "
                + "trying again \(doubling ? "after 1 s, then less and less often" : "every second")")
        }
    }

    /// The held sessions to leave out of calls now; lets go of those whose time has come back
    /// round, whose step end changed, or that left the result.
    private func holding(at now: Double) -> Set<String> {
        guard !held.isEmpty else { return [] }
        var out: Set<String> = []
        for (session, h) in held {
            guard let end = followed.end(of: session), end == h.end else {
                held[session] = nil
                continue
            }
            if h.until > now { out.insert(session) }
        }
        return out
    }
}
