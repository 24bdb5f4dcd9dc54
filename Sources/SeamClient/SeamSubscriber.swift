import SeamJSON
import SeamProtocol
import SeamSystem
import Synchronization

/// What a subscription listens to: `org.seam.Store.Subscribe`'s parameters.
public struct LiveQuery: Sendable {
    public var entity: String
    public var predicate: String?
    public var parameters: JSONObject
    public var sort: String?
    public var limit: Int?
    public var fields: [String]?

    public init(_ entity: String, where predicate: String? = nil, parameters: JSONObject = [:], sort: String? = nil,
                limit: Int? = nil, fields: [String]? = nil) {
        self.entity = entity
        self.predicate = predicate
        self.parameters = parameters
        self.sort = sort
        self.limit = limit
        self.fields = fields
    }

    func callParameters(since: Int64?) -> JSONObject {
        var p: JSONObject = ["entity": .string(entity)]
        if let predicate { p["predicate"] = .string(predicate) }
        if !parameters.isEmpty { p["parameters"] = .object(parameters) }
        if let sort { p["sort"] = .string(sort) }
        if let limit { p["limit"] = .integer(Int64(limit)) }
        if let fields { p["fields"] = .array(fields.map(JSON.string)) }
        if let since { p["since"] = .integer(since) }
        return p
    }
}

/// Subscriptions to seamd over one connection of their own, many at once (each call carries an
/// `id`, which its replies echo). Each subscription is an `AsyncThrowingStream` of updates: the
/// result, then a diff per commit that changed it. A reader thread hands every reply to its
/// stream. When the connection breaks (seamd restarted), the reader reconnects and resumes every
/// subscription from the last sequence number it delivered, so no change is missed: the next
/// update is the diff since then, or a resync with the whole result.
///
///     let subscriber = try SeamSubscriber.connect()
///     var live = LiveResult()
///     for try await update in subscriber.subscribe(LiveQuery("Session", sort: "startedAt")) {
///         try live.apply(update)   // live.rows is the query's result, current
///     }
public final class SeamSubscriber: Sendable {
    typealias Stream = AsyncThrowingStream<SubscriptionUpdate, any Error>

    /// One subscription's updates, in order; iterating them is taking them (see `bufferLimit`).
    public struct Updates: AsyncSequence, Sendable {
        public typealias Element = SubscriptionUpdate
        let stream: Stream
        /// Told of every update the consumer takes.
        let taken: @Sendable () -> Void

        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: Stream.AsyncIterator
            let taken: @Sendable () -> Void

