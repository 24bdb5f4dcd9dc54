/// A supervised role's life as a state machine: what happened goes in (`Event`), what to do
/// comes out (`Action`). No process, no clock, no loop: `Supervisor` spawns, signals,
/// reaps and keeps the timers, feeds this what came of them, and does what it answers; the
/// times it is given are the monotonic clock's.
///
///     waiting ──started──▶ running ──exited──▶ waiting (backing off) ──restartDue──▶ start
///        │                    │  └─ exited, one-shot, retired or seamd stopping ──▶ stopped
///        └─failedToStart──▶ waiting (backing off), or stopped (one-shot)
///
/// A reload asked of a running role terminates it and starts it again as soon as it has
/// exited, with no crash counted and no backoff; a retired one is never started again.
struct RoleLifecycle: Equatable {
    enum State: Equatable {
        /// Not running: not started yet (`restartAt` nil), or backing off until `restartAt`.
        case waiting(restartAt: Double?)
        case running(pid: Int32, since: Double)
        case stopped
    }

    enum Event: Equatable {
        /// The process was spawned.
        case started(pid: Int32, at: Double)
        /// It could not be spawned (no program, no socket): a crash at once.
        case failedToStart(String, at: Double)
        /// It was reaped: how it ended (`exit`, with its last line of output if any), and whether
        /// that was a success.
        case exited(String, succeeded: Bool, at: Double)
        /// Its backoff is over.
        case restartDue
        /// Start it again now with a new configuration, as after a clean start.
        case reloadAsked
        /// Its configuration went away: stop it for good.
        case retireAsked
        /// seamd is stopping: nothing starts again.
        case shutdown
        /// seamd stopped it while stopping (it was waited for, or killed).
        case stoppedAtShutdown
    }

    enum Action: Equatable {
        case start
        /// SIGTERM to the process.
        case terminate(pid: Int32)
        /// Start it when `seconds` have passed (`restartDue` then).
        case restart(after: Double)
        /// Forget a restart that was scheduled.
        case cancelRestart
        /// A one-shot process ended, or could not start: tell whoever it ran for.
        case oneShotEnded(String)
    }

    /// Run once for a task, never restarted.
    let oneShot: Bool
    private(set) var state = State.waiting(restartAt: nil)
    /// Starts after the first.
    private(set) var restarts = 0
    /// How it last failed: how it ended, or why it could not start (nil once a reload clears it).
    private(set) var lastError: String?
    /// Stopped for good: never started again.
    private(set) var retired = false
    /// Terminated to be started again at once when it has exited.
    private(set) var reloading = false
    private(set) var backoff = Backoff()

    init(oneShot: Bool) { self.oneShot = oneShot }

    var pid: Int32? {
        if case .running(let pid, _) = state { return pid }
        return nil
    }

    var startedAt: Double? {
        if case .running(_, let since) = state { return since }
        return nil
    }

    var restartAt: Double? {
        if case .waiting(let at) = state { return at }
        return nil
    }

    /// `running`, `waiting` or `stopped`, as `seam status` shows it.
    var name: String {
        switch state {
        case .running: return "running"
        case .waiting: return "waiting"
        case .stopped: return "stopped"
        }
    }

    /// Takes `event`; `stopping` says whether seamd is shutting down. Returns what to do, in order.
    mutating func handle(_ event: Event, stopping: Bool) -> [Action] {
        switch event {
        case .started(let pid, let at):
            state = .running(pid: pid, since: at)
            return []
        case .failedToStart(let message, let at):
            lastError = message
            if oneShot {
                state = .stopped
                return [.oneShotEnded(message)]
            }
            return backOff(uptime: 0, at: at, stopping: stopping)
        case .exited(let how, let succeeded, let at):
            let uptime = startedAt.map { at - $0 } ?? 0
            if reloading, !stopping, !retired { return startAgainNow() }
            if stopping || retired {
                state = .stopped
                return []
            }
            lastError = succeeded && oneShot ? nil : how
            if oneShot {
                state = .stopped
                return [.oneShotEnded(how)]
            }
            return backOff(uptime: uptime, at: at, stopping: stopping)
        case .restartDue:
            guard case .waiting = state, !stopping, !retired else { return [] }
            restarts += 1
            state = .waiting(restartAt: nil)
            return [.start]
        case .reloadAsked:
            guard !retired, !stopping else { return [] }
            backoff = Backoff()
            lastError = nil
            if let pid {
                reloading = true
                return [.terminate(pid: pid)]
            }
            return [.cancelRestart] + startAgainNow()
        case .retireAsked:
            retired = true
            if let pid { return [.cancelRestart, .terminate(pid: pid)] }
            state = .stopped
            return [.cancelRestart]
        case .shutdown:
            if case .waiting = state { state = .waiting(restartAt: nil) }
            return [.cancelRestart]
        case .stoppedAtShutdown:
            state = .stopped
            return []
        }
    }

    /// Started again at once, as after a clean start (counted as a restart).
    private mutating func startAgainNow() -> [Action] {
        reloading = false
        state = .waiting(restartAt: nil)
        restarts += 1
        return [.start]
    }

    /// Waits its backoff before starting again (nothing starts while seamd stops).
    private mutating func backOff(uptime: Double, at: Double, stopping: Bool) -> [Action] {
        guard !stopping else {
            state = .stopped
            return []
        }
        let delay = backoff.delay(afterRunning: uptime)
        state = .waiting(restartAt: at + delay)
        return [.restart(after: delay)]
    }
}
