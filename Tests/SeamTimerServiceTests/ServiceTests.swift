import Foundation
import SeamClient
import SeamJSON
import SeamSystem
import SeamTestSupport
import XCTest

/// Seam as a service, over real processes: seamd supervising its roles, `seam up`/`seam down`,
/// `seam install-units`, and `seam watch` on a real pseudo-terminal.
final class ServiceTests: XCTestCase {
    let directory = TemporaryDirectory("service")

    /// A seamd that runs the roles `config` lists (the defaults when nil: the ticker).
    func supervisingBroker(config: String? = nil) throws -> BrokerProcess {
        try BrokerProcess.supervising(config: config, in: directory)
    }

    func roles(_ broker: BrokerProcess) throws -> [JSON] {
        try SeamConnection.connect(path: broker.socketPath).status()["roles"]?.arrayValue ?? []
    }

    // MARK: - Supervision

    func testTheTickerIsSupervisedAndComesBackWhenKilled() throws {
        let broker = try supervisingBroker()
        defer { broker.stop() }
        var ticker: JSON?
        try eventually(10, "the ticker runs") {
            ticker = try roles(broker).first { $0["name"]?.stringValue == "ticker" && $0["state"]?.stringValue == "running" }
            return ticker != nil
        }
        let first = try XCTUnwrap(ticker?["pid"]?.int64Value)

        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let flash = try c.call("org.seam.Timers.Flash", ["seconds": 1, "name": "One"])
        let session = try XCTUnwrap(flash["session"]?.stringValue)
        try eventually(5, "the supervised ticker finishes a one-second session") {
            try c.row("Session", uuid: session)?["state"]?.stringValue == "finished"
        }
        // The ticker logs the step after its save returns, and seamd relays its stderr as it reads it.
        try eventually(5, "its stderr is logged under its name") { broker.log.contains("ticker: seam-ticker: session \(session.suffix(8))") }

        kill(Int32(first), SIGKILL)
        try eventually(10, "a new ticker") {
            let t = try roles(broker).first { $0["name"]?.stringValue == "ticker" }
            return t?["state"]?.stringValue == "running" && t?["pid"]?.int64Value != first
        }
        let t = try XCTUnwrap(try roles(broker).first)
        XCTAssertEqual(t["restarts"]?.int64Value, 1)
        XCTAssertTrue(t["lastError"]?.stringValue?.hasPrefix("killed by signal 9") ?? false, "\(t)")
        let again = try c.call("org.seam.Timers.Flash", ["seconds": 1, "name": "Two"])["session"]?.stringValue
        try eventually(5, "the new ticker works") { try c.row("Session", uuid: again ?? "")?["state"]?.stringValue == "finished" }

        let seam = try Executables.run("seam", ["status"], environment: ["SEAM_SOCKET": broker.socketPath])
        XCTAssertTrue(seam.stdout.contains("ticker  running"), seam.stdout)
        XCTAssertTrue(seam.stdout.contains("killed by signal 9"), seam.stdout)

        // Stopping seamd stops its roles.
        let pid = try XCTUnwrap(t["pid"]?.int64Value)
        XCTAssertEqual(broker.stop(), 0)
        XCTAssertFalse(Processes.isAlive(Int32(pid)), "the ticker stopped with seamd")
    }

    /// A file that is not JSON: reported, and the defaults run. A missing program and a plugin that
    /// crashes at once, forever: reported, retried with backoff (no busy loop), the ticker unharmed.
    /// Only a person's client (Hello as cli) starts a migration: a role seamd started (here a
    /// stand-in ticker, on the connection it inherited) is refused, as PROTOCOL.md says.
    func testARoleMayNotStartAMigration() throws {
        let script = #"import os, socket; s = socket.socket(fileno=int(os.environ['SEAM_FD'])); s.sendall(b'{"method":"org.seam.Migration.Migrate","id":1}\0'); print(s.recv(4096).rstrip(b'\0').decode(), flush=True); import time; time.sleep(60)"#
        let broker = try supervisingBroker(config: """
            {"roles": {"ticker": {"command": ["/usr/bin/python3", "-c", \(String(decoding: JSON.string(script).encoded(), as: UTF8.self))]}}}
            """)
        defer { broker.stop() }
        try eventually(10, "the stand-in ticker's reply is logged") { broker.log.contains("ticker: {") }
        XCTAssertTrue(broker.log.contains("org.seam.Store.PermissionDenied"), broker.log)
    }

