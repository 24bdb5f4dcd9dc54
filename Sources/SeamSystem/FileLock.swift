import Glibc

/// An exclusive lock on a file, held while the object lives (`flock`, released by the kernel when
/// the process dies, so a crash never leaves a stale lock).
public final class FileLock {
    public let path: String
    private var fd: Int32

    /// Takes the lock, or throws `EWOULDBLOCK` when another process holds it.
    public init(path: String) throws(SystemError) {
        self.path = path
        fd = try FileSystem.retrying("open", path) { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            close(fd)
            throw SystemError("flock", path: path, errno: e)
        }
    }

    deinit { release() }

    /// Lets the lock go (once; the process may take it again with a new `FileLock`).
    public func release() {
        guard fd >= 0 else { return }
        flock(fd, LOCK_UN)
        close(fd)
        fd = -1
    }
}
