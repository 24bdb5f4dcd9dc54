import SeamSystem

/// What is queued for a client and not yet written: frames in order. Small frames are copied
/// together into one chunk (one write takes many diffs); a large one — a result, a resync — is
/// kept as the array it was built in, never copied on the loop. What the socket took is let go
/// of chunk by chunk, so a connection that never quite drains holds little more than what is
/// unwritten.
struct Outbox {
    private var chunks: [[UInt8]] = []
    /// The first chunk not wholly written, and how much of it was.
    private var head = 0
    private var offset = 0
    /// Bytes queued and not yet written.
    private(set) var pending = 0

    /// Frames smaller than this are copied into the chunk before them (up to `chunkBytes`).
    static let coalesceBytes = 16 << 10
    static let chunkBytes = 256 << 10

    var isEmpty: Bool { pending == 0 }

    /// Bytes held, written or not (the part of the first chunk already written included).
    var heldBytes: Int { pending + offset }

    /// Queues `frame`, of which the first `written` bytes have gone already.
    mutating func append(_ frame: [UInt8], written: Int = 0) {
        let left = frame.count - written
        guard left > 0 else { return }
        pending += left
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            head = 0
            offset = 0
        }
        if written > 0 {
            // Leading, it is kept whole with its start marked written; behind others, its rest.
            if chunks.isEmpty { offset = written; chunks.append(frame) } else { chunks.append(Array(frame[written...])) }
            return
        }
        if frame.count < Self.coalesceBytes, let last = chunks.indices.last, chunks[last].count + frame.count <= Self.chunkBytes {
            chunks[last].append(contentsOf: frame)
        } else {
            chunks.append(frame)
        }
    }

    /// At most this much is written per flush: a write into a Unix socket whose reader keeps
    /// taking from it runs as long as the reader does — a 222 kB reply took the loop 2 ms in
    /// one `send` — so a big reply goes out over several rounds of the loop instead.
    static let writeSliceBytes = 64 << 10

    /// Writes what the socket takes, up to `writeSliceBytes`; true when everything queued is written.
    mutating func flush(to fd: Int32) throws(SystemError) -> Bool {
        var budget = Self.writeSliceBytes
        while head < chunks.count {
            guard budget > 0 else { return false }
            let n = try UnixSocket.write(fd, chunks[head], from: offset, atMost: budget)
            if n == 0 { return false }
            budget -= n
            offset += n
            pending -= n
            if offset == chunks[head].count {
                chunks[head] = []
                head += 1
                offset = 0
                if head >= 64, head * 2 >= chunks.count {
                    chunks.removeFirst(head)
                    head = 0
                }
            }
        }
        chunks.removeAll(keepingCapacity: true)
        head = 0
        return true
    }
}
