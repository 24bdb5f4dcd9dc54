import SeamClient
import SeamCommandLine
import SeamJSON
import SeamSystem

/// Commands that run seamd itself: in the background (`up`, `down`) or under systemd.
enum ServiceCommands {
    static let all: [Command] = [
        Command("up", "start seamd in the background (log in $XDG_STATE_HOME/seam/) and wait until it answers",
                options: [.value("data-dir", "DIR", "the stores' directory (default: as seamd finds it)", complete: .directory)]) { _, args in try up(args) },
        Command("down", "stop the seamd that answers on the socket, and wait until it has gone") { _, args in try down(args) },
        Command("install-units", "write systemd user units for seamd (a service and a socket) and say how to enable them",
                options: [.value("dir", "DIR", "where to write the units (default $XDG_CONFIG_HOME/systemd/user)", complete: .directory),
                          .flag("force", "overwrite units already there")]) { _, args in try installUnits(args) },
    ]

    /// Seconds `up` and `down` wait for seamd.
    static let patience = 20.0

    /// The pid of the seamd that answers on `socket`, if one does (within 2 s: a stopped or
    /// stuck one does not).
    static func answeringPID(_ socket: String) -> Int32? {
        guard let c = try? SeamConnection.connect(path: socket) else { return nil }
        c.replyTimeout = 2
        guard let s = try? c.status(), let pid = s["pid"]?.int64Value else { return nil }
        return Int32(pid)
    }

    /// Whether something listens on `socket` (a connection is accepted), answering or not.
    static func listens(_ socket: String) -> Bool {
        guard let fd = try? UnixSocket.connect(path: socket) else { return false }
        UnixSocket.closeDescriptor(fd)
        return true
    }

    static func up(_ args: Arguments) throws {
        let socket = args.value("socket") ?? Environment.socketPath
        if let pid = answeringPID(socket) {
            print("seamd already runs (pid \(pid)) on \(socket)")
            return
        }
        if listens(socket) {
            throw CLIError("a process listens on \(socket) but does not answer (a seamd stopped or stuck?); "
                           + "`ss -xlp` names the process; end it before starting another")
        }
        if FileSystem.exists(socket) {
            guard FileSystem.isSocket(socket) else {
                throw CLIError("\(socket) is a file, not a socket: give another --socket, or move the file aside")
            }
            // Nobody answers on it: what a seamd that was killed leaves behind.
            do { try FileSystem.remove(socket) } catch { throw CLIError("cannot remove the stale socket \(socket): \(error.message)") }
            print("removed a stale socket that no seamd answers on: \(socket)")
        }
        guard let seamd = Processes.find("seamd") else {
            throw CLIError("cannot find seamd beside seam or on PATH; build it (scripts/run, or swift build -c release --static-swift-stdlib) or put it on PATH")
        }
        let logDirectory = Environment.stateDirectory
        let logPath = FileSystem.join(logDirectory, "seamd.log")
        let log: Int32
        do {
            try FileSystem.makeDirectory(logDirectory, mode: 0o700)
            log = try FileSystem.openForAppending(logPath)
        } catch {
            throw CLIError("cannot open the log \(logPath): \(error.message)")
        }
        defer { Descriptors.close(log) }
        let logStart = FileSystem.size(logPath) ?? 0
        var environment = Processes.environment
        environment["SEAM_SOCKET"] = socket
        var arguments = ["--socket", socket]
        if let d = args.value("data-dir") { arguments += ["--data-dir", d] }
        let started = WallClock.monotonic()
        let pid: Int32
        do {
            pid = try Processes.spawn(seamd, arguments: arguments, environment: environment, descriptors: [-1, log, log],
                                      placement: .init(newSession: true))
        } catch {
            throw CLIError("cannot start \(seamd): \(error.message)")
        }
        while WallClock.monotonic() - started < patience {
            if let exit = Processes.wait(pid, timeout: 0) {
                throw CLIError("seamd \(exit) before it answered: \(lastLines(of: logPath, after: logStart)) (log: \(logPath))")
            }
            if answeringPID(socket) != nil {
                let ms = Int((WallClock.monotonic() - started) * 1000)
                print("seamd is up (pid \(pid)) on \(socket), answering after \(ms) ms; log: \(logPath)")
                return
            }
            Threads.sleep(0.01)
        }
        throw CLIError("seamd (pid \(pid)) started but did not answer on \(socket) within \(Int(patience)) s; see \(logPath)")
    }

