import CSeamSystem
import Glibc

/// Flushes to the disk a file that someone else writes (SQLite's WAL), in two steps, so that
/// work done between them overlaps the disk's: `startWriteback` hands the file's dirty pages to
/// the disk and returns at once; `sync` waits until they, and anything written since, are on it
/// (`fdatasync`). ARCHITECTURE.md ("One context over two files") has what the overlap saves.
///
/// The file is opened read-only on first use (a WAL exists only once something is committed);
/// Linux flushes a file through any descriptor of it. One thread at a time.
public final class FileFlusher {
    public let path: String
    private var fd: Int32 = -1

    public init(path: String) { self.path = path }

    deinit { if fd >= 0 { close(fd) } }

    /// Starts writing the file's dirty pages out. Best effort: a failure here is the `sync`'s
    /// to report.
    public func startWriteback() {
        guard (try? open()) != nil else { return }
        _ = seam_start_writeback(fd)
    }

    /// Returns once everything written to the file so far is on the disk.
    public func sync() throws(SystemError) {
        try open()
        try FileSystem.retrying("fdatasync", path) { fdatasync(fd) }
    }

    private func open() throws(SystemError) {
        if fd >= 0 { return }
        fd = try FileSystem.retrying("open", path) { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
    }
}
