import CSeamSystem
import Glibc

/// Child processes: start, reap, signal, find. seamd's supervisor, `seam up` and the tests that
/// drive programs on a terminal all start processes here.
public enum Processes {
    /// How a process ended.
    public enum Exit: Sendable, Hashable, CustomStringConvertible {
        case status(Int32)
        case signal(Int32)

        /// From a `waitpid` status word.
        init(waitStatus s: Int32) {
            self = s & 0x7f == 0 ? .status((s >> 8) & 0xff) : .signal(s & 0x7f)
        }

        public var description: String {
            switch self {
            case .status(let n): "exited with status \(n)"
            case .signal(let n): "killed by signal \(n) (\(String(cString: strsignal(n))))"
            }
        }

        public var succeeded: Bool { self == .status(0) }
    }

    /// How the child is placed.
    public struct Placement: Sendable {
        /// A new session (setsid): detached from this process's terminal and its signals.
        public var newSession = false
        /// Its own process group: a Ctrl-C on the parent's terminal does not reach it.
        public var ownGroup = false
        /// A terminal to open as its standard descriptors (with `newSession`: its controlling terminal).
        public var terminal: String?
        public init(newSession: Bool = false, ownGroup: Bool = false, terminal: String? = nil) {
            self.newSession = newSession
            self.ownGroup = ownGroup
            self.terminal = terminal
        }
    }

    /// Starts `path`. The child's descriptor i is a copy of `descriptors[i]` (-1: /dev/null); it
    /// inherits no other descriptor. Returns its pid.
    public static func spawn(_ path: String, arguments: [String], environment: [String: String], descriptors: [Int32],
                             placement: Placement = Placement()) throws(SystemError) -> Int32 {
        let argv = ([path] + arguments).map { strdup($0) }
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") }
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var flags: Int32 = 0
        if placement.newSession { flags |= Int32(SEAM_SPAWN_SESSION) }
        if placement.ownGroup { flags |= Int32(SEAM_SPAWN_GROUP) }
        let pid = (argv + [nil]).withUnsafeBufferPointer { a in
            (envp + [nil]).withUnsafeBufferPointer { e in
                descriptors.withUnsafeBufferPointer { d in
                    seam_spawn(path, a.baseAddress, e.baseAddress, d.baseAddress, Int32(d.count), flags, placement.terminal)
                }
            }
        }
        guard pid > 0 else { throw SystemError("spawn", path: path, errno: errno) }
        return pid
    }

    /// Every child that has ended since the last call (never blocks). `beforeReaping` runs for
    /// each while it is still a zombie: a signal to its process group (`-pid`) then reaches what
    /// it left running, and never a group that took the number once it was free.
    public static func reap(beforeReaping: (Int32) -> Void = { _ in }) -> [(pid: Int32, exit: Exit)] {
        var ended: [(Int32, Exit)] = []
        while true {
            let pid = seam_ended_child()
            if pid <= 0 { return ended }
            beforeReaping(pid)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 {
                if errno != EINTR { return ended }
            }
            ended.append((pid, Exit(waitStatus: status)))
        }
    }

    /// Waits for `pid` to end, up to `timeout` seconds (nil: no limit); nil if it still runs.
    public static func wait(_ pid: Int32, timeout: Double? = nil) -> Exit? {
        let deadline = timeout.map { WallClock.monotonic() + $0 }
        while true {
            var status: Int32 = 0
            let rc = waitpid(pid, &status, deadline == nil ? 0 : WNOHANG)
            if rc == pid { return Exit(waitStatus: status) }
            if rc < 0 && errno != EINTR { return nil }
            if let deadline, WallClock.monotonic() >= deadline { return nil }
            if deadline != nil { Threads.sleep(0.005) }
        }
    }

    /// Runs `path` to its end, its standard output and error read together; its standard input
    /// is /dev/null. For a helper program whose few lines of output are its answer.
    public static func run(_ path: String, arguments: [String], environment: [String: String]) throws(SystemError) -> (exit: Exit, output: [UInt8]) {
        let pipe = try Pipes.make()
        let pid: Int32
        do {
            pid = try spawn(path, arguments: arguments, environment: environment, descriptors: [-1, pipe.write, pipe.write])
        } catch {
            Descriptors.close(pipe.read)
            Descriptors.close(pipe.write)
            throw error
        }
        Descriptors.close(pipe.write)  // the child's copy is the only writer now: reading ends when it does
        var output: [UInt8] = []
        var failure: SystemError?
        do { while case .bytes = try UnixSocket.read(pipe.read, into: &output) {} } catch { failure = error }
        Descriptors.close(pipe.read)  // a child still writing (the read failed) gets EPIPE and ends
        guard let exit = wait(pid) else { throw SystemError("waitpid", path: path, errno: errno) }
        if let failure { throw failure }
        return (exit, output)
    }

