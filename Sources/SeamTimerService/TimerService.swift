import SeamBroker
import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamTimers

/// `org.seam.Timers`: the session lifecycle as broker methods, so that every client — the CLI,
/// the ticker, a plugin in C — gets the same behaviour, each operation atomic (it runs on the
/// broker's thread: two Starts of one timer at the same moment give one session).
public enum TimerService {
    public static let name = "org.seam.Timers"

    public static let description = """
        # The timer app's session lifecycle. Sessions live in the Local store and copy their timer
        # wholesale when they start; editing the timer later changes nothing in a running session.
        # Times are wall-clock; the broker's clock decides "now".
        interface org.seam.Timers

        # Starts a session of a timer (by uuid), with `note` as its note (empty without one). A
        # finished session of that timer is replaced in the same save; a running or paused one
        # makes this fail with AlreadyRunning.
        method Start(timer: string, note: ?string) -> (session: string, replaced: ?string, sequence: int)

        # Starts a session with no timer: one step of the given length; `note` as in Start.
        method Flash(seconds: int, name: ?string, note: ?string) -> (session: string, sequence: int)

        # The lifecycle of one session (by uuid). Steps that have ended by now are past first (as
        # Advance would), so a change applies to the step running now, and one refused with
        # WrongState still keeps them (the state it names is the stored one). Stop also ends a
        # session that does not fit its steps (its position, or more than 100 steps or 1,000
        # rounds); the others refuse it with InvalidTimer, as Reset does a session with no steps.
        method Pause(session: string) -> (session: string, state: string, sequence: int)
        method Resume(session: string) -> (session: string, state: string, sequence: int)
        method Reset(session: string) -> (session: string, state: string, sequence: int)
        method Skip(session: string) -> (session: string, state: string, sequence: int)
        method Stop(session: string) -> (session: string, state: string, sequence: int)

        # Deletes every finished session.
        method Clear() -> (deleted: int, sequence: ?int)

        type Transition (stepIndex: int, round: int, due: float, lateness: float)

        # Moves a running session past every step that has ended, on the wall clock (what the
        # ticker calls when a step is due). Nothing to do is no error. Lists the last 100 step
        # ends; earlierTransitions counts those before them.
        method Advance(session: string) -> (
          session: string,
          state: string,
          transitions: []Transition,
          earlierTransitions: int,
          nextDue: ?float,
          sequence: ?int
        )

        type Advanced (session: string, state: string, transitions: []Transition, earlierTransitions: int, nextDue: ?float)

        # Advance for many sessions in one save (what the ticker sends when several steps are
        # due at once). Sessions that are gone or not running are skipped.
        method AdvanceMany(sessions: []string) -> (advanced: []Advanced, sequence: ?int)

        error NotFound (what: string, uuid: string, message: string)
        error AlreadyRunning (session: string, message: string)
        error WrongState (state: string, message: string)
        error InvalidTimer (message: string)

        """

    public static var interface: ServiceInterface {
        // Every method writes Sessions alone (Start reads the timer).
        ServiceInterface(name: name, description: description, writes: { _ in ["Session"] }) { member, p, call in
            do throws(VarlinkError) {
                switch member {
                case "Start": return .success(try start(p, call))
                case "Flash": return .success(try flash(p, call))
                case "Pause", "Resume", "Reset", "Skip", "Stop": return .success(try lifecycle(member, p, call))
                case "Clear": return .success(try clear(call))
                case "Advance": return .success(try advance(p, call))
                case "AdvanceMany": return .success(try advanceMany(p, call))
                default: return .failure(.methodNotFound("\(name).\(member)"))
                }
            } catch {
                return .failure(error)
            }
        }
    }

    // MARK: - Errors

    static func notFound(_ what: String, _ uuid: String) -> VarlinkError {
        VarlinkError("\(name).NotFound", ["what": .string(what), "uuid": .string(uuid), "message": .string("no \(what) with uuid \(uuid)")])
    }

    static func wrongState(_ state: String, _ message: String) -> VarlinkError {
        VarlinkError("\(name).WrongState", ["state": .string(state), "message": .string(message)])
    }

    static func invalidTimer(_ message: String) -> VarlinkError {
        VarlinkError("\(name).InvalidTimer", ["message": .string(message)])
    }

    // MARK: - Methods

    private static func uuidParameter(_ p: JSONObject, _ key: String) throws(VarlinkError) -> String {
        guard let u = p[key]?.stringValue, !u.isEmpty else { throw .invalidParameter(key) }
        return u
    }

    /// The note a new session gets: the call's `note`; nil without one (or an empty one), so
    /// that the column's default ("") applies — and a Local store still served at a version
    /// before notes (its migration failed) keeps taking sessions.
    private static func noteParameter(_ p: JSONObject) throws(VarlinkError) -> AttributeValue? {
        switch p["note"] {
        case nil, .null?, .string("")?: return nil
        case .string(let note)?: return .string(note)
        default: throw .invalidParameter("note")
        }
    }

