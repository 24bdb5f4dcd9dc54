import SeamSchema

/// Where a session is in its steps, and every way it moves: the timer domain's step arithmetic,
/// pure, on wall-clock Unix seconds (what the store keeps), so that a session's position after a
/// suspend, a restart or a long sleep is computed, never counted.
///
/// A session runs its steps in order, `repeatCount` rounds. While running, `stepEndsAt` is when
/// the current step ends. While paused, `pausedAt` is when it paused and `stepEndsAt` when the
/// step would have ended had it not: the time left is their difference, and resuming shifts
/// `stepEndsAt` by the pause. A finished session has `finishedAt` (for a session that ran out,
/// the moment it was due, not the moment someone noticed).
public struct SessionClock: Sendable, Equatable {
    public enum State: String, Sendable { case running, paused, finished }

    /// Each step's length in seconds.
    public var steps: [Int]
    /// How many rounds of the steps (at least 1).
    public var repeatCount: Int
    public var state: State
    public var stepIndex: Int
    public var round: Int
    public var stepEndsAt: Double?
    public var pausedAt: Double?
    public var finishedAt: Double?

    /// Limits that keep every computation here small.
    public static let maxSteps = 100
    public static let maxRounds = 1_000

    /// A new session, running from its first step at `now`.
    public static func start(steps: [Int], repeatCount: Int, at now: Double) throws(TimerInputError) -> SessionClock {
        guard !steps.isEmpty else { throw TimerInputError("a timer needs at least one step to start") }
        guard steps.count <= maxSteps else { throw TimerInputError("a timer has at most \(maxSteps) steps") }
        guard steps.allSatisfy({ $0 > 0 }) else { throw TimerInputError("every step lasts at least one second") }
        guard (1...maxRounds).contains(repeatCount) else { throw TimerInputError("repeat is 1 to \(maxRounds) rounds") }
        return SessionClock(steps: steps, repeatCount: repeatCount, state: .running, stepIndex: 0, round: 0,
                            stepEndsAt: now + Double(steps[0]), pausedAt: nil, finishedAt: nil)
    }

    /// Reads a Session row (as the store and the wire give it).
    public init(session values: [String: AttributeValue]) throws(TimerInputError) {
        let stepsText: String
        switch values["steps"] {
        case .json(let t)?, .string(let t)?: stepsText = t
        default: stepsText = "[]"
        }
        steps = try Steps.decode(stepsText).map(\.seconds)
        guard let state = values["state"]?.stringValue.flatMap(State.init(rawValue:)) else {
            throw TimerInputError("the session's state is not running, paused or finished")
        }
        self.state = state
        // The bounds a start holds to, whatever wrote the row (a plugin may write sessions): an
        // advance walks at most steps × rounds step ends, so these keep it short.
        guard steps.count <= Self.maxSteps else { throw TimerInputError("the session has more than \(Self.maxSteps) steps") }
        let rounds = values["repeatCount"]?.integerValue ?? 1
        guard (1...Int64(Self.maxRounds)).contains(rounds) else {
            throw TimerInputError("the session repeats \(rounds) times; 1 to \(Self.maxRounds) are possible")
        }
        repeatCount = Int(rounds)
        stepIndex = Int(values["stepIndex"]?.integerValue ?? 0)
        round = Int(values["round"]?.integerValue ?? 0)
        stepEndsAt = values["stepEndsAt"]?.dateValue
        pausedAt = values["pausedAt"]?.dateValue
        finishedAt = values["finishedAt"]?.dateValue
        if state != .finished {
            guard !steps.isEmpty, steps.indices.contains(stepIndex), (0..<repeatCount).contains(round), stepEndsAt != nil,
                  state != .paused || pausedAt != nil
            else { throw TimerInputError("the session's position does not fit its steps") }
        }
    }

    private init(steps: [Int], repeatCount: Int, state: State, stepIndex: Int, round: Int, stepEndsAt: Double?, pausedAt: Double?,
                 finishedAt: Double?) {
        self.steps = steps
        self.repeatCount = repeatCount
        self.state = state
        self.stepIndex = stepIndex
        self.round = round
        self.stepEndsAt = stepEndsAt
        self.pausedAt = pausedAt
        self.finishedAt = finishedAt
    }

    /// The attributes this clock owns, as a save writes them.
    public var values: [String: AttributeValue] {
        ["state": .string(state.rawValue), "stepIndex": .integer(Int64(stepIndex)), "round": .integer(Int64(round)),
         "stepEndsAt": stepEndsAt.map(AttributeValue.date) ?? .null, "pausedAt": pausedAt.map(AttributeValue.date) ?? .null,
         "finishedAt": finishedAt.map(AttributeValue.date) ?? .null]
    }

