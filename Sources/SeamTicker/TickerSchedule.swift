import SeamJSON
import SeamProtocol

/// What the ticker has to do, from the running sessions it subscribes to (sorted by
/// `stepEndsAt`, which the broker keeps so): which are due now, and when to wake next. Pure.
public enum TickerSchedule {
    /// The uuids of sessions whose current step has ended by `now`, leaving out those already
    /// being advanced.
    public static func due(_ rows: [JSONObject], at now: Double, excluding busy: Set<String>) -> [String] {
        var out: [String] = []
        for row in rows {
            guard let end = endsAt(row) else { continue }
            if end > now { break }
            if let u = row["uuid"]?.stringValue, !busy.contains(u) { out.append(u) }
        }
        return out
    }

    /// When the next step ends among the sessions not being advanced, or nil when none runs.
    public static func nextWake(_ rows: [JSONObject], excluding busy: Set<String>) -> Double? {
        for row in rows {
            guard let u = row["uuid"]?.stringValue, !busy.contains(u), let end = endsAt(row) else { continue }
            return end
        }
        return nil
    }

    static func endsAt(_ row: JSONObject) -> Double? {
        switch row["stepEndsAt"] {
        case .string(let s)?: return RFC3339.parse(s)
        case .double(let d)?: return d
        case .integer(let i)?: return Double(i)
        default: return nil
        }
    }
}
