import CSeamSystem
import Glibc

/// Random numbers from the kernel's generator (`getrandom`), drawn 512 bytes at a time:
/// `SystemRandomNumberGenerator` makes one system call per 8 bytes, two per uuid. For one owner
/// at a time (the context's thread); each value is used once.
public struct RandomBuffer: RandomNumberGenerator {
    private var words = [UInt64](repeating: 0, count: 64)
    private var used = 64

    public init() {}

    public mutating func next() -> UInt64 {
        if used == words.count { refill() }
        defer { used += 1 }
        return words[used]
    }

    private mutating func refill() {
        words.withUnsafeMutableBytes { buffer in
            var filled = 0
            while filled < buffer.count {
                let n = seam_getrandom(buffer.baseAddress! + filled, buffer.count - filled)
                if n > 0 {
                    filled += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    // getrandom fails this way only on a kernel without it (older than 3.17):
                    // take the stdlib's generator for the rest.
                    var system = SystemRandomNumberGenerator()
                    for i in stride(from: filled & ~7, to: buffer.count, by: 8) {
                        buffer.storeBytes(of: system.next(), toByteOffset: i, as: UInt64.self)
                    }
                    filled = buffer.count
                }
            }
        }
        used = 0
    }
}