    static func down(_ args: Arguments) throws {
        let socket = args.value("socket") ?? Environment.socketPath
        guard let pid = answeringPID(socket) else {
            if listens(socket) {
                throw CLIError("a process listens on \(socket) but does not answer within 2 s (a seamd stopped or stuck?); "
                               + "`ss -xlp` names the process; end it with kill")
            }
            print("seamd is not running (nothing answers on \(socket))")
            return
        }
        guard Processes.signal(pid, Signals.terminate) else { throw CLIError("cannot signal seamd (pid \(pid))") }
        let started = WallClock.monotonic()
        while WallClock.monotonic() - started < patience {
            if !Processes.isAlive(pid) {
                print("seamd (pid \(pid)) stopped")
                return
            }
            Threads.sleep(0.01)
        }
        throw CLIError("seamd (pid \(pid)) is still running \(Int(patience)) s after SIGTERM; see its log")
    }

    /// The last non-empty lines of what seamd wrote to its log since `offset`, for an error message.
    static func lastLines(of path: String, after offset: Int64) -> String {
        guard let bytes = try? FileSystem.read(path) else { return "(no log)" }
        let text = String(decoding: bytes.dropFirst(Int(min(offset, Int64(bytes.count)))), as: UTF8.self)
        let lines = text.split(separator: "\n").suffix(3)
        return lines.isEmpty ? "(nothing logged)" : lines.joined(separator: " | ")
    }

    static func installUnits(_ args: Arguments) throws {
        let directory = args.value("dir")
            ?? FileSystem.join(Environment.value("XDG_CONFIG_HOME") ?? FileSystem.join(Environment.home, ".config"), "systemd/user")
        guard let found = Processes.find("seamd") else {
            throw CLIError("cannot find seamd beside seam or on PATH; build it (scripts/run, or swift build -c release --static-swift-stdlib) first")
        }
        let seamd = found.hasPrefix("/") ? found : FileSystem.join(Environment.value("PWD") ?? ".", found)
        guard systemdAcceptsExecutable(seamd) else {
            throw CLIError("systemd runs no executable whose path has a quote, a backslash or a control character, as "
                           + "\(Terminal.printable(seamd)) has; move seam and seamd to another directory and run this again")
        }
        let units = [("seamd.socket", socketUnit), ("seamd.service", serviceUnit(seamd))]
        for (name, text) in units {
            let path = FileSystem.join(directory, name)
            if let existing = try? FileSystem.read(path), existing != Array(text.utf8), !args.flag("force") {
                throw CLIError("\(path) exists and differs; keep it, or write over it with --force")
            }
        }
        do {
            try FileSystem.makeDirectory(directory, mode: 0o755)
            for (name, text) in units { try FileSystem.writeAtomically(Array(text.utf8), to: FileSystem.join(directory, name), mode: 0o644) }
        } catch {
            throw CLIError("cannot write the units into \(directory): \(error.message)")
        }
        print("""
            wrote \(FileSystem.join(directory, "seamd.socket")) and \(FileSystem.join(directory, "seamd.service")) (seamd: \(seamd))
            enable them with:
              systemctl --user daemon-reload
              systemctl --user enable --now seamd.socket
            systemd then listens on $XDG_RUNTIME_DIR/seam/seamd.sock and starts seamd at the first connection.
            """)
        if Environment.value("SEAM_SOCKET") != nil {
            print("note: SEAM_SOCKET is set here; the socket unit listens on the default path, so unset it (or edit ListenStream).")
        }
    }

    static let socketUnit = """
        [Unit]
        Description=Seam store broker socket (seamd starts at the first connection)
        Documentation=man:seamd(1)

        [Socket]
        ListenStream=%t/seam/seamd.sock
        SocketMode=0600
        DirectoryMode=0700

        [Install]
        WantedBy=sockets.target

        """

    /// Whether systemd runs an executable at `path`: it refuses one whose path has a quote, a
    /// backslash or a control character ("Executable name contains special characters"), however
    /// the line quotes it. Spaces, `%` and `$` are fine once quoted.
    static func systemdAcceptsExecutable(_ path: String) -> Bool {
        !path.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || "\"'\\".unicodeScalars.contains($0) }
    }

    /// `path` as one word of a systemd command line: in double quotes (a space would split it),
    /// a backslash and `"` escaped within them, and `%` doubled, since systemd expands specifiers (`%h`,
    /// `%t`) before it splits the line. `$` stays as it is: systemd substitutes variables in the
    /// arguments, never in the executable's path.
    static func systemdQuoted(_ path: String) -> String {
        var out = "\""
        for c in path {
            switch c {
            case "\\", "\"": out += "\\" + String(c)
            case "%": out += "%%"
            default: out.append(c)
            }
        }
        return out + "\""
    }

    static func serviceUnit(_ seamd: String) -> String {
        """
        [Unit]
        Description=Seam store broker (seamd) and its roles
        Documentation=man:seamd(1)
        Requires=seamd.socket
        After=seamd.socket

        [Service]
        Type=simple
        ExecStart=\(systemdQuoted(seamd))
        Restart=on-failure
        RestartSec=1

        [Install]
        WantedBy=default.target

        """
    }
}
