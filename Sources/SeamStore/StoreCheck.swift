import SeamSystem

/// `PRAGMA integrity_check` of a store file on a read-only connection of its own: what `seam
/// check` runs, whether seamd serves the file or not.
public struct StoreCheck: Sendable {
    public var store: String
    /// Empty: the check passed (at most 20 problems otherwise).
    public var problems: [String]
    public var seconds: Double

    /// Checks `path`; `progress(done, total)` now and then, as an estimate: about 40 steps of a
    /// thousand instructions per page, measured on stores of timers and sessions (done never
    /// reaches total before the check has ended).
    public static func run(_ store: String, path: String, progress: @escaping (Int64, Int64) -> Void = { _, _ in }) -> StoreCheck {
        let started = WallClock.monotonic()
        var problems: [String]
        do {
            var o = Database.Options()
            o.readOnly = true
            let db = try Database(path: path, options: o)
            let total = Int64(max(1, db.pageCount) * 40)
            problems = try db.check(quick: false) { ticks in progress(min(Int64(ticks), total - 1), total) }
            progress(total, total)
            db.close()
        } catch {
            problems = ["\(error)"]
        }
        return StoreCheck(store: store, problems: problems, seconds: WallClock.monotonic() - started)
    }
}