    private static func row(_ entity: String, _ uuid: String, _ call: ServiceCall) throws(VarlinkError) -> [String: AttributeValue]? {
        do { return try call.context.row(entity, uuid)?.values } catch { throw VarlinkError(error) }
    }

    static func start(_ p: JSONObject, _ call: ServiceCall) throws(VarlinkError) -> JSONObject {
        let timerUUID = try uuidParameter(p, "timer")
        let note = try noteParameter(p)
        guard let timer = try row("Timer", timerUUID, call) else { throw notFound("timer", timerUUID) }
        let existing: [Row]
        do { existing = try call.context.fetch(FetchRequest("Session", where: "timerUUID == $t", parameters: ["t": .uuid(timerUUID)])) } catch {
            throw VarlinkError(error)
        }
        var request = SaveRequest()
        var replaced: String?
        if let old = existing.first {
            let state = old.values["state"]?.stringValue ?? "?"
            guard state == "finished" else {
                throw VarlinkError("\(name).AlreadyRunning", ["session": .string(old.uuid),
                                                             "message": .string("'\(timer["name"]?.stringValue ?? timerUUID)' is already \(state)")])
            }
            request.delete("Session", old.uuid)
            replaced = old.uuid
        }
        let stepsText: String
        switch timer["steps"] {
        case .json(let t)?, .string(let t)?: stepsText = t
        default: stepsText = "[]"
        }
        let steps: [Step]
        do { steps = try Steps.decode(stepsText) } catch { throw invalidTimer(error.description) }
        let repeatCount = Int(timer["repeatCount"]?.integerValue ?? 1)
        let now = call.now
        let clock: SessionClock
        do { clock = try SessionClock.start(steps: steps.map(\.seconds), repeatCount: repeatCount, at: now) } catch {
            throw invalidTimer(error.description)
        }
        var values = clock.values
        let session = UUIDText.random()
        values["uuid"] = .uuid(session)
        values["timerUUID"] = .uuid(timerUUID)
        values["startedAt"] = .date(now)
        for key in ["name", "icon", "colour", "steps", "repeatCount"] { values[key] = timer[key] }
        // The sound too — when the Session table as served has it: a Local store may be served
        // at a version before sounds while its migration is pending (or after it failed).
        let served: Entity
        do { served = try call.context.servedEntity("Session") } catch { throw VarlinkError(error) }
        if served.attribute("sound") != nil { values["sound"] = timer["sound"] }
        if let note { values["note"] = note }
        request.insert("Session", values)
        let set = try call.save(request)
        return ["session": .string(session), "replaced": replaced.map(JSON.string) ?? .null, "sequence": .integer(set?.sequence ?? 0)]
    }

    static func flash(_ p: JSONObject, _ call: ServiceCall) throws(VarlinkError) -> JSONObject {
        guard let seconds = p["seconds"]?.int64Value, seconds > 0, seconds <= Int64(DurationText.maximum) else {
            throw .invalidParameter("seconds")
        }
        let label: String
        switch p["name"] {
        case nil, .null?: label = "Flash \(DurationText.format(Int(seconds)))"
        case .string(let name)?: label = name
        default: throw .invalidParameter("name")
        }
        let note = try noteParameter(p)
        let now = call.now
        let clock: SessionClock
        do { clock = try SessionClock.start(steps: [Int(seconds)], repeatCount: 1, at: now) } catch { throw invalidTimer(error.description) }
        var values = clock.values
        let session = UUIDText.random()
        values["uuid"] = .uuid(session)
        values["startedAt"] = .date(now)
        values["name"] = .string(label)
        values["steps"] = .json(Steps.encode([Step(label: label, seconds: Int(seconds))]))
        values["repeatCount"] = .integer(1)
        if let note { values["note"] = note }
        let set = try call.save(SaveRequest([.insert(entity: "Session", values: values)]))
        return ["session": .string(session), "sequence": .integer(set?.sequence ?? 0)]
    }

    static func lifecycle(_ member: String, _ p: JSONObject, _ call: ServiceCall) throws(VarlinkError) -> JSONObject {
        let uuid = try uuidParameter(p, "session")
        guard let session = try row("Session", uuid, call) else { throw notFound("session", uuid) }
        let now = call.now
        var clock: SessionClock
        do { clock = try SessionClock(session: session) } catch {
            // A session that does not fit its steps (written so by a plugin, say) can still be
            // stopped: its values are whatever it holds, its end is now.
            guard member == "Stop", session["state"]?.stringValue != SessionClock.State.finished.rawValue else {
                throw invalidTimer(error.description + "; `seam stop` ends it")
            }
            return try save(SessionClock.stopped(at: now), of: uuid, call)
        }
        // Steps that have ended by now (the ticker may be behind: restarting, or the machine
        // just woke) are past before a person's change applies: a skip skips the step running
        // now, a stop or pause comes after the steps that ended. A session that finished so is
        // stopped as it finished.
        let ended = clock.advance(to: now, listingAtMost: 1).listed
        if member == "Stop" && clock.state == .finished && !ended.isEmpty { return try save(clock, of: uuid, call) }
        do {
            switch member {
            case "Pause": try clock.pause(at: now)
            case "Resume": try clock.resume(at: now)
            case "Reset": try clock.reset(at: now)
            case "Skip": try clock.skip(at: now)
            default: try clock.stop(at: now)
            }
        } catch {
            // What has happened by now is kept, so that the state the error names is the one
            // stored (a session whose steps all ended is finished, not running in the past).
            if !ended.isEmpty { _ = try save(clock, of: uuid, call) }
            if member == "Reset" { throw invalidTimer(error.description) }
            throw wrongState(clock.state.rawValue, error.description)
        }
        return try save(clock, of: uuid, call)
    }

