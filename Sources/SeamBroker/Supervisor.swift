import SeamJSON
import SeamProtocol
import SeamSystem

/// One supervised process: its lifecycle (`RoleLifecycle`, pure) and the descriptors, timer and
/// connection seamd keeps for it.
final class SupervisedProcess {
    let spec: RoleSpec
    var life: RoleLifecycle
    var restartTimer: Int?
    /// The read end of the pipe its stdout and stderr go to, and the part of a line not yet logged.
    var output: Int32 = -1
    var partialLine: [UInt8] = []
    var lastLine: String?
    var connection: Connection?
    /// The process group of its last run while something it left there (that ignored SIGTERM)
    /// awaits its SIGKILL: killed at shutdown too, if that comes first.
    var leftGroup: Int32?

    init(spec: RoleSpec) {
        self.spec = spec
        life = RoleLifecycle(oneShot: spec.oneShot)
    }

    var pid: Int32? { life.pid }
    var retired: Bool { life.retired }
    var lastError: String? { life.lastError }
}

/// What a `Supervisor` asks of the broker that hosts it.
protocol SupervisorHost: AnyObject {
    /// Serves `fd`, one end of a role's socket, as that role's connection (its Hello already said).
    func connect(role p: SupervisedProcess, fd: Int32, peer: PeerCredentials) -> Connection
    /// A role ended: what it sent before it ended is handled, then its connection closed.
    func roleEnded(_ c: Connection)
    /// A one-shot process ended (or could not start); `how` says how.
    func oneShotEnded(_ p: SupervisedProcess, _ how: String)
}

/// Supervision: seamd starts its role processes, hands each a connected socket on fd 3
/// (`SEAM_FD=3`) whose connection already holds the role, logs their output under their
/// name, and restarts them with backoff when they die. Each process's life is a
/// `RoleLifecycle`; this type performs what it answers. One thread: the event loop's.
final class Supervisor {
    private(set) var processes: [SupervisedProcess] = []
    weak var host: (any SupervisorHost)?
    private let loop: EventLoop
    private let log: Logger
    /// The broker's socket, told to every role (`SEAM_SOCKET`).
    private let socketPath: String
    /// Set by `stopAll`: nothing is started or restarted from then on.
    private(set) var stopping = false

    init(loop: EventLoop, log: Logger, socketPath: String) {
        self.loop = loop
        self.log = log
        self.socketPath = socketPath
    }

    private var clock: any Clock { loop.clock }

    /// Starts the configured roles, and the sweep that collects the ones that end.
    func startAll(_ configuration: SupervisorConfiguration) {
        for problem in configuration.problems { log.error(problem) }
        processes = configuration.roles.map(SupervisedProcess.init)
        for p in processes { start(p) }
        // Even with no role configured: a migration worker may be started later.
        reapPeriodically()
    }

    /// Starts one more process (a migration worker, the sync worker), forgetting the ended ones
    /// of its role that will not start again.
    func launch(_ p: SupervisedProcess) {
        processes.removeAll { $0.spec.role == p.spec.role && $0.pid == nil && ($0.retired || $0.spec.oneShot) }
        processes.append(p)
        start(p)
    }

    /// The process of `role` that has not been retired, if there is one.
    func active(role: String) -> SupervisedProcess? { processes.first { $0.spec.role == role && !$0.retired } }

    /// SIGCHLD reaches the signalfd only while no other thread leaves it unblocked; a slow sweep
    /// makes sure no death goes unnoticed for longer than a second anyway.
    private func reapPeriodically() {
        loop.after(1) { [weak self] in
            guard let self, !self.stopping else { return }
            self.reap()
            self.reapPeriodically()
        }
    }

