import Glibc

/// Asks the kernel to bring a file's pages into its page cache before someone needs them
/// (`posix_fadvise` with `POSIX_FADV_WILLNEED`): the reads start and the call returns; a page
/// already cached costs a lookup. Best effort throughout: nothing here fails its caller.
///
/// The file is opened read-only on first use (a WAL exists only once something is committed),
/// and again when the one it had was removed (a WAL is deleted when its store closes). One
/// thread at a time.
public final class ReadAhead {
    public let path: String
    private var fd: Int32 = -1

    public init(path: String) { self.path = path }

    deinit { if fd >= 0 { close(fd) } }

    /// Starts reading `length` bytes from `offset` into the page cache.
    public func willNeed(offset: Int, length: Int) {
        var status = stat()
        if fd >= 0, fstat(fd, &status) == 0, status.st_nlink == 0 {
            close(fd)
            fd = -1
        }
        if fd < 0 {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd < 0 { return }
        }
        _ = posix_fadvise(fd, off_t(offset), off_t(length), POSIX_FADV_WILLNEED)
    }
}
