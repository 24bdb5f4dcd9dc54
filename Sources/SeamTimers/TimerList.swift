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
    /// Where the timer and the session are in the arrays `TimerList.build` was given: a caller
    /// that holds those rows in another form too finds them without a lookup by uuid.
    public var timerIndex: Int?
    public var sessionIndex: Int?

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
        TimerList.groupLabel(groupUUID: timer?["groupUUID"]?.stringValue, group: group, duplicateNames: duplicateNames)
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

    /// The label of a timer's group (`TimerListEntry.groupLabel`): "" for none, "(missing …)"
    /// when `groupUUID` names no group, the name with the short id when another group has it.
    public static func groupLabel(groupUUID: String?, group: [String: AttributeValue]?, duplicateNames: Set<String>) -> String {
        guard let groupUUID else { return "" }
        guard let g = group else { return "(missing \(ShortID.of(groupUUID)))" }
        guard let name = g["name"]?.stringValue else { return "" }
        return duplicateNames.contains(name) ? "\(name) (\(ShortID.of(g["uuid"]?.stringValue ?? "")))" : name
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
        var sessionByTimer: [String: Int] = [:]
        var orphans: [TimerListEntry] = []
        for (i, s) in sessions.enumerated() {
            if let t = s["timerUUID"]?.stringValue, timerUUIDs.contains(t), sessionByTimer[t] == nil {
                sessionByTimer[t] = i
            } else {
                let dangling = s["timerUUID"]?.stringValue != nil
                orphans.append(TimerListEntry(backing: .session(uuid: uuid(s)), timer: nil, session: s, group: nil,
                                              timerMissing: dangling, groupMissing: false, timerIndex: nil, sessionIndex: i))
            }
        }
        var entries: [TimerListEntry] = timers.enumerated().map { i, t in
            let groupUUID = t["groupUUID"]?.stringValue
            let group = groupUUID.flatMap { groupByUUID[$0] }
            let session = sessionByTimer[uuid(t)]
            return TimerListEntry(backing: .timer(uuid: uuid(t)), timer: t, session: session.map { sessions[$0] }, group: group,
                                  timerMissing: false, groupMissing: groupUUID != nil && group == nil, timerIndex: i, sessionIndex: session)
        }
        // Each key made once, not once per comparison: 100,000 timers are sorted in linear-ish time.
        entries = entries.map { (SortKey($0), $0) }.sorted { $0.0 < $1.0 }.map(\.1)
        orphans.sort {
            let ta = $0.session?["startedAt"]?.doubleValue ?? 0, tb = $1.session?["startedAt"]?.doubleValue ?? 0
            return ta != tb ? ta > tb : $0.id < $1.id
        }
        return entries + orphans
    }

    /// Grouped before ungrouped; then group order, group name, timer order, timer name (names
    /// with ASCII letters folded to lower case), uuid.
    private struct SortKey: Comparable {
        var ungrouped: Int, groupOrder: Int64, groupName: String, order: Int64, name: String, id: String

        init(_ e: TimerListEntry) {
            func fold(_ v: AttributeValue?) -> String {
                let text = v?.stringValue ?? ""
                guard text.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5a }) else { return text }
                return String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5a ? $0 | 0x20 : $0 }, as: UTF8.self)
            }
            ungrouped = e.group == nil ? 1 : 0
            groupOrder = e.group?["sortOrder"]?.integerValue ?? 0
            groupName = fold(e.group?["name"])
            order = e.timer?["sortOrder"]?.integerValue ?? 0
            name = fold(e.timer?["name"])
            id = e.id
        }

        /// Names by their UTF-8 bytes, which is code point order: as Swift's `<` orders text in
        /// normalization form C, without its cost on 100,000 rows.
        static func < (a: SortKey, b: SortKey) -> Bool {
            if a.ungrouped != b.ungrouped { return a.ungrouped < b.ungrouped }
            if a.groupOrder != b.groupOrder { return a.groupOrder < b.groupOrder }
            if a.groupName != b.groupName { return a.groupName.utf8.lexicographicallyPrecedes(b.groupName.utf8) }
            if a.order != b.order { return a.order < b.order }
            if a.name != b.name { return a.name.utf8.lexicographicallyPrecedes(b.name.utf8) }
            return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }
    }
}