    private func start(_ p: SupervisedProcess) {
        p.restartTimer = nil
        guard !stopping else { return }
        let program = p.spec.command[0]
        guard let path = Processes.find(program) else {
            fail(p, "program not found: \(program) (looked beside seamd and on PATH)")
            return
        }
        let ends: (Int32, Int32)
        let pipe: (read: Int32, write: Int32)
        do {
            ends = try UnixSocket.pair()
            do { pipe = try Pipes.make() } catch {
                Descriptors.close(ends.0)
                Descriptors.close(ends.1)
                throw error
            }
        } catch {
            fail(p, "cannot make its socket: \(error)")
            return
        }
        var environment = Processes.environment
        for key in ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET"] { environment[key] = nil }
        for (k, v) in p.spec.environment { environment[k] = v }
        environment["SEAM_FD"] = "3"
        environment["SEAM_ROLE"] = p.spec.name
        environment["SEAM_SOCKET"] = socketPath
        environment[Processes.parentPIDVariable] = String(Environment.processID)
        let pid: Int32
        do {
            // Its own process group: a Ctrl-C meant for seamd reaches seamd, which stops it in order.
            pid = try Processes.spawn(path, arguments: Array(p.spec.command.dropFirst()), environment: environment,
                                      descriptors: [-1, pipe.write, pipe.write, ends.1], placement: .init(ownGroup: true))
        } catch {
            for fd in [ends.0, ends.1, pipe.read, pipe.write] { Descriptors.close(fd) }
            fail(p, "cannot start \(path): \(error.message)")
            return
        }
        Descriptors.close(ends.1)
        Descriptors.close(pipe.write)
        perform(p.life.handle(.started(pid: pid, at: clock.monotonic), stopping: stopping), for: p)
        p.output = pipe.read
        p.partialLine = []
        UnixSocket.setNonBlocking(ends.0, true)
        UnixSocket.setNonBlocking(pipe.read, true)
        do {
            var peer: PeerCredentials
            do { peer = try UnixSocket.peerCredentials(ends.0) } catch {
                Descriptors.close(ends.0)  // unserved: the role reads end-of-file on fd 3, and exits
                throw error
            }
            peer.pid = pid
            if let host { p.connection = host.connect(role: p, fd: ends.0, peer: peer) } else { Descriptors.close(ends.0) }
            try loop.watch(pipe.read, .read) { [unowned self, unowned p] _ in self.readOutput(of: p) }
        } catch {
            log.error("\(p.spec.name): cannot watch its output: \(error)")
        }
        log.info("started \(p.spec.name) (pid \(pid)): \(([path] + p.spec.command.dropFirst()).joined(separator: " "))")
    }

    /// A start that failed before the process ran counts as a crash at once: backoff, not a busy loop.
    private func fail(_ p: SupervisedProcess, _ message: String) {
        let actions = p.life.handle(.failedToStart(message, at: clock.monotonic), stopping: stopping)
        if case .restart(let delay)? = actions.first {
            log.error("\(p.spec.name): \(message); trying again in \(describeSeconds(delay))")
        } else {
            log.error("\(p.spec.name): \(message)")
        }
        perform(actions, for: p)
    }

    /// Starts `p` again now, as after a clean start: what a reload of its configuration does.
    /// A running `p` is stopped first (SIGTERM) and started when it has ended (`reap`).
    func restartNow(_ p: SupervisedProcess) {
        perform(p.life.handle(.reloadAsked, stopping: stopping), for: p)
    }

    /// Stops `p` for good (its configuration went away): never started again.
    func retire(_ p: SupervisedProcess) {
        perform(p.life.handle(.retireAsked, stopping: stopping), for: p)
    }

    /// Does what `p`'s lifecycle answered.
    private func perform(_ actions: [RoleLifecycle.Action], for p: SupervisedProcess) {
        for action in actions {
            switch action {
            case .start:
                start(p)
            case .terminate(let pid):
                Processes.signal(pid, Signals.terminate)
            case .restart(let delay):
                p.restartTimer = loop.after(delay) { [unowned self, unowned p] in
                    p.restartTimer = nil
                    self.perform(p.life.handle(.restartDue, stopping: self.stopping), for: p)
                }
            case .cancelRestart:
                if let t = p.restartTimer { loop.cancel(t) }
                p.restartTimer = nil
            case .oneShotEnded(let how):
                host?.oneShotEnded(p, how)
            }
        }
    }

    /// Logs a role's output line by line under its name; the last line is kept for `seam status`.
    /// True when it read something (there may be more).
    @discardableResult
    private func readOutput(of p: SupervisedProcess) -> Bool {
        guard p.output >= 0 else { return false }
        let result = (try? UnixSocket.read(p.output, into: &p.partialLine, max: 4096)) ?? .closed
        switch result {
        case .wouldBlock:
            return false
        case .closed:
            if !p.partialLine.isEmpty { logLine(p, p.partialLine) }
            p.partialLine = []
            loop.forget(p.output)
            Descriptors.close(p.output)
            p.output = -1
            // The pipe closes when the process ends: collect it now rather than at the next SIGCHLD.
            reap()
            return false
        case .bytes:
            while let newline = p.partialLine.firstIndex(of: 10) {
                logLine(p, p.partialLine[..<newline])
                p.partialLine.removeSubrange(...newline)
            }
            // A line without an end, however long, is logged in pieces rather than held forever.
            if p.partialLine.count > 8192 {
                logLine(p, p.partialLine[...])
                p.partialLine = []
            }
            return true
        }
    }

    private func logLine<C: Collection<UInt8>>(_ p: SupervisedProcess, _ bytes: C) {
        let line = String(decoding: bytes, as: UTF8.self)
        guard !line.isEmpty else { return }
        p.lastLine = line
        log.log(Logger.level(ofRoleLine: line), line, .init(role: p.spec.name, pid: p.pid))
    }