    /// Seconds left in the current step (nil once finished).
    public func remaining(at now: Double) -> Double? {
        guard let end = stepEndsAt else { return nil }
        switch state {
        case .running: return max(0, end - now)
        case .paused: return max(0, end - (pausedAt ?? now))
        case .finished: return nil
        }
    }

    /// When the ticker must act next: the end of the current step of a running session.
    public var nextDue: Double? { state == .running ? stepEndsAt : nil }

    // MARK: - What a person does

    public mutating func pause(at now: Double) throws(TimerInputError) {
        guard state == .running else { throw TimerInputError("the session is \(state.rawValue), not running") }
        state = .paused
        pausedAt = now
    }

    public mutating func resume(at now: Double) throws(TimerInputError) {
        guard state == .paused, let paused = pausedAt, let end = stepEndsAt else {
            throw TimerInputError("the session is \(state.rawValue), not paused")
        }
        state = .running
        // The time left when paused, from now: right however the wall clock moved meanwhile
        // (set back, the difference is still the time left).
        stepEndsAt = now + (end - paused)
        pausedAt = nil
    }

    /// Back to the first step of the first round; a paused session stays paused there, a finished
    /// one runs again. A session with no steps (a finished run from before release 4) has none
    /// to run: refused.
    public mutating func reset(at now: Double) throws(TimerInputError) {
        guard !steps.isEmpty else { throw TimerInputError("the session has no steps to run again; start its timer instead") }
        stepIndex = 0
        round = 0
        finishedAt = nil
        stepEndsAt = now + Double(steps.first ?? 0)
        if state == .paused {
            pausedAt = now
        } else {
            state = .running
            pausedAt = nil
        }
    }

    /// Ends the current step now and moves to the next (or finishes after the last).
    public mutating func skip(at now: Double) throws(TimerInputError) {
        guard state != .finished else { throw TimerInputError("the session has finished") }
        let wasPaused = state == .paused
        state = .running
        stepEndsAt = now
        pausedAt = nil
        _ = advance(to: now)
        if wasPaused && state == .running {
            state = .paused
            pausedAt = now
        }
    }

    public mutating func stop(at now: Double) throws(TimerInputError) {
        guard state != .finished else { throw TimerInputError("the session has already finished") }
        self = Self.stopped(at: now)
    }

    /// The values of a session stopped at `now`: what Stop writes, also over a session whose
    /// position does not fit its steps (which no other change can be made to).
    public static func stopped(at now: Double) -> SessionClock {
        SessionClock(steps: [], repeatCount: 1, state: .finished, stepIndex: 0, round: 0, stepEndsAt: nil, pausedAt: nil, finishedAt: now)
    }

    // MARK: - What the ticker does

    /// One step that ended: which one, when it was due, and how late it was noticed.
    public struct Transition: Sendable, Equatable {
        public var stepIndex: Int
        public var round: Int
        public var due: Double
        public var lateness: Double

        public init(stepIndex: Int, round: Int, due: Double, lateness: Double) {
            self.stepIndex = stepIndex
            self.round = round
            self.due = due
            self.lateness = lateness
        }
    }

    /// Moves a running session past every step that has ended by `now`. Each next step starts
    /// when the one before was due — not when this runs — so a session that was not looked at
    /// for an hour lands exactly where it would have been. Returns the steps that ended.
    @discardableResult
    public mutating func advance(to now: Double) -> [Transition] {
        advance(to: now, listingAtMost: .max).listed
    }

    /// `advance(to:)`, listing only the last `limit` steps that ended and counting those before
    /// them: a session of 100 one-second steps repeated 1,000 times, a day overdue, passes
    /// 86,400 step ends, and a reply listing them all would run to megabytes.
    public mutating func advance(to now: Double, listingAtMost limit: Int) -> (listed: [Transition], earlier: Int) {
        precondition(limit > 0, "list at least one step end")
        var ended: [Transition] = []
        var earlier = 0
        while state == .running, let due = stepEndsAt, due <= now {
            ended.append(Transition(stepIndex: stepIndex, round: round, due: due, lateness: now - due))
            if ended.count - limit >= max(limit, 1024) {
                // Drop the oldest in bulk, so that keeping the last few stays linear.
                earlier += ended.count - limit
                ended.removeFirst(ended.count - limit)
            }
            if stepIndex + 1 < steps.count {
                stepIndex += 1
            } else if round + 1 < repeatCount {
                round += 1
                stepIndex = 0
            } else {
                state = .finished
                finishedAt = due
                stepEndsAt = nil
                break
            }
            stepEndsAt = due + Double(steps[stepIndex])
        }
        if ended.count > limit {
            earlier += ended.count - limit
            ended.removeFirst(ended.count - limit)
        }
        return (ended, earlier)
    }
}

extension AttributeValue {
    /// A date as seconds, whichever numeric form it came in.
    var dateValue: Double? {
        switch self {
        case .date(let d), .double(let d): return d
        case .integer(let i): return Double(i)
        default: return nil
        }
    }
}
