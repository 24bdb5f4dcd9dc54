import SeamCommandLine
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamTimers

/// What `seam watch` shows, as a pure function of the sessions it follows and the time: the
/// live result of a query channel on `Session`, kept current by its diffs, drawn as lines of at
/// most a given width in terminal columns (a CJK character or an emoji takes two). No I/O: the
/// command feeds it updates and ticks, and writes its lines.
public struct WatchBoard: Sendable {
    /// Something worth a line of its own (and, for `finished`, the bell).
    public struct Event: Sendable, Equatable {
        /// `now`: a session as the first result (or a resync) found it.
        public enum Kind: String, Sendable { case now, started, step, paused, resumed, finished, removed }
        public var kind: Kind
        public var uuid: String
        public var text: String
        public init(kind: Kind, uuid: String, text: String) {
            self.kind = kind
            self.uuid = uuid
            self.text = text
        }
    }

    /// When `seam watch` rings the terminal's bell: at every step a session moves to and when it
    /// finishes (`steps`, the default: a Pomodoro's Work ending is heard), when one finishes
    /// (`end`), or never (`off`).
    public enum Bell: String, Sendable, CaseIterable {
        case steps, end, off

        /// Whether these events ring it.
        public func rings(for events: [Event]) -> Bool {
            switch self {
            case .steps: events.contains { $0.kind == .step || $0.kind == .finished }
            case .end: events.contains { $0.kind == .finished }
            case .off: false
            }
        }
    }

    /// One line of the screen; `highlighted` lines are drawn in reverse video.
    public struct Line: Sendable, Equatable {
        public var text: String
        public var highlighted: Bool
    }

    public private(set) var live = LiveResult()
    /// Sessions that finished while we watched, until when (wall-clock seconds) they stand out.
    public private(set) var highlightedUntil: [String: Double] = [:]
    /// Seconds a finished session stays highlighted.
    public static let highlightSeconds = 30.0

    /// Seconds east of UTC for the times of day shown (the caller's local zone).
    public var utcOffset: Int

    public init(utcOffset: Int = 0) { self.utcOffset = utcOffset }

    /// The sessions in the order the channel keeps them (by start time).
    public var sessions: [JSONObject] { live.rows }

