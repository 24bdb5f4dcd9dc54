import CSeamSystem
import Glibc

/// A timer on the wall clock (a timerfd on CLOCK_REALTIME): it fires at a Unix time, counts
/// through a suspend (a monotonic clock stops then), and wakes early when the clock is set, so
/// whoever waits can recompute from wall-clock due times. Poll `descriptor` for readability.
public final class WallTimer {
    public let descriptor: Int32

    public init() throws(SystemError) {
        let fd = seam_timerfd_realtime()
        guard fd >= 0 else { throw SystemError("timerfd_create", errno: errno) }
        descriptor = fd
    }

    deinit { Descriptors.close(descriptor) }

    /// Fires at Unix time `seconds` (at once when that has passed); nil disarms.
    public func arm(at seconds: Double?) throws(SystemError) {
        guard seam_timerfd_at(descriptor, seconds.map { max($0, 0) } ?? -1) == 0 else {
            throw SystemError("timerfd_settime", errno: errno)
        }
    }

    public enum Wake: Sendable, Equatable { case notYet, fired, clockChanged }

    /// Consumes a wake-up after `descriptor` polled readable.
    public func acknowledge() -> Wake {
        switch seam_timerfd_read(descriptor) {
        case 0: return .notYet
        case -2: return .clockChanged
        case let n where n > 0: return .fired
        default: return .notYet
        }
    }
}
