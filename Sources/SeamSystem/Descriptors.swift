import CSeamSystem
import Glibc

/// Small helpers on plain file descriptors.
public enum Descriptors {
    /// Writes all of `text` to `fd`, retrying short writes and `EINTR`; errors are dropped (for logs).
    public static func write(_ fd: Int32, _ text: String) { write(fd, Array(text.utf8)) }

    /// Writes all of `bytes` to `fd`, as `write(_:_:)` does text.
    public static func write(_ fd: Int32, _ bytes: [UInt8]) {
        var bytes = bytes[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue } else { return } }
            bytes = bytes.dropFirst(n)
        }
    }

    public static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// Pushes what `print` buffered to standard output now (a stream read by a pipe); `fflush(NULL)`
    /// flushes every output stream.
    public static func flushOutput() { fflush(nil) }

    /// This process's resident set size now, in bytes (from /proc/self/statm).
    public static func residentBytes() -> Int {
        guard let bytes = try? FileSystem.read("/proc/self/statm") else { return 0 }
        let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// Signal numbers, so that modules above this one need not import Glibc.
public enum Signals {
    public static let terminate = SIGTERM
    public static let interrupt = SIGINT
    public static let kill = SIGKILL
    public static let child = SIGCHLD
    public static let hangup = SIGHUP
    public static let windowChange = SIGWINCH
    /// Pause and resume a process (for tests and benchmarks that hold a worker still).
    public static let stop = SIGSTOP
    public static let resume = SIGCONT

    /// A daemon's first call: a write to a closed pipe (a stderr whose reader went away) is then
    /// the error `EPIPE`, not SIGPIPE ending the process before it can stop cleanly. Programs
    /// it starts get the default back (`Processes.spawn` resets every signal).
    public static func ignoreBrokenPipes() { signal(SIGPIPE, SIG_IGN) }

    /// For a process that supervises children: SIGCHLD back to its default, whatever the process
    /// inherited. Ignored (a parent that set it so, and exec keeps it), the kernel reaps every
    /// child at once and says nothing: none would be seen to end, or be started again.
    public static func watchChildren() { signal(SIGCHLD, SIG_DFL) }

    /// Routes `signals` to a pipe, whichever thread they land on: read one byte per signal
    /// (its number) from the descriptor returned. Once per process.
    public static func pipe(_ signals: [Int32]) throws(SystemError) -> Int32 {
        let fd = signals.withUnsafeBufferPointer { seam_signal_pipe($0.baseAddress, Int32($0.count)) }
        guard fd >= 0 else { throw SystemError("sigaction", errno: errno) }
        return fd
    }
}
