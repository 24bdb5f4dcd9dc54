import SeamSystem
import Synchronization

/// The socket seamd hands the processes it starts, on the descriptor `$SEAM_FD`; its connection
/// already holds the process's role. It goes to the first client in the process that asks.
/// Later clients connect to `$SEAM_SOCKET` (or the default path) instead: two clients reading
/// one stream would take each other's replies, and the first to close it would close both.
enum InheritedSocket {
    private static let taken = Mutex<Set<Int32>>([])

    /// `$SEAM_FD`, made non-blocking (reads wait in poll) and close-on-exec (a command the
    /// process runs does not inherit the broker connection), unless a client of this process
    /// has it already, or it names no open descriptor.
    static func take() -> Int32? {
        guard let text = Environment.value("SEAM_FD"), let fd = Int32(text), fd >= 3,
              taken.withLock({ $0.insert(fd).inserted })
        else { return nil }
        guard UnixSocket.setCloseOnExec(fd) else { return nil }
        UnixSocket.setNonBlocking(fd, true)
        return fd
    }
}
