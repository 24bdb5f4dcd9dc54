import Synchronization

/// Where a component reads the time: the system's clocks in service, a `ManualClock` in tests,
/// which then move time on by hand instead of sleeping through it.
public protocol Clock: Sendable {
    /// Unix seconds (`CLOCK_REALTIME`): what dates are made of.
    var now: Double { get }
    /// Seconds on a clock that never goes back (`CLOCK_MONOTONIC`): for deadlines and timeouts.
    var monotonic: Double { get }
}

/// The system's clocks (`WallClock`).
public struct SystemClock: Clock {
    public init() {}
    public var now: Double { WallClock.now() }
    public var monotonic: Double { WallClock.monotonic() }
}

/// A clock that moves only when told (`advance`, `setNow`). The monotonic reading starts at 0
/// and only goes forward; the wall clock moves with it, and may also be set, forward or back,
/// as a person or NTP sets a machine's.
public final class ManualClock: Clock {
    private let state: Mutex<(now: Double, monotonic: Double)>

    public init(now: Double = 1_700_000_000) { state = Mutex((now, 0)) }

    public var now: Double { state.withLock { $0.now } }
    public var monotonic: Double { state.withLock { $0.monotonic } }

    /// Moves both clocks on by `seconds` (≥ 0).
    public func advance(_ seconds: Double) {
        precondition(seconds >= 0, "a monotonic clock does not go back")
        state.withLock {
            $0.now += seconds
            $0.monotonic += seconds
        }
    }

    /// Sets the wall clock alone (the monotonic one does not jump).
    public func setNow(_ now: Double) { state.withLock { $0.now = now } }
}