    /// Whether any process that has not ended (a zombie has) is in process group `group`. While
    /// one is, the group's number is not given to another process, so a signal to the group
    /// reaches only what is left of it.
    public static func groupHasMembers(_ group: Int32) -> Bool {
        guard let names = try? FileSystem.contents(of: "/proc") else { return false }
        for name in names where name.first?.isNumber == true {
            // Field 5 of /proc/PID/stat, after the command in parentheses: the process group.
            guard let stat = try? FileSystem.read("/proc/\(name)/stat"), let close = stat.lastIndex(of: UInt8(ascii: ")")) else { continue }
            let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))  // state, parent, group, …
            guard fields.count > 2, fields[0].first != UInt8(ascii: "Z") else { continue }
            if Int32(String(decoding: fields[2], as: UTF8.self)) == group { return true }
        }
        return false
    }

    /// Ends this process at once with `status`, `message` on stderr: for what it must not go on
    /// after (a WAL whose fsync failed), not for ordinary errors, which are thrown.
    public static func stop(_ message: String, status: Int32) -> Never {
        Descriptors.write(2, message)
        Glibc.exit(status)
    }

    /// Ends this process with `status` (C's `exit`: what `print` buffered is written first). For
    /// a tool's `main`; libraries throw.
    public static func exit(_ status: Int32) -> Never { Glibc.exit(status) }

    /// This process's id.
    public static var currentID: Int32 { getpid() }

    /// Sends `signo` to `pid`; false when there is no such process (or it is not ours).
    @discardableResult
    public static func signal(_ pid: Int32, _ signo: Int32) -> Bool { kill(pid, signo) == 0 }

    /// The variable in which seamd gives the processes it starts its pid.
    public static let parentPIDVariable = "SEAM_PARENT_PID"

    /// Makes the kernel kill this process (SIGKILL) as soon as its parent dies: for a worker
    /// whose work means nothing without the parent that started it. False when the parent is
    /// already gone.
    ///
    /// A parent that is gone shows as another parent: the process that took this one over,
    /// which is pid 1, or a subreaper (`systemd --user`, `tini -s`) with any pid. Started by
    /// seamd, `SEAM_PARENT_PID` names seamd: a parent that is not seamd while seamd no longer
    /// runs means it is gone, whatever took this process over. (seamd may be pid 1 itself, a
    /// container's first process; a role started through a wrapper has the wrapper for its
    /// parent while seamd runs, and ends with the wrapper.) Without the variable, a parent of
    /// pid 1 is taken for init.
    public static func dieWithParent() -> Bool {
        let parent = getppid()
        guard parent > 0 else { return false }
        if let named = Environment.value(parentPIDVariable).flatMap(Int32.init), named > 0 {
            if parent != named && !isAlive(named) { return false }
        } else if parent == 1 {
            return false
        }
        return seam_die_with_parent(parent) == 0
    }

    /// Whether a process `pid` runs. A zombie does not count: it has ended, and a parent that
    /// never reaps (a container's init, say) must not make it look alive.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let stat = try? FileSystem.read("/proc/\(pid)/stat"), let close = stat.lastIndex(of: UInt8(ascii: ")")),
              close + 2 < stat.count else { return true }
        let state = stat[close + 2]
        return state != UInt8(ascii: "Z") && state != UInt8(ascii: "X")
    }

    /// This program's own path (`/proc/self/exe`).
    public static var executablePath: String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Where `program` is: itself when it holds a '/', else beside `directory` (this program's
    /// own directory by default), else on `$PATH`. Nil when nothing executable is found.
    public static func find(_ program: String, besides directory: String? = nil) -> String? {
        if program.contains("/") { return access(program, X_OK) == 0 ? program : nil }
        var places: [String] = []
        if let d = directory ?? executablePath.map(FileSystem.parentDirectory) { places.append(d) }
        places += (Environment.value("PATH") ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        for d in places {
            let candidate = FileSystem.join(d, program)
            if access(candidate, X_OK) == 0 && !FileSystem.isDirectory(candidate) { return candidate }
        }
        return nil
    }

    /// This process's environment.
    public static var environment: [String: String] {
        var out: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if let eq = s.firstIndex(of: "=") { out[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
            p += 1
        }
        return out
    }

    /// Limits every thread of process `pid` to the CPUs in `mask` (bit i: CPU i); 0 frees them.
    /// Threads it starts later inherit the limit from the thread that starts them. For
    /// benchmarks that must place a client and a server alike for every system they compare.
    public static func pin(_ pid: Int32, toCPUs mask: UInt64) throws(SystemError) {
        for task in try FileSystem.contents(of: "/proc/\(pid)/task") {
            guard let tid = Int32(task) else { continue }
            // A thread that ended since the listing is no longer there to pin.
            guard seam_set_affinity(tid, mask) != 0 else { continue }
            let code = errno
            if code != ESRCH { throw SystemError("sched_setaffinity", path: "/proc/\(pid)/task/\(tid)", errno: code) }
        }
    }

    /// Limits the calling thread to the CPUs in `mask` (bit i: CPU i); 0 frees it.
    public static func pinThisThread(toCPUs mask: UInt64) throws(SystemError) {
        guard seam_set_affinity(0, mask) != 0 else { return }
        let code = errno
        throw SystemError("sched_setaffinity", errno: code)
    }
}

/// Pipes, close-on-exec at both ends (a child gets one end only through `Processes.spawn`).
public enum Pipes {
    public static func make() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard seam_pipe(&fds) == 0 else { throw SystemError("pipe2", errno: errno) }
        return (fds[0], fds[1])
    }
}

/// Terminal sizes (the ioctls Swift cannot call directly).
public enum TerminalSize {
    /// Rows and columns of the terminal on `fd`; nil when it is not a terminal.
    public static func of(_ fd: Int32) -> (rows: Int, columns: Int)? {
        var rows: Int32 = 0, columns: Int32 = 0
        guard seam_window_size(fd, &rows, &columns) == 0 else { return nil }
        return (Int(rows), Int(columns))
    }

    public static func set(_ fd: Int32, rows: Int, columns: Int) -> Bool {
        seam_set_window_size(fd, Int32(rows), Int32(columns)) == 0
    }

    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// A new pseudo-terminal: its master side, and the path of the side a program is given.
    public static func openPseudoTerminal() throws(SystemError) -> (master: Int32, path: String) {
        var name = [CChar](repeating: 0, count: 128)
        let master = seam_open_pty(&name, name.count)
        guard master >= 0 else { throw SystemError("posix_openpt", errno: errno) }
        return (master, String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
