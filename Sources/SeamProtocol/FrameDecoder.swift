import SeamJSON
/// Splits a byte stream into varlink frames: JSON objects each followed by a NUL byte.
///
/// A frame longer than `maxFrameBytes` without its NUL cannot be recovered from (there is no way
/// to find the next frame's start), so the connection must be closed: `next()` throws. A whole
/// frame longer than that throws too, so that the limit does not depend on how reads split.
public struct FrameDecoder: Sendable {
    public struct FrameTooLarge: Error, Sendable, CustomStringConvertible {
        public var limit: Int
        public var description: String { "a frame is longer than \(limit) bytes" }
    }

    public let maxFrameBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where the search for the next NUL resumes (bytes before it have none).
    private var scanned = 0

    public init(maxFrameBytes: Int = Limits.maxFrameBytes) { self.maxFrameBytes = maxFrameBytes }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Appends bytes read into a scratch buffer (the broker's path: no generic, one copy).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes.bindMemory(to: UInt8.self))
    }

    /// Drops the consumed bytes once every frame in the buffer has been handed out.
    private mutating func compact() {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
            scanned = 0
        }
    }

    /// The next complete frame (without its NUL), or nil when more bytes are needed.
    public mutating func next() throws(FrameTooLarge) -> ArraySlice<UInt8>? {
        var i = max(start, scanned)
        while i < buffer.count {
            if buffer[i] == 0 {
                // Whole but too long: refused as one still open would be, wherever reads split it.
                if i - start > maxFrameBytes { throw FrameTooLarge(limit: maxFrameBytes) }
                let frame = buffer[start..<i]
                start = i + 1
                scanned = start
                if start > 65536 && start * 2 > buffer.count {
                    buffer.removeFirst(start)
                    scanned -= start
                    start = 0
                    return ArraySlice(frame)
                }
                return frame
            }
            i += 1
        }
        scanned = buffer.count
        if buffer.count - start > maxFrameBytes { throw FrameTooLarge(limit: maxFrameBytes) }
        return nil
    }

    /// Bytes received but not yet part of a complete frame.
    public var pendingBytes: Int { buffer.count - start }

    /// Whether a whole frame waits to be taken by `next()` (bytes already looked at are not
    /// looked at again), or so many bytes without one that `next()` throws `FrameTooLarge`:
    /// either way, `next()` has something to say.
    public mutating func hasCompleteFrame() -> Bool {
        var i = max(start, scanned)
        while i < buffer.count {
            if buffer[i] == 0 { return true }
            i += 1
        }
        scanned = buffer.count
        return buffer.count - start > maxFrameBytes
    }
}

/// The limits the broker enforces; documented in `Protocol/PROTOCOL.md`.
public enum Limits {
    /// The largest frame accepted, in bytes, NUL excluded.
    public static let maxFrameBytes = 4 << 20
    /// The largest reply frame a client accepts: replies carry results (up to `maxFetchRows` or
    /// `maxSubscriptionRows` rows), which can outgrow what the broker accepts from clients.
    public static let maxReplyFrameBytes = 512 << 20
    /// What a client's JSON decoder accepts in a reply: anything a reply frame may hold.
    public static let replyJSON = JSONLimits(maxBytes: maxReplyFrameBytes, maxStringBytes: maxReplyFrameBytes)
    /// Connections one uid may hold at once (besides the roles seamd starts). At the cap, a new
    /// connection closes the oldest that has sent nothing (or has not said Hello); when every
    /// one has, it is let in on a reserve of `reservedConnections` if it says Hello as `cli`.
    public static let maxConnectionsPerUID = 512
    /// Connections past the cap kept for a person's `seam` (`maxConnectionsPerUID`).
    public static let reservedConnections = 32
    /// Seconds a new connection has to send its first call (seamd's `--handshake-timeout`).
    public static let handshakeTimeout: Double = 10
    /// Deepest JSON nesting accepted in a message.
    public static let maxJSONDepth = 32
    /// The most operations one Save may carry.
    public static let maxSaveOperations = 10_000
    /// The most rows one Fetch returns (ask with limit/offset for more).
    public static let maxFetchRows = 100_000
    /// Bytes queued for a slow reader before its connection is closed.
    public static let maxOutboxBytes = 64 << 20
    /// Bytes queued on a connection past which its next calls wait (read, not handled) until it
    /// has read what is queued: a client that pipelines calls with large replies (two Subscribes
    /// with big results, say) and reads them is never closed for their sum. The same threshold
    /// as its diffs': what a connection may leave unread before anything more waits.
    public static let pauseCallsBytes = subscriberBacklogBytes
    /// Bytes of calls a connection may send while its calls wait (it has not read its replies):
    /// they are read and kept, so that a client blocked writing them is never left waiting on a
    /// broker that waits on it; past them it is closed, as one that neither reads nor stops.
    public static let maxWaitingCallBytes = 16 << 20
    /// Bytes queued on a connection past which its subscriptions stop queueing diffs; each is sent
    /// one "resync" with its whole result once the connection has read what is queued.
    public static let subscriberBacklogBytes = 1 << 20
    /// Subscriptions one connection may hold.
    public static let maxSubscriptionsPerConnection = 10_000
    /// Subscriptions one uid may hold over all its connections.
    public static let maxSubscriptionsPerUID = 100_000
    /// The most rows a subscription's result may hold (give a limit for larger results).
    public static let maxSubscriptionRows = 100_000
}