    /// Started with an empty environment (`env -i`, some service managers), the stores, the
    /// configuration and the log still go under the user's home, from the user database: not
    /// under `/`, which seamd then could not write as anyone but root.
    func testWithoutHOMETheUserDatabaseGivesTheHome() {
        let saved = getenv("HOME").map { String(cString: $0) }
        unsetenv("HOME")
        defer { if let saved { setenv("HOME", saved, 1) } }
        let home = String(cString: getpwuid(getuid())!.pointee.pw_dir)
        XCTAssertNotEqual(home, "/")
        XCTAssertEqual(Environment.home, home)
    }

    /// A seamd killed with SIGKILL cannot stop its roles: the ticker asked the kernel to end it
    /// with seamd (`PR_SET_PDEATHSIG`), so it does not tick on alone.
    func testTheTickerEndsWithASeamdKilledOutright() throws {
        let broker = try supervisingBroker()
        defer { broker.stop() }
        var pid: Int64?
        try eventually(10, "the ticker runs") {
            pid = try roles(broker).first { $0["name"]?.stringValue == "ticker" && $0["state"]?.stringValue == "running" }?["pid"]?.int64Value
            return pid != nil
        }
        let ticker = Int32(try XCTUnwrap(pid))
        kill(broker.process.processIdentifier, SIGKILL)
        broker.process.waitUntilExit()
        try eventually(5, "the ticker ended with seamd") { !Processes.isAlive(ticker) }
    }

