import SeamSchema

/// One line of the unified list: a timer with its session if any, or a session with no timer.
///
/// The split-store pattern's UI-side join (the seed's `TimerBacking`): timers live in Cloud,
/// sessions in Local, and nothing links them but `Session.timerUUID`, so the join happens here,
/// in memory, by uuid.
public struct TimerListEntry: Sendable, Hashable {
    public enum Backing: Sendable, Hashable {
        /// A saved timer, running or not.
        case timer(uuid: String)
        /// A session with no timer: a flash timer, or one whose timer is gone.
        case session(uuid: String)
    }

    public var backing: Backing
    public var timer: [String: AttributeValue]?
    public var session: [String: AttributeValue]?
    /// The timer's group, when it has one that exists.
    public var group: [String: AttributeValue]?
    /// The session names a timer that does not exist (deleted on another machine, say).
    public var timerMissing: Bool
    /// The timer names a group that does not exist (it never arrived through sync, say).
    public var groupMissing: Bool

    public var id: String {
        switch backing {
        case .timer(let u), .session(let u): return u
        }
    }

    /// The name to show: the session's copy while it runs, else the timer's.
    public var name: String { (session?["name"]?.stringValue).flatMap { $0.isEmpty ? nil : $0 } ?? timer?["name"]?.stringValue ?? "" }

    /// The session's note, when it has one that is not empty.
    public var note: String? { (session?["note"]?.stringValue).flatMap { $0.isEmpty ? nil : $0 } }

    /// The group as a person should read it, honest about what sync can deliver: its name;
    /// its name and short id when another group has the same name (made offline on two
    /// machines); "(missing 1a2b3c4d)" when the group it names is not there; "" for none.
    public func groupLabel(duplicateNames: Set<String>) -> String {
        if groupMissing { return "(missing \(ShortID.of(timer?["groupUUID"]?.stringValue ?? "")))" }
        guard let g = group, let name = g["name"]?.stringValue else { return "" }
        return duplicateNames.contains(name) ? "\(name) (\(ShortID.of(g["uuid"]?.stringValue ?? "")))" : name
    }
}

/// Builds the unified list.
public enum TimerList {
    /// The names two or more groups share.
    public static func duplicateNames(_ groups: [[String: AttributeValue]]) -> Set<String> {
        var seen: [String: Int] = [:]
        for g in groups { if let n = g["name"]?.stringValue { seen[n, default: 0] += 1 } }
        return Set(seen.filter { $0.value > 1 }.keys)
    }

    /// Merges `timers`, `sessions` and `groups` (rows as attribute dictionaries) into the list a
    /// person reads, in the order they expect: grouped timers by group order and name, then
    /// ungrouped timers, each by sort order and name (ASCII case folded); then sessions without
    /// a timer, newest first. Every lookup handles "not found".
    public static func build(
        timers: [[String: AttributeValue]], sessions: [[String: AttributeValue]], groups: [[String: AttributeValue]]
    ) -> [TimerListEntry] {
        func uuid(_ r: [String: AttributeValue]) -> String { r["uuid"]?.stringValue ?? "" }
        let groupByUUID = Dictionary(groups.map { (uuid($0), $0) }, uniquingKeysWith: { a, _ in a })
        let timerUUIDs = Set(timers.map(uuid))
        var sessionByTimer: [String: [String: AttributeValue]] = [:]
        var orphans: [TimerListEntry] = []
        for s in sessions {
            if let t = s["timerUUID"]?.stringValue, timerUUIDs.contains(t), sessionByTimer[t] == nil {
                sessionByTimer[t] = s
            } else {
                let dangling = s["timerUUID"]?.stringValue != nil
                orphans.append(TimerListEntry(backing: .session(uuid: uuid(s)), timer: nil, session: s, group: nil,
                                              timerMissing: dangling, groupMissing: false))
            }
        }
        var entries: [TimerListEntry] = timers.map { t in
            let groupUUID = t["groupUUID"]?.stringValue
            let group = groupUUID.flatMap { groupByUUID[$0] }
            return TimerListEntry(backing: .timer(uuid: uuid(t)), timer: t, session: sessionByTimer[uuid(t)], group: group,
                                  timerMissing: false, groupMissing: groupUUID != nil && group == nil)
        }
        entries.sort { a, b in
            let ka = sortKey(a), kb = sortKey(b)
            return ka.lexicographicallyPrecedes(kb)
        }
        orphans.sort {
            let ta = $0.session?["startedAt"]?.doubleValue ?? 0, tb = $1.session?["startedAt"]?.doubleValue ?? 0
            return ta != tb ? ta > tb : $0.id < $1.id
        }
        return entries + orphans
    }

    /// Grouped before ungrouped; then group order, group name, timer order, timer name, uuid.
    private static func sortKey(_ e: TimerListEntry) -> [String] {
        func pad(_ v: AttributeValue?) -> String {
            let n = v?.integerValue ?? 0
            return String(UInt64(bitPattern: n) ^ (1 << 63), radix: 16).leftPadded(16)
        }
        func fold(_ v: AttributeValue?) -> String { String((v?.stringValue ?? "").map { $0.isASCII ? Character($0.lowercased()) : $0 }) }
        let g = e.group
        return [g == nil ? "1" : "0", pad(g?["sortOrder"]), fold(g?["name"]), pad(e.timer?["sortOrder"]), fold(e.timer?["name"]), e.id]
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