    /// Applies one update from the channel at wall time `now`; returns what happened, for the
    /// bell and for plain output. The first result (and a resync) reports every session once.
    public mutating func apply(_ update: SubscriptionUpdate, now: Double) throws(LiveResult.Mismatch) -> [Event] {
        let before = Dictionary(live.rows.map { ($0["uuid"]?.stringValue ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        try live.apply(update)
        var events: [Event] = []
        switch update.kind {
        case .result, .resync:
            for row in live.rows { events.append(event(.now, row, now: now)) }
            // A resync may find a highlighted session started again, or gone, meanwhile.
            let finished = Set(live.rows.filter { $0["state"]?.stringValue == "finished" }.compactMap { $0["uuid"]?.stringValue })
            highlightedUntil = highlightedUntil.filter { finished.contains($0.key) }
        case .diff:
            for d in update.deleted {
                let name = before[d.uuid].map(Self.name) ?? d.uuid
                events.append(Event(kind: .removed, uuid: d.uuid, text: "\(name): removed"))
                highlightedUntil[d.uuid] = nil
            }
            for i in update.inserted { events.append(event(.started, i.row, now: now)) }
            for u in update.updated {
                let old = before[u.uuid]
                let state = u.row["state"]?.stringValue, oldState = old?["state"]?.stringValue
                let kind: Event.Kind
                if state != oldState {
                    switch state {
                    case "finished": kind = .finished
                    case "paused": kind = .paused
                    default: kind = oldState == "paused" ? .resumed : .started
                    }
                } else if u.changedKeys.contains("stepIndex") || u.changedKeys.contains("round") {
                    kind = .step
                } else {
                    continue
                }
                if kind == .finished {
                    highlightedUntil[u.uuid] = now + Self.highlightSeconds
                } else if state != "finished" {
                    // Reset and running again: "just finished" no longer holds.
                    highlightedUntil[u.uuid] = nil
                }
                events.append(event(kind, u.row, now: now))
            }
        case .end:
            break
        }
        return events
    }

    /// The screen at `now`: a header, one line per session (as many as fit in `height`), each cut
    /// to `width` columns.
    public func lines(now: Double, width: Int, height: Int) -> [Line] {
        let rows = live.rows
        let counts = Dictionary(grouping: rows, by: { $0["state"]?.stringValue ?? "?" }).mapValues(\.count)
        let summary = ["running", "paused", "finished"].compactMap { s in counts[s].map { "\($0) \(s)" } }
        var out = [Line(text: "seam watch · \(timeOfDay(now)) · " + (rows.isEmpty ? "no sessions" : summary.joined(separator: ", ")),
                        highlighted: false)]
        let room = max(0, height - 2)
        let shown = rows.count > room ? max(0, room - 1) : rows.count
        let nameWidth = min(24, max(4, rows.prefix(shown).map { DisplayWidth.columns(Self.name($0)) }.max() ?? 4))
        for row in rows.prefix(shown) {
            let uuid = row["uuid"]?.stringValue ?? ""
            let lit = (highlightedUntil[uuid] ?? 0) > now
            out.append(Line(text: describe(row, now: now, nameWidth: nameWidth), highlighted: lit))
        }
        if shown < rows.count { out.append(Line(text: "… and \(rows.count - shown) more (a taller terminal shows them)", highlighted: false)) }
        out.append(Line(text: rows.isEmpty ? "start one with: seam flash 25m, or seam start TIMER · Ctrl-C quits" : "Ctrl-C quits",
                        highlighted: false))
        return out.map { Line(text: DisplayWidth.cut($0.text, to: width), highlighted: $0.highlighted) }
    }

    /// Forgets highlights that have run out; true when one did (the screen should be drawn).
    public mutating func expireHighlights(now: Double) -> Bool {
        let before = highlightedUntil.count
        highlightedUntil = highlightedUntil.filter { $0.value > now }
        return highlightedUntil.count != before
    }

    // MARK: - Text

    static func name(_ row: JSONObject) -> String {
        let n = Terminal.printable(row["name"]?.stringValue ?? "")
        return n.isEmpty ? "(unnamed)" : n
    }

    /// `Tea  ▶ running  Steep 2/3 · round 1/2  3:12 left  “for the guests”` (the note, when there is one)
    func describe(_ row: JSONObject, now: Double, nameWidth: Int) -> String {
        let padded = DisplayWidth.padded(DisplayWidth.cut(Self.name(row), to: nameWidth), to: nameWidth)
        guard let clock = Self.clock(row) else { return "\(padded)  ? unreadable session" }
        let steps = Self.steps(row)
        var parts: [String] = []
        switch clock.state {
        case .running: parts.append("▶ running ")
        case .paused: parts.append("‖ paused  ")
        case .finished: parts.append("✓ finished")
        }
        if clock.state != .finished, steps.indices.contains(clock.stepIndex) {
            var step = "\(Terminal.printable(steps[clock.stepIndex].label)) \(clock.stepIndex + 1)/\(steps.count)"
            if clock.repeatCount > 1 { step += " · round \(clock.round + 1)/\(clock.repeatCount)" }
            parts.append(step)
        }
        switch clock.state {
        case .running: parts.append(clock.remaining(at: now).map { DurationText.clock($0) + " left" } ?? "")
        case .paused: parts.append(clock.remaining(at: now).map { DurationText.clock($0) + " left, paused" } ?? "paused")
        case .finished: parts.append(clock.finishedAt.map { "at " + timeOfDay($0) } ?? "")
        }
        if let note = row["note"]?.stringValue, !note.isEmpty { parts.append("“\(Terminal.printable(note))”") }
        return ([padded] + parts.filter { !$0.isEmpty }).joined(separator: "  ")
    }

    func event(_ kind: Event.Kind, _ row: JSONObject, now: Double) -> Event {
        Event(kind: kind, uuid: row["uuid"]?.stringValue ?? "", text: describe(row, now: now, nameWidth: DisplayWidth.columns(Self.name(row))))
    }

    static func clock(_ row: JSONObject) -> SessionClock? {
        guard let entity = TimerApp.schema.entity("Session")?.entity else { return nil }
        var values: [String: AttributeValue] = [:]
        for (k, v) in row {
            guard let a = entity.attribute(k), case .success(let value) = WireValues.decode(v, as: a.type) else { continue }
            values[k] = value
        }
        return try? SessionClock(session: values)
    }

    static func steps(_ row: JSONObject) -> [Step] {
        guard let json = row["steps"] else { return [] }
        return (try? Steps.decode(String(decoding: json.encoded(), as: UTF8.self))) ?? []
    }

    /// `HH:MM:SS` of wall time `t`, in the board's zone.
    public func timeOfDay(_ t: Double) -> String {
        let s = ((Int(t.rounded(.down)) + utcOffset) % 86_400 + 86_400) % 86_400
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(two(s / 3600)):\(two(s / 60 % 60)):\(two(s % 60))"
    }
}
