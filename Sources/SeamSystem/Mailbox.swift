import Synchronization

/// Messages from other threads for one owner: `post` from any thread, `take` everything posted
/// so far on the owner's. Pair it with an `EventLoop.Waker` to be told when to take.
public final class Mailbox<Message: Sendable>: Sendable {
    private let messages = Mutex<[Message]>([])

    public init() {}

    public func post(_ message: Message) { messages.withLock { $0.append(message) } }

    /// Everything posted since the last take, oldest first.
    public func take() -> [Message] {
        messages.withLock { taken in
            defer { taken = [] }
            return taken
        }
    }
}

/// Tells an owner, from any thread, that something waits for it. The owner sets its handler
/// once it can take the news (an `EventLoop.Waker`'s `wake`); news that came before is told
/// then, so that none is lost.
public final class Notifier: Sendable {
    private struct State {
        var handler: (@Sendable () -> Void)?
        var pending = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Runs the handler (outside the lock), or remembers the news until there is one.
    public func notify() {
        let handler = state.withLock { s -> (@Sendable () -> Void)? in
            if s.handler == nil { s.pending = true }
            return s.handler
        }
        handler?()
    }

    /// Sets the handler; runs it at once if news came before.
    public func setHandler(_ handler: @escaping @Sendable () -> Void) {
        let pending = state.withLock { s -> Bool in
            s.handler = handler
            defer { s.pending = false }
            return s.pending
        }
        if pending { handler() }
    }
}