    func testBadConfigurationAndCrashingRolesAreVisibleAndContained() throws {
        var broker = try supervisingBroker(config: "{ this is not json")
        var status = try SeamConnection.connect(path: broker.socketPath).status()
        XCTAssertTrue(status["configurationProblems"]?.arrayValue?.first?.stringValue?.contains("is not valid JSON") ?? false, "\(status)")
        XCTAssertEqual(try roles(broker).map { $0["name"]?.stringValue }, ["ticker"])
        broker.stop()
        XCTAssertTrue(broker.log.contains("is not valid JSON"), broker.log)

        broker = try supervisingBroker(config: #"""
            {"plugins": [{"name": "ghost", "command": ["/nonexistent/seam-ghost"]},
                         {"name": "crasher", "command": ["/bin/sh", "-c", "echo cannot go on >&2; exit 3"]},
                         {"name": "probe", "command": ["/usr/bin/python3", "-c", "\#(Self.probe)"]}]}
            """#)
        defer { broker.stop() }
        // Until both failing roles have been started again once (at 1 s), and wait for the next
        // try, and the probe runs.
        try eventually(10, "the failing roles restarted once and the probe running") {
            let now = try roles(broker)
            return now.count == 4 && now[1...2].allSatisfy { ($0["restarts"]?.int64Value ?? 0) >= 1 && $0["state"]?.stringValue == "waiting" }
                && now[3]["state"]?.stringValue == "running"
        }
        let all = try roles(broker)
        XCTAssertEqual(all.map { $0["name"]?.stringValue }, ["ticker", "plugin:ghost", "plugin:crasher", "plugin:probe"])
        guard all.count == 4 else { return XCTFail(broker.log) }
        XCTAssertEqual(all[3]["state"]?.stringValue, "running")
        XCTAssertEqual(all[0]["state"]?.stringValue, "running")
        XCTAssertEqual(all[0]["restarts"]?.int64Value, 0)
        XCTAssertEqual(all[1]["lastError"]?.stringValue, "program not found: /nonexistent/seam-ghost (looked beside seamd and on PATH)")
        XCTAssertEqual(all[2]["lastError"]?.stringValue, "exited with status 3: cannot go on")
        for r in all[1...2] {
            // Starts at 0, 1, 3 s (then 7, 15, …): backing off, its next start ahead, not a busy loop.
            XCTAssertLessThanOrEqual(r["restarts"]?.int64Value ?? 99, 2, "backoff, not a busy loop: \(r)")
            XCTAssertEqual(r["state"]?.stringValue, "waiting", "\(r)")
            XCTAssertGreaterThan(r["restartIn"]?.doubleValue ?? 0, 0, "\(r)")
        }
        status = try SeamConnection.connect(path: broker.socketPath).status()
        XCTAssertEqual(status["roles"]?.arrayValue?.count, 4)
        // The probe claimed to be 'cli' on the socket seamd handed it: the broker knows better.
        XCTAssertTrue(broker.log.contains(#"plugin:probe: {"parameters":{"version":1,"role":"plugin","author":"plugin:probe""#), broker.log)
        let shown = try Executables.run("seam", ["status"], environment: ["SEAM_SOCKET": broker.socketPath]).stdout
        XCTAssertTrue(shown.contains("plugin:crasher") && shown.contains("exited with status 3: cannot go on"), shown)
        XCTAssertTrue(broker.log.contains("plugin:crasher: cannot go on"), broker.log)
    }

    /// A plugin that dies leaving a process of its own behind, holding its output (a shell's
    /// background job): that process ends with it, and seamd does not spin on the pipe it held
    /// once it closes. A plugin run by a shell stops with its children when seamd stops.
    func testWhatARoleLeavesBehindEndsWithIt() throws {
        let flag = directory.file("leaver-ran-\(UUID().uuidString.prefix(6))")
        let left = directory.file("leaver-left-\(UUID().uuidString.prefix(6))")
        let tag = 300 + Int.random(in: 0..<600)
        let broker = try supervisingBroker(config: """
            {"plugins": [{"name": "leaver", "command": ["/bin/sh", "-c",
              "if [ -e \(flag) ]; then sleep \(tag); true; else touch \(flag); sleep 1 & echo $! > \(left).tmp; mv \(left).tmp \(left); exit 1; fi"]}]}
            """)
        try eventually(10, "the leaver runs again") {
            try roles(broker).first { $0["name"]?.stringValue == "plugin:leaver" }?["restarts"]?.int64Value == 1
        }
        // The process it left, which held its output pipe, has ended: the pipe is closed.
        let leftPID = try XCTUnwrap(Int32(String(contentsOfFile: left, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        try eventually(10, "what the leaver left ended") { !Processes.isAlive(leftPID) }
        // Then seamd's loop is still: it handles about one event a call, not a stream of them
        // on the closed pipe (counted over 100 calls, not over a wait).
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let before = try loopEvents(c)
        for _ in 0..<100 { _ = try c.status() }
        let handled = try loopEvents(c) - before
        XCTAssertLessThan(handled, 400, "seamd's loop handled \(handled) events over 101 calls\n\(broker.log)")
        let sleeping = { processes(commandLine: ["sleep", "\(tag)"]) }
        XCTAssertFalse(sleeping().isEmpty, "the plugin's child runs")
        XCTAssertEqual(broker.stop(), 0)
        try eventually(5, "the plugin's child stopped with seamd") { sleeping().isEmpty }
    }

    /// Reload (what `seam sync setup` calls) starts the sync worker again at once, with the
    /// backoff of its failures forgotten; it used to wait out the backoff (up to a minute).
    func testReloadStartsTheSyncWorkerAtOnce() throws {
        try Data("{}".utf8).write(to: URL(fileURLWithPath: directory.file("sync.json")))  // a worker that fails at once
        let broker = try supervisingBroker(config: "{}")
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        _ = try c.hello()
        func sync() throws -> JSON? { try roles(broker).first { $0["role"]?.stringValue == "sync" } }
        try eventually(15, "the failing worker waits 4 s for its next start") {
            try sync()?["restartIn"]?.doubleValue ?? 0 > 3
        }
        let before = try XCTUnwrap(try sync()?["restarts"]?.int64Value)
        XCTAssertEqual(try c.call("org.seam.Sync.Reload")["action"]?.stringValue, "restarted")
        let after = try sync()
        XCTAssertEqual(after?["restarts"]?.int64Value, before + 1, "\(String(describing: after))")
    }

    /// A seamd started with SIGCHLD ignored (its parent set it so) still sees its roles end:
    /// the kernel reaped them unseen, and a killed ticker stayed "running" for good.
    func testARoleEndsSeenThoughSIGCHLDWasIgnored() throws {
        let socket = "/tmp/seam-sigchld-\(getpid())-\(UUID().uuidString.prefix(6)).sock"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", "import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])",
                       Executables.path("seamd"), "--data-dir", directory.file("sigchld-data"), "--socket", socket,
                       "--config", directory.file("no-such-seamd.json")]
        p.standardError = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        defer {
            p.terminate()
            p.waitUntilExit()
        }
        func ticker() throws -> JSON? {
            try SeamConnection.connect(path: socket).status()["roles"]?.arrayValue?.first { $0["name"]?.stringValue == "ticker" }
        }
        var pid: Int32?
        try eventually(10, "the ticker runs") {
            guard let t = try? ticker(), t["state"]?.stringValue == "running" else { return false }
            pid = t["pid"]?.int64Value.map { Int32($0) }
            return pid != nil
        }
        kill(try XCTUnwrap(pid), SIGKILL)
        try eventually(5, "seamd saw it end and started it again") { try ticker()?["restarts"]?.int64Value == 1 }
    }

    /// seamd as a container's first process (pid 1, no init): its roles see a parent of pid 1,
    /// which is seamd, not a seamd that is gone. They used to give up and be restarted for ever.
    func testRolesRunUnderASeamdThatIsPID1() throws {
        guard (try? Executables.runTool("/usr/bin/unshare", ["--pid", "--fork", "true"]))?.status == 0 else {
            throw XCTSkip("this machine cannot make a pid namespace (unshare --pid needs CAP_SYS_ADMIN)")
        }
        let socket = "/tmp/seam-pid1-\(getpid())-\(UUID().uuidString.prefix(6)).sock"
        let log = directory.file("pid1.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        p.arguments = ["--pid", "--fork", "--kill-child=SIGTERM", Executables.path("seamd"), "--data-dir", directory.file("pid1-data"),
                       "--socket", socket, "--config", directory.file("no-such-seamd.json")]
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        defer {
            // unshare blocks SIGTERM while it waits; killed, it has seamd sent SIGTERM (--kill-child).
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            try? FileManager.default.removeItem(atPath: socket)
        }
        var ticker: JSON?
        try eventually(10, "the ticker runs") {
            guard let c = try? SeamConnection.connect(path: socket) else { return false }  // not up yet
            ticker = try c.status()["roles"]?.arrayValue?.first { $0["name"]?.stringValue == "ticker" }
            return ticker?["state"]?.stringValue == "running"
        }
        // The ticker does its work: a role that took itself for orphaned would have ended by then.
        let c = try SeamConnection.connect(path: socket)
        try c.hello()
        let flash = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 1])["session"]?.stringValue)
        try eventually(10, "the ticker ended the session") { try c.row("Session", uuid: flash)?["state"]?.stringValue == "finished" }
        ticker = try c.status()["roles"]?.arrayValue?.first { $0["name"]?.stringValue == "ticker" }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        XCTAssertEqual(ticker?["restarts"]?.int64Value, 0, text)
        XCTAssertEqual(ticker?["state"]?.stringValue, "running", text)
        XCTAssertFalse(text.contains("is gone"), text)
    }

    /// A role whose seamd died before the role could ask to end with it was taken over by
    /// another process: pid 1, or a subreaper (`systemd --user`, `tini -s`) with any pid. It
    /// knew only pid 1 for a seamd that is gone, and under a subreaper ran on without seamd.
    /// Here the test process stands for the subreaper, and `SEAM_PARENT_PID` names a seamd that
    /// has ended.
    func testARoleTakenOverByASubreaperKnowsSeamdIsGone() throws {
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let result = try Executables.runTool("/usr/bin/timeout", ["10", Executables.path("seam-ticker")], environment: [
            "SEAM_FD": "3", "SEAM_ROLE": "ticker", "SEAM_PARENT_PID": String(gone.processIdentifier),
            "SEAM_SOCKET": directory.file("no-seamd.sock"),
        ])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("seamd, which started this ticker, is gone"), "status \(result.status): \(result.stderr)")
    }

    /// A role that sends its saves and exits at once: every call it sent is handled. seamd used
    /// to close the connection of a role it reaped, with calls still unread in it, and any
    /// connection whose reply it could not write because the peer had gone.
    func testARoleThatSavesAndExitsLosesNothing() throws {
        let flag = directory.file("saver-ran-\(UUID().uuidString.prefix(6))")
        let script = """
            import json, os, socket, sys, time
            if os.path.exists('\(flag)'): time.sleep(600); sys.exit(0)
            open('\(flag)', 'w').close()
            s = socket.socket(fileno=int(os.environ['SEAM_FD']))
            frames = [{"method": "org.seam.Store.Hello", "parameters": {"version": 1, "role": "plugin",
                                                          "capabilities": {"reads": [], "writes": ["Session"]}}}]
            save = lambda i: {"method": "org.seam.Store.Save", "oneway": True, "parameters": {"inserts": [{"entity": "Session",
                              "values": {"name": "s%d" % i, "state": "paused", "stepIndex": 0, "startedAt": 1700000000}}]}}
            frames += [save(i) for i in range(3000)]
            # Among the last ones, still unread when it exits, calls whose replies it never
            # reads: seamd's writes of them fail once it has gone.
            for i in range(3000, 6000):
                frames.append(save(i))
                if i % 100 == 0: frames.append({"method": "org.seam.Store.Count", "parameters": {"entity": "Session"}})
            s.sendall(b''.join(json.dumps(f).encode() + b'\\0' for f in frames))
            """
        let broker = try supervisingBroker(config: """
            {"plugins": [{"name": "saver", "command": ["/usr/bin/python3", "-c", \(String(decoding: JSON.string(script).encoded(), as: UTF8.self))]}]}
            """)
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try eventually(10, "the saver ran and ended") {
            try roles(broker).first { $0["name"]?.stringValue == "plugin:saver" }?["restarts"]?.int64Value ?? 0 >= 1
        }
        var count: Int64?
        try? eventually(5, "every save it sent is stored") {
            count = try c.call("org.seam.Store.Count", ["entity": "Session"])["count"]?.int64Value
            return count == 6000
        }
        XCTAssertEqual(count, 6000, broker.log)
    }

    /// At shutdown a subscription's call ends with ShuttingDown, and nothing follows it: the
    /// saves roles send as they stop (drained) used to reach it as diffs after its end.
    func testNoDiffFollowsShuttingDown() throws {
        let script = """
            import json, os, signal, socket, sys, time
            s = socket.socket(fileno=int(os.environ['SEAM_FD']))
            def send(call): s.sendall(json.dumps(call).encode() + b'\\0')
            send({"method": "org.seam.Store.Hello", "parameters": {"version": 1, "role": "plugin",
                                                                   "capabilities": {"reads": [], "writes": ["Session"]}}})
            def stop(*_):
                send({"method": "org.seam.Store.Save", "oneway": True, "parameters": {"inserts": [{"entity": "Session",
                      "values": {"name": "last words", "state": "paused", "stepIndex": 0, "startedAt": 1700000000}}]}})
                sys.exit(0)
            signal.signal(signal.SIGTERM, stop)
            print("ready", flush=True)
            while True: time.sleep(1)
            """
        let broker = try supervisingBroker(config: """
            {"plugins": [{"name": "stopper", "command": ["/usr/bin/python3", "-c", \(String(decoding: JSON.string(script).encoded(), as: UTF8.self))]}]}
            """)
        try eventually(10, "the plugin is ready") { broker.log.contains("plugin:stopper: ready") }
        let raw = try RawClient(broker.socketPath)
        raw.send(#"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"Session"},"more":true,"id":7}"#)
        XCTAssertTrue(raw.readFrame()?.contains(#""kind":"result""#) == true)
        XCTAssertEqual(broker.stop(), 0)
        var frames: [String] = []
        while let frame = raw.readFrame(timeout: 2) { frames.append(frame) }
        let end = try XCTUnwrap(frames.firstIndex { $0.contains("org.seam.Store.ShuttingDown") && $0.contains(#""id":7"#) }, "\(frames)")
        XCTAssertFalse(frames[(end + 1)...].contains { $0.contains(#""id":7"#) }, "\(frames)")
        XCTAssertTrue(broker.log.contains("stopped at save sequence 1"), "the plugin's last save was made: \(broker.log)")
    }

    /// What a role leaves behind that ignores SIGTERM is killed: two seconds after the role
    /// ended, and when seamd stops. It used to outlive both, one more at every restart.
    func testWhatARoleLeavesBehindIgnoringSIGTERMIsKilled() throws {
        let flag = directory.file("stubborn-ran-\(UUID().uuidString.prefix(6))")
        let tag = 1000 + Int.random(in: 0..<900)
        // Its first run leaves a child that ignores SIGTERM and exits; the next one stays with its own.
        let broker = try supervisingBroker(config: """
            {"plugins": [{"name": "stubborn", "command": ["/bin/sh", "-c",
              "if [ -e \(flag) ]; then (trap '' TERM; exec sleep \(tag + 1)) & wait; else touch \(flag); (trap '' TERM; exec sleep \(tag)) & exit 1; fi"]}]}
            """)
        defer { broker.stop() }
        try eventually(10, "the second run's child runs") { !processes(commandLine: ["sleep", "\(tag + 1)"]).isEmpty }
        try eventually(5, "the first run's child was killed") { processes(commandLine: ["sleep", "\(tag)"]).isEmpty }
        XCTAssertEqual(broker.stop(), 0)
        try eventually(3, "the second run's child was killed when seamd stopped") { processes(commandLine: ["sleep", "\(tag + 1)"]).isEmpty }
        XCTAssertTrue(broker.log.contains("plugin:stubborn left running"), broker.log)
    }

    /// A plugin in Python that says Hello on the socket it inherited (SEAM_FD), claiming to be a
    /// plain CLI, prints the reply, and stays.
    static let probe = #"import os, socket, sys, time; s = socket.socket(fileno=int(os.environ['SEAM_FD'])); s.sendall(b'{\"method\":\"org.seam.Store.Hello\",\"parameters\":{\"version\":1,\"role\":\"cli\"}}\\0'); print(s.recv(4096).rstrip(b'\\0').decode(), flush=True); time.sleep(60)"#

    // MARK: - seam up / down

    func testUpAndDown() throws {
        let socket = "/tmp/seam-up-\(getpid())-\(UUID().uuidString.prefix(6)).sock"
        let env = ["SEAM_SOCKET": socket, "SEAM_DATA_DIR": directory.file("data"), "XDG_STATE_HOME": directory.file("state"),
                   "XDG_CONFIG_HOME": directory.file("config")]
        var started: Int32?
        defer {
            if let started, Processes.isAlive(started) { kill(started, SIGKILL) }
            try? FileManager.default.removeItem(atPath: socket)
        }
        func seam(_ args: String...) throws -> Executables.Result { try Executables.run("seam", args, environment: env) }

        XCTAssertEqual(try seam("down").stdout, "seamd is not running (nothing answers on \(socket))\n")
        var r = try seam("up")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("seamd is up (pid "), r.stdout)
        started = Int32(r.stdout.split(separator: " ")[4].dropLast(1))
        XCTAssertNotNil(started)
        XCTAssertTrue(try seam("status").stdout.contains("ticker  running"), "the ticker came up with it")
        r = try seam("up")
        XCTAssertEqual(r.stdout, "seamd already runs (pid \(started ?? 0)) on \(socket)\n", "a second up does nothing")
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.file("state/seam/seamd.log")))

        r = try seam("down")
        XCTAssertEqual(r.stdout, "seamd (pid \(started ?? 0)) stopped\n", r.stderr)
        XCTAssertFalse(Processes.isAlive(started ?? 0))
        let log = try String(contentsOfFile: directory.file("state/seam/seamd.log"), encoding: .utf8)
        XCTAssertTrue(log.contains("serving") && log.contains("started ticker") && log.contains("stopped at save sequence"), log)

        // A socket file left by a seamd that died: removed, and seamd starts.
        let dead = try UnixSocket.listen(path: socket)
        Descriptors.close(dead)
        XCTAssertTrue(FileManager.default.fileExists(atPath: socket))
        r = try seam("up")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("removed a stale socket that no seamd answers on: \(socket)\nseamd is up"), r.stdout)
        started = Int32(r.stdout.split(separator: "\n")[1].split(separator: " ")[4].dropLast(1))
        XCTAssertEqual(try seam("down").status, 0)
    }

    func testInstallUnits() throws {
        let units = directory.file("units")
        var r = try Executables.run("seam", ["install-units", "--dir", units])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("systemctl --user enable --now seamd.socket"), r.stdout)
        let socket = try String(contentsOfFile: units + "/seamd.socket", encoding: .utf8)
        let service = try String(contentsOfFile: units + "/seamd.service", encoding: .utf8)
        XCTAssertTrue(socket.contains("ListenStream=%t/seam/seamd.sock\nSocketMode=0600\n"), socket)
        let line = try XCTUnwrap(service.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let exec = try XCTUnwrap(systemdWord(String(line.dropFirst("ExecStart=".count))), String(line))
        XCTAssertTrue(exec.hasPrefix("/") && exec.hasSuffix("/seamd") && FileManager.default.isExecutableFile(atPath: exec), exec)
        XCTAssertEqual(try Executables.run("seam", ["install-units", "--dir", units]).status, 0, "the same units again: fine")
        try Data("# mine\n".utf8).write(to: URL(fileURLWithPath: units + "/seamd.service"))
        r = try Executables.run("seam", ["install-units", "--dir", units])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("exists and differs") && r.stderr.contains("--force"), r.stderr)
        XCTAssertEqual(try Executables.run("seam", ["install-units", "--dir", units, "--force"]).status, 0)
        XCTAssertEqual(try String(contentsOfFile: units + "/seamd.service", encoding: .utf8), service)
    }

    /// seamd in a directory whose name has a space, a percent sign and a dollar: ExecStart= holds
    /// the path as one word that systemd reads back as the path. A quote or a backslash, which
    /// systemd refuses in an executable's path however quoted, is refused up front.
    func testInstallUnitsQuotesAnAwkwardPath() throws {
        func install(beside name: String) throws -> (Executables.Result, units: String) {
            let odd = directory.file(name)
            try FileManager.default.createDirectory(atPath: odd, withIntermediateDirectories: true)
            for tool in ["seam", "seamd"] { try FileManager.default.copyItem(atPath: Executables.path(tool), toPath: odd + "/" + tool) }
            let units = directory.file("units of \(name.count)")
            return (try Executables.runTool(odd + "/seam", ["install-units", "--dir", units]), units)
        }
        let (r, units) = try install(beside: "my dir, 100% $HOME")
        XCTAssertEqual(r.status, 0, r.stderr)
        let service = try String(contentsOfFile: units + "/seamd.service", encoding: .utf8)
        let exec = try XCTUnwrap(service.split(separator: "\n").first { $0.hasPrefix("ExecStart=") }).dropFirst("ExecStart=".count)
        XCTAssertEqual(exec, "\"\(directory.path)/my dir, 100%% $HOME/seamd\"")
        XCTAssertEqual(systemdWord(String(exec)), directory.file("my dir, 100% $HOME") + "/seamd", String(exec))

        let (refused, none) = try install(beside: "it's \"odd\"")
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("systemd runs no executable whose path has a quote"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: none), "nothing written")
    }

    /// One word of a systemd command line as systemd reads it: `%%` is a percent sign (any other
    /// `%` a specifier), then a double-quoted word with `\\` and `\"` escapes. Nil for anything else.
    func systemdWord(_ text: String) -> String? {
        guard !text.replacingOccurrences(of: "%%", with: "").contains("%") else { return nil }
        let unspecified = text.replacingOccurrences(of: "%%", with: "%")
        guard unspecified.count >= 2, unspecified.hasPrefix("\""), unspecified.hasSuffix("\"") else { return nil }
        var word = ""
        var escaped = false
        for c in unspecified.dropFirst().dropLast() {
            if escaped {
                word.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "\"" {
                return nil
            } else {
                word.append(c)
            }
        }
        return escaped ? nil : word
    }
}

/// The pids of processes whose command line is exactly `arguments` (read from /proc).
func processes(commandLine arguments: [String]) -> [Int32] {
    let wanted = Array((arguments.joined(separator: "\0") + "\0").utf8)
    return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
        guard let pid = Int32(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
        return Array(data) == wanted ? pid : nil
    }
}

/// The events seamd's loop has handled so far (`seam_loop_events_total`).
func loopEvents(_ c: SeamConnection) throws -> Int64 {
    let family = try c.call("org.seam.Metrics.Get")["families"]?.arrayValue?.first { $0["name"]?.stringValue == "seam_loop_events_total" }
    return try XCTUnwrap(family?["samples"]?[0]?["value"]?.int64Value, "no seam_loop_events_total")
}
