import Foundation
import SeamSystem

/// A relay between clients and a real seamd that can lose frames on their way to a client: the
/// fault a test needs (a diff that never arrived) and that a healthy broker never makes.
///
/// Each client that connects to `socketPath` gets its own connection to the broker. Frames from
/// the broker pass through `verdict`, with their text: each is sent on, lost, or lost with the
/// connection (both ends closed, as when a broker dies between a call and its reply).
public final class FrameProxy: @unchecked Sendable {
    public enum Verdict: Sendable {
        case pass, drop, cut
    }

    public let socketPath: String
    private let listener: Int32
    private let upstream: String
    private let verdict: @Sendable (String) -> Verdict
    private let lock = NSLock()
    private var descriptors: [Int32] = []
    private var stopped = false

    /// A proxy that loses the frames `drop` names.
    public convenience init(upstream: String, in directory: TemporaryDirectory, drop: @escaping @Sendable (String) -> Bool) throws {
        try self.init(upstream: upstream, in: directory, verdict: { drop($0) ? .drop : .pass })
    }

    public init(upstream: String, in directory: TemporaryDirectory, verdict: @escaping @Sendable (String) -> Verdict) throws {
        socketPath = directory.file("proxy-\(UUID().uuidString.prefix(6)).sock")
        self.upstream = upstream
        self.verdict = verdict
        listener = try UnixSocket.listen(path: socketPath)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Closes the listener and every relayed connection.
    public func stop() {
        lock.lock()
        stopped = true
        let open = descriptors + [listener]
        descriptors = []
        lock.unlock()
        for fd in open { UnixSocket.shutdown(fd) }
    }

    deinit { stop() }

    private func acceptLoop() {
        while true {
            _ = UnixSocket.waitReadable([listener], timeoutMilliseconds: 200)
            lock.lock()
            let done = stopped
            lock.unlock()
            if done { return }
            guard let client = try? UnixSocket.accept(listener), let server = try? UnixSocket.connect(path: upstream) else { continue }
            UnixSocket.setNonBlocking(client, false)
            lock.lock()
            descriptors += [client, server]
            lock.unlock()
            Thread.detachNewThread { [self] in relay(from: client, to: server, filtered: false) }
            Thread.detachNewThread { [self] in relay(from: server, to: client, filtered: true) }
        }
    }

    /// Copies bytes until either side closes; from the broker, frame by frame through `verdict`.
    private func relay(from source: Int32, to sink: Int32, filtered: Bool) {
        defer {
            UnixSocket.shutdown(source)
            UnixSocket.shutdown(sink)
        }
        var pending: [UInt8] = []
        while true {
            var chunk: [UInt8] = []
            guard case .bytes = (try? UnixSocket.read(source, into: &chunk)) ?? .closed else { return }
            guard filtered else {
                guard (try? UnixSocket.writeAll(sink, chunk)) != nil else { return }
                continue
            }
            pending += chunk
            while let end = pending.firstIndex(of: 0) {
                let frame = Array(pending[...end])
                pending.removeFirst(end + 1)
                switch verdict(String(decoding: frame.dropLast(), as: UTF8.self)) {
                case .pass: guard (try? UnixSocket.writeAll(sink, frame)) != nil else { return }
                case .drop: continue
                case .cut: return
                }
            }
        }
    }
}