    /// Collects every child that ended (SIGCHLD) and schedules its restart.
    func reap() {
        let ended = Processes.reap { pid in
            // What the role started and left behind (in its process group) ends with it, told
            // while the role is a zombie and the group's number still its own; what is still
            // there two seconds later (it ignored SIGTERM) is killed.
            guard let p = processes.first(where: { $0.pid == pid }) else { return }
            _ = Processes.signal(-pid, Signals.terminate)
            // Only a group with members left has its number kept from reuse: an empty one is let go.
            guard Processes.groupHasMembers(pid) else { return }
            p.leftGroup = pid
            loop.after(2) { [weak p] in
                guard let p, p.leftGroup == pid else { return }
                p.leftGroup = nil
                if Processes.groupHasMembers(pid) { _ = Processes.signal(-pid, Signals.kill) }
            }
        }
        for (pid, exit) in ended {
            guard let p = processes.first(where: { $0.pid == pid }) else { continue }
            while readOutput(of: p) {}
            // Its output pipe, which a process it left may still hold, is let go: the next start
            // makes another, and a stale one would wake the loop for ever once it closed.
            if p.output >= 0 {
                loop.forget(p.output)
                Descriptors.close(p.output)
                p.output = -1
            }
            let now = clock.monotonic
            let uptime = now - (p.life.startedAt ?? now)
            let reloading = p.life.reloading && !stopping && !p.retired
            let how = "\(exit)" + (p.lastLine.map { ": \($0)" } ?? "")
            // Its state first (no pid from here on), then what it sent before it ended, then
            // what comes next: started again, backing off, or stopped.
            let actions = p.life.handle(.exited(how, succeeded: exit.succeeded, at: now), stopping: stopping)
            if let c = p.connection { host?.roleEnded(c) }
            p.connection = nil
            if reloading {
                log.info("\(p.spec.name) (pid \(pid)) \(exit); starting it again with its new configuration")
            } else if p.retired {
                // A retired role (sync, after its configuration was removed) is not started again.
                log.info("\(p.spec.name) (pid \(pid)) \(exit); stopped, as asked")
            } else if case .restart(let delay)? = actions.first {
                log.warning("\(p.spec.name) (pid \(pid)) \(exit) after \(describeSeconds(uptime)); restarting in \(describeSeconds(delay))")
            } else if p.spec.oneShot {
                log.info("\(p.spec.name) (pid \(pid)) \(exit) after \(describeSeconds(uptime))")
            }
            perform(actions, for: p)
        }
    }

    /// Asks every role to stop (SIGTERM), gives them `grace` seconds all told, then kills the rest.
    func stopAll(grace: Double) {
        stopping = true
        // Each role's process group, whichever way the role is collected below (here, or by
        // `reap` when its output pipe closes).
        let groups = processes.flatMap { p in [p.pid, p.leftGroup].compactMap { $0 }.map { (name: p.spec.name, id: $0) } }
        for p in processes {
            perform(p.life.handle(.shutdown, stopping: true), for: p)
            // The whole process group: what a role started (a shell's children) stops with it.
            if let pid = p.pid { _ = Processes.signal(-pid, Signals.terminate) }
        }
        let deadline = WallClock.monotonic() + grace
        for p in processes {
            guard let pid = p.pid else {
                perform(p.life.handle(.stoppedAtShutdown, stopping: true), for: p)
                continue
            }
            if Processes.wait(pid, timeout: max(0, deadline - WallClock.monotonic())) == nil {
                log.warning("\(p.spec.name) (pid \(pid)) did not stop within \(grace) s; killing it")
                _ = Processes.signal(-pid, Signals.kill)
                _ = Processes.wait(pid)
            }
            while readOutput(of: p) {}
            if p.output >= 0 {
                loop.forget(p.output)
                Descriptors.close(p.output)
                p.output = -1
            }
            perform(p.life.handle(.stoppedAtShutdown, stopping: true), for: p)
            // What it sent before it ended (final saves, say) is handled before seamd stops.
            if let c = p.connection { host?.roleEnded(c) }
            p.connection = nil
        }
        // What a role left in its group and that outlived the grace (it ignored SIGTERM) is killed.
        while groups.contains(where: { Processes.groupHasMembers($0.id) }), WallClock.monotonic() < deadline { Threads.sleep(0.02) }
        for group in groups where Processes.groupHasMembers(group.id) {
            log.warning("what \(group.name) left running (process group \(group.id)) did not stop within \(grace) s; killing it")
            _ = Processes.signal(-group.id, Signals.kill)
        }
    }

    func status() -> JSON {
        let now = clock.monotonic
        return .array(processes.map { p in
            var o: JSONObject = ["name": .string(p.spec.name), "role": .string(p.spec.role), "state": .string(p.life.name),
                                 "command": .array(p.spec.command.map(JSON.string)), "restarts": .integer(Int64(p.life.restarts))]
            o["pid"] = p.pid.map { .integer(Int64($0)) } ?? .null
            o["uptime"] = p.life.startedAt.map { .double(now - $0) } ?? .null
            o["restartIn"] = p.life.restartAt.map { .double(max(0, $0 - now)) } ?? .null
            o["lastError"] = p.lastError.map(JSON.string) ?? .null
            return .object(o)
        })
    }
}