            public mutating func next() async throws -> SubscriptionUpdate? {
                guard let update = try await base.next() else { return nil }
                taken()
                return update
            }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator(), taken: taken) }
    }

    private struct Entry {
        var query: LiveQuery
        var continuation: Stream.Continuation
        /// The broker's number for it, once the first reply came.
        var subscription: Int?
        /// The sequence number of the last update delivered: where a resume starts.
        var sequence: Int64?
        /// Ended by its consumer before the broker numbered it (the first reply has not come,
        /// or a reconnect is subscribing it again): unsubscribed when the number comes.
        var cancelled = false
        /// The pause before the next try while its store is closed (a migration), or nil.
        var retryPause: Double?
        /// Updates its stream holds that the consumer has not taken (about: the consumer's side
        /// may count one before this side does).
        var held = 0
        /// The broker's number for a subscription ended because the stream's consumer fell
        /// `bufferLimit` updates behind: every reply to the call is passed over, down to that
        /// subscription's last (its `end`, or an error that ended it).
        var abandoned: Int?
        /// Set once such a subscription has ended: subscribed again, from `sequence`, when the
        /// consumer has taken half of what the stream holds.
        var awaitingRoom = false
    }

    private struct State {
        var fd: Int32
        var entries: [Int64: Entry] = [:]
        var nextID: Int64 = 0
        var closed = false
        /// Counts connections: a retry planned on one is not sent on the next (which
        /// subscribed everything again).
        var generation = 0
    }

    public let path: String
    /// Whether the connection is the one seamd handed over (`$SEAM_FD`), which is never reopened.
    private let inherited: Bool
    /// Seconds the reader keeps trying to reconnect before it fails every subscription.
    public let reconnectTimeout: Double
    /// Updates a stream holds for its consumer. One more, and the subscription ends at the
    /// broker and resumes later from the last update held: a consumer that falls behind gets one
    /// diff (or resync) for all it missed, and the subscriber's memory stays bounded.
    public let bufferLimit: Int
    private let state: Mutex<State>

    /// Connects to `path`, else takes the socket inherited on `$SEAM_FD` (as `SeamConnection`
    /// does; that connection holds the process's role and cannot be opened again, so when it
    /// breaks every stream fails with `disconnected`), else `$SEAM_SOCKET`, else the default path.
    public static func connect(path: String? = nil, reconnectTimeout: Double = 30,
                               bufferLimit: Int = 1024) throws(ClientError) -> SeamSubscriber {
        let subscriber: SeamSubscriber
        let limit = max(1, bufferLimit)
        if path == nil, let fd = InheritedSocket.take() {
            subscriber = SeamSubscriber(fd: fd, path: "fd \(fd)", inherited: true, reconnectTimeout: reconnectTimeout, bufferLimit: limit)
        } else {
            let target = path ?? Environment.socketPath
            let fd: Int32
            do { fd = try UnixSocket.connect(path: target) } catch { throw ClientError(.cannotConnect(path: target, error)) }
            subscriber = SeamSubscriber(fd: fd, path: target, inherited: false, reconnectTimeout: reconnectTimeout, bufferLimit: limit)
        }
        do { try Threads.detach { [subscriber] in subscriber.readLoop() } } catch {
            subscriber.close()  // deinit closes the descriptor
            throw ClientError(.malformed("cannot start the reader thread: \(error)"))
        }
        return subscriber
    }

    private init(fd: Int32, path: String, inherited: Bool, reconnectTimeout: Double, bufferLimit: Int) {
        self.path = path
        self.inherited = inherited
        self.reconnectTimeout = reconnectTimeout
        self.bufferLimit = bufferLimit
        state = Mutex(State(fd: fd))
    }

    /// Subscribes to `query`. With `since`, the first update is the diff from the result at that
    /// sequence number (or a resync; or, when the broker is behind that number, a fresh result).
    /// A stream that resumes (with `since`, or after a reconnect) while its store is closed for
    /// a migration waits for the store rather than fail. Ending the iteration unsubscribes. Once the subscriber is
    /// closed (`close`, or no broker answered within `reconnectTimeout`), the stream fails at
    /// once with `disconnected`: connect a new subscriber.
    public func subscribe(_ query: LiveQuery, since: Int64? = nil) -> Updates {
        let (stream, continuation) = Stream.makeStream(bufferingPolicy: .bufferingOldest(bufferLimit))
        let id: Int64? = state.withLock { s in
            guard !s.closed else { return nil }
            s.nextID += 1
            let entry = Entry(query: query, continuation: continuation, sequence: since)
            s.entries[s.nextID] = entry
            // Sent under the lock that added it: a reconnect, which subscribes every entry again
            // on its new connection, comes wholly before (and this goes to the new connection)
            // or wholly after (and this, on the old one, is lost with it) — never twice.
            Self.sendSubscribe(s.nextID, entry, fd: s.fd)
            return s.nextID
        }
        guard let id else {
            continuation.finish(throwing: ClientError(.disconnected))
            return Updates(stream: stream, taken: {})
        }
        continuation.onTermination = { [weak self] _ in self?.cancel(id) }
        return Updates(stream: stream, taken: { [weak self] in self?.took(id) })
    }

    /// The consumer of `id` took an update. A stream that fell behind and whose subscription has
    /// ended is subscribed again once half its buffer is free: a consumer that stalls costs the
    /// broker nothing, and one that catches up gets one diff (or resync) for all it missed.
    private func took(_ id: Int64) {
        state.withLock { s in
            guard var e = s.entries[id] else { return }
            e.held -= 1
            if e.awaitingRoom, hasRoom(e), !s.closed {
                e.awaitingRoom = false
                Self.sendSubscribe(id, e, fd: s.fd)
            }
            s.entries[id] = e
        }
    }

    /// Closes the connection; every stream finishes.
    public func close() {
        let fd: Int32? = state.withLock { s in
            if s.closed { return nil }
            s.closed = true
            return s.fd
        }
        if let fd { UnixSocket.shutdown(fd) }
    }

    deinit { state.withLock { s in Descriptors.close(s.fd) } }

    // MARK: - Calls

    private static func sendSubscribe(_ id: Int64, _ e: Entry, fd: Int32) {
        let call = Call(method: "org.seam.Store.Subscribe", parameters: e.query.callParameters(since: e.sequence), more: true,
                        id: .integer(id))
        // A failed write shows up as a broken connection in the reader, which resubscribes.
        try? UnixSocket.writeAll(fd, call.frame())
    }

    private func cancel(_ id: Int64) {
        state.withLock { s in
            guard var e = s.entries[id] else { return }
            guard !s.closed, let n = e.subscription else {
                if e.awaitingRoom {  // its subscription has ended: nothing at the broker to end
                    s.entries[id] = nil
                    return
                }
                // Not numbered yet: the broker is told once its first reply says the number.
                e.cancelled = true
                s.entries[id] = s.closed ? nil : e
                return
            }
            s.entries[id] = nil
            Self.sendUnsubscribe(n, s: &s)
        }
    }

    private static func sendUnsubscribe(_ subscription: Int, s: inout State) {
        s.nextID += 1
        let call = Call(method: "org.seam.Store.Unsubscribe", parameters: ["subscription": .integer(Int64(subscription))],
                        id: .integer(s.nextID))
        try? UnixSocket.writeAll(s.fd, call.frame())
    }

    // MARK: - Reader

    private func readLoop() {
        var decoder = FrameDecoder(maxFrameBytes: Limits.maxReplyFrameBytes)
        var buffer: [UInt8] = []
        while true {
            let fd = state.withLock { $0.fd }
            buffer.removeAll(keepingCapacity: true)
            let result = (try? UnixSocket.read(fd, into: &buffer)) ?? .closed
            switch result {
            case .bytes:
                decoder.append(buffer)
                do {
                    while let frame = try decoder.next() { deliver(frame) }
                } catch {
                    UnixSocket.shutdown(fd)  // an unreadable stream: start over on a new connection
                }
            case .wouldBlock:
                _ = UnixSocket.waitReadable(fd, timeoutMilliseconds: 1000)
            case .closed:
                decoder = FrameDecoder(maxFrameBytes: Limits.maxReplyFrameBytes)
                if !reconnect() { return }
            }
        }
    }

    /// Hands one reply to its stream. The stream is fed outside the lock: finishing a stream
    /// runs its termination handler, which takes the lock.
    private func deliver(_ frame: ArraySlice<UInt8>) {
        guard let json = try? JSON.decode(frame, limits: Limits.replyJSON), let reply = try? Reply(json), case .integer(let id)? = reply.id else { return }
        // seamd stopping is no end: the connection closes next, and the reader resumes elsewhere.
        if reply.error == VarlinkError.shuttingDown.name { return }
        let parsed: Result<SubscriptionUpdate, ClientError>
        if let name = reply.error {
            parsed = .failure(ClientError(.remote(VarlinkError(name, reply.parameters))))
        } else {
            do { parsed = .success(try SubscriptionUpdate(reply.parameters)) } catch {
                parsed = .failure(ClientError(.malformed("\(error)")))
            }
        }
        let last: Bool
        if case .success(let update) = parsed { last = update.kind == .end || !reply.continues } else { last = true }
        var retryPlan: (pause: Double, generation: Int)?
        var heldSequence: Int64?  // the sequence of the last update its stream held before this one
        let continuation: Stream.Continuation? = state.withLock { s in
            guard var e = s.entries[id] else { return nil }  // an Unsubscribe's reply, or one for a cancelled stream
            if e.abandoned != nil {
                if last {  // the broker holds nothing of it now
                    e.abandoned = nil
                    if e.cancelled {
                        s.entries[id] = nil
                        return nil
                    }
                    e.awaitingRoom = !hasRoom(e)
                    if !e.awaitingRoom { Self.sendSubscribe(id, e, fd: s.fd) }
                }
                s.entries[id] = e
                return nil
            }
            // A reply of a subscription this stream no longer follows.
            if case .success(let update) = parsed, let current = e.subscription, update.subscription != current { return nil }
            if e.cancelled {
                // Its stream has ended: what the broker numbered, it unsubscribes now.
                s.entries[id] = nil
                if !last, case .success(let update) = parsed { Self.sendUnsubscribe(update.subscription, s: &s) }
                return nil
            }
            if case .failure(let error) = parsed, error.remoteName == "org.seam.Store.SequenceAhead", e.sequence != nil {
                // The stores are older than what this stream has seen (the data directory,
                // sequence lease and all, restored from an older copy): nothing can be resumed,
                // so it starts afresh, with a new result.
                e.sequence = nil
                e.subscription = nil
                s.entries[id] = e
                Self.sendSubscribe(id, e, fd: s.fd)
                return nil
            }
            if case .failure(let error) = parsed, error.remoteName == "org.seam.Store.StoreUnavailable", e.sequence != nil {
                // A stream that was following its store waits while the store is closed (a
                // migration), and resumes from where it was, trying again less and less often.
                let pause = min((e.retryPause ?? 0.25) * 2, 30)
                e.retryPause = pause
                e.subscription = nil
                s.entries[id] = e
                retryPlan = (pause, s.generation)
                return nil
            }
            if case .success(let update) = parsed {
                heldSequence = e.sequence
                e.subscription = update.subscription
                e.sequence = update.sequence
                e.retryPause = nil
            }
            s.entries[id] = last ? nil : e
            return e.continuation
        }
        if let retryPlan { retry(id, after: retryPlan.pause, generation: retryPlan.generation) }
        guard let continuation else { return }
        switch parsed {
        case .success(let update):
            switch continuation.yield(update) {
            case .enqueued: state.withLock { s in s.entries[id]?.held += 1 }
            case .dropped where !last: fellBehind(id, update: update, heldSequence: heldSequence)
            default: break
            }
            if last { continuation.finish() }
        case .failure(let error):
            continuation.finish(throwing: error)
        }
    }

    /// Whether a stream that fell behind has room again to be subscribed: half its buffer free.
    private func hasRoom(_ e: Entry) -> Bool { e.held <= bufferLimit / 2 }

    /// The stream of `id` holds `bufferLimit` updates its consumer has not taken, and could not
    /// take `update`: its subscription ends at the broker, and once it has ended and the
    /// consumer has made room (`took`), it is subscribed again from the last update the stream
    /// holds (`heldSequence`).
    private func fellBehind(_ id: Int64, update: SubscriptionUpdate, heldSequence: Int64?) {
        state.withLock { s in
            guard var e = s.entries[id], !s.closed else { return }
            e.sequence = heldSequence
            e.subscription = nil
            e.abandoned = update.subscription
            s.entries[id] = e
            Self.sendUnsubscribe(update.subscription, s: &s)
        }
    }

    /// Subscribes `id` again after `pause` seconds, on the same connection, unless it ended
    /// meanwhile or a reconnect subscribed it.
    private func retry(_ id: Int64, after pause: Double, generation: Int) {
        let planned: Void? = try? Threads.detach { [weak self] in
            Threads.sleep(pause)
            self?.state.withLock { s in
                guard !s.closed, s.generation == generation, let e = s.entries[id], e.subscription == nil, e.abandoned == nil,
                      !e.awaitingRoom else { return }
                if e.cancelled {
                    s.entries[id] = nil
                    return
                }
                Self.sendSubscribe(id, e, fd: s.fd)
            }
        }
        if planned == nil {
            // No thread for the pause: try at once rather than never.
            state.withLock { s in if let e = s.entries[id] { Self.sendSubscribe(id, e, fd: s.fd) } }
        }
    }

    /// Connects again and resumes every subscription; false (every stream failed) when closed or
    /// when no broker answers within `reconnectTimeout`.
    private func reconnect() -> Bool {
        if inherited {  // it cannot be opened again
            let closedOnPurpose = state.withLock { s in
                defer { s.closed = true }
                return s.closed
            }
            finishAll(closedOnPurpose ? nil : ClientError(.disconnected))
            return false
        }
        let deadline = WallClock.monotonic() + reconnectTimeout
        var pause = 0.05
        while true {
            if state.withLock({ $0.closed }) {
                finishAll(nil)
                return false
            }
            if let fd = try? UnixSocket.connect(path: path) {
                let resumed: Bool = state.withLock { s in
                    if s.closed {
                        Descriptors.close(fd)
                        return false
                    }
                    Descriptors.close(s.fd)
                    s.fd = fd
                    s.generation += 1
                    for (id, e) in s.entries.sorted(by: { $0.key < $1.key }) {
                        if e.cancelled {  // ended meanwhile: nothing to subscribe again
                            s.entries[id] = nil
                            continue
                        }
                        // Its number was the old connection's; the new one's comes with its first reply.
                        s.entries[id]?.subscription = nil
                        s.entries[id]?.abandoned = nil
                        // A stream still full waits for room (`took`), as it would have here.
                        let full = !hasRoom(e) && (e.abandoned != nil || e.awaitingRoom)
                        s.entries[id]?.awaitingRoom = full
                        if !full { Self.sendSubscribe(id, e, fd: fd) }
                    }
                    return true
                }
                if resumed { return true }
                continue
            }
            if WallClock.monotonic() > deadline {
                // Given up: closed, so that a later `subscribe` fails at once rather than wait on
                // a connection no reader follows. A new subscriber connects again.
                state.withLock { $0.closed = true }
                finishAll(ClientError(.disconnected))
                return false
            }
            Threads.sleep(pause)
            pause = min(pause * 2, 1)
        }
    }

    private func finishAll(_ error: ClientError?) {
        let entries = state.withLock { s in
            let all = s.entries
            s.entries = [:]
            return all
        }
        for e in entries.values {
            if let error { e.continuation.finish(throwing: error) } else { e.continuation.finish() }
        }
    }
}