    /// Writes a session's clock; the reply of the lifecycle methods.
    private static func save(_ clock: SessionClock, of uuid: String, _ call: ServiceCall) throws(VarlinkError) -> JSONObject {
        let set = try call.save(SaveRequest([.update(entity: "Session", uuid: uuid, values: clock.values)]))
        return ["session": .string(uuid), "state": .string(clock.state.rawValue), "sequence": .integer(set?.sequence ?? call.context.sequence)]
    }

    static func clear(_ call: ServiceCall) throws(VarlinkError) -> JSONObject {
        let finished: [Row]
        do { finished = try call.context.fetch(FetchRequest("Session", where: "state == 'finished'")) } catch { throw VarlinkError(error) }
        guard !finished.isEmpty else { return ["deleted": .integer(0), "sequence": .null] }
        let set = try call.save(SaveRequest(finished.map { .delete(entity: "Session", uuid: $0.uuid) }))
        return ["deleted": .integer(Int64(finished.count)), "sequence": set.map { .integer($0.sequence) } ?? .null]
    }

    /// How many step ends a reply lists per session, the last ones; `earlierTransitions` counts
    /// the rest.
    static let listedTransitions = 100

    /// Advances `clock` to `now`: the reply's `transitions` (the last step ends) and
    /// `earlierTransitions` (how many ended before them), or nil when no step had ended.
    static func advanced(_ clock: inout SessionClock, to now: Double) -> (transitions: JSON, earlier: JSON)? {
        let (listed, earlier) = clock.advance(to: now, listingAtMost: listedTransitions)
        guard !listed.isEmpty else { return nil }
        let transitions: JSON = .array(listed.map { t in
            ["stepIndex": .integer(Int64(t.stepIndex)), "round": .integer(Int64(t.round)), "due": .double(t.due),
             "lateness": .double(t.lateness)]
        })
        return (transitions, .integer(Int64(earlier)))
    }

    static func advanceMany(_ p: JSONObject, _ call: ServiceCall) throws(VarlinkError) -> JSONObject {
        guard let list = p["sessions"]?.arrayValue, list.count <= Limits.maxSaveOperations else { throw .invalidParameter("sessions") }
        let now = call.now
        var request = SaveRequest()
        var advanced: [JSON] = []
        var seen = Set<String>()
        for item in list {
            guard let uuid = item.stringValue else { throw .invalidParameter("sessions") }
            guard seen.insert(uuid).inserted else { continue }  // named twice: advanced once
            guard let session = try row("Session", uuid, call), var clock = try? SessionClock(session: session), clock.state == .running else {
                continue
            }
            guard let ended = Self.advanced(&clock, to: now) else { continue }
            request.update("Session", uuid, clock.values)
            advanced.append(["session": .string(uuid), "state": .string(clock.state.rawValue), "transitions": ended.transitions,
                             "earlierTransitions": ended.earlier, "nextDue": clock.nextDue.map(JSON.double) ?? .null])
        }
        guard !request.operations.isEmpty else { return ["advanced": .array([]), "sequence": .null] }
        let set = try call.save(request)
        return ["advanced": .array(advanced), "sequence": set.map { .integer($0.sequence) } ?? .null]
    }

    static func advance(_ p: JSONObject, _ call: ServiceCall) throws(VarlinkError) -> JSONObject {
        let uuid = try uuidParameter(p, "session")
        guard let session = try row("Session", uuid, call) else { throw notFound("session", uuid) }
        var clock: SessionClock
        do { clock = try SessionClock(session: session) } catch { throw invalidTimer(error.description) }
        let advanced = Self.advanced(&clock, to: call.now)
        var sequence: JSON = .null
        if advanced != nil, let set = try call.save(SaveRequest([.update(entity: "Session", uuid: uuid, values: clock.values)])) {
            sequence = .integer(set.sequence)
        }
        return ["session": .string(uuid), "state": .string(clock.state.rawValue),
                "transitions": advanced?.transitions ?? .array([]), "earlierTransitions": advanced?.earlier ?? .integer(0),
                "nextDue": clock.nextDue.map(JSON.double) ?? .null, "sequence": sequence]
    }
}
