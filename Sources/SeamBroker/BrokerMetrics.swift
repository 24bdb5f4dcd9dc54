import SeamMetrics
import SeamProtocol
import SeamSystem

/// What seamd counts of itself as it runs, for `org.seam.Metrics.Get` (`BrokerReport` adds
/// what is read when asked: gauges of connections, stores, roles, sync). Touched on the loop's
/// thread alone. Counting is a dictionary entry and a histogram bucket per call; `enabled` off
/// (`SEAM_METRICS=0`, for the benchmark that measures what counting costs) skips even that.
final class BrokerMetrics {
    let enabled: Bool

    /// Per method: calls answered by outcome (`ok`, or the error's name) and how long they took.
    struct MethodStats {
        var ok: UInt64 = 0
        var errors: [String: UInt64] = [:]
        var seconds = Histogram(bounds: Histogram.seconds)
    }

    private(set) var methods: [String: MethodStats] = [:]
    /// Rows each commit changed.
    private(set) var commitRows = Histogram(bounds: Histogram.sizes)
    /// Subscriptions sent a resync (their diffs could no longer be told).
    private(set) var resyncs: UInt64 = 0

    init(enabled: Bool) { self.enabled = enabled }

    /// The start of a call, to pass to `answered` (0 when counting is off: no clock read).
    @inline(__always) func start() -> Double { enabled ? WallClock.monotonic() : 0 }

    /// Call `method` answered with `reply` (its frame; empty for a oneway call), `started` at `start()`.
    func answered(_ method: String, reply: [UInt8], started: Double) {
        guard enabled else { return }
        let took = WallClock.monotonic() - started
        let error = Reply.errorName(inFrame: reply)
        // In place: one lookup, no copy of the histogram.
        Self.count(&methods[method, default: MethodStats()], error: error, took: took)
    }

    private static func count(_ stats: inout MethodStats, error: String?, took: Double) {
        if let error { stats.errors[error, default: 0] += 1 } else { stats.ok += 1 }
        stats.seconds.observe(took)
    }

    func committed(rows: Int) {
        guard enabled else { return }
        commitRows.observe(Double(rows))
    }

    func resynced() {
        guard enabled else { return }
        resyncs += 1
    }
}
