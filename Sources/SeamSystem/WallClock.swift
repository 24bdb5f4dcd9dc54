import Glibc

/// Wall-clock time as Unix seconds: what Seam stores in dates.
public enum WallClock {
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

extension WallClock {
    /// Seconds on a monotonic clock (for timeouts; not a date).
    public static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

extension WallClock {
    /// Seconds east of UTC of the local time zone at `t` (`TZ`, else /etc/localtime): for showing
    /// times of day to a person.
    public static func utcOffset(at t: Double) -> Int {
        var seconds = time_t(t)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return 0 }
        return Int(parts.tm_gmtoff)
    }
}

extension WallClock {
    /// `t` (Unix seconds) as UTC date and time for a file name: "20261205-143000".
    public static func fileStamp(_ t: Double) -> String {
        var seconds = time_t(t)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return String(Int64(t)) }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))-\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))"
    }
}
