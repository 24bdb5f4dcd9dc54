import CSeamSystem
import Glibc

/// Which of some names in a directory may have changed — been made, removed, or renamed in or
/// out — since last asked (inotify): so that checking, before each save, that a store's path
/// still names its file costs one `read` that finds nothing, not a `stat` of the path, until
/// something happens there. When the kernel's queue overflows, or the directory itself moves or
/// goes, every name may have changed.
public final class DirectoryWatch {
    private let fd: Int32
    private let names: [String]
    private let cNames: [UnsafeMutablePointer<CChar>]

    /// Watches `directory` for `names` (at most 64).
    public init(_ directory: String, names: [String]) throws(SystemError) {
        precondition(names.count <= 64, "a watch follows at most 64 names")
        let fd = seam_watch_directory(directory)
        guard fd >= 0 else { throw SystemError("inotify_add_watch", path: directory, errno: errno) }
        self.fd = fd
        self.names = names
        cNames = names.map { strdup($0)! }
    }

    deinit {
        close(fd)
        for p in cNames { free(p) }
    }

    /// The names that may have changed since the last call (none, most of the time).
    public func changed() throws(SystemError) -> [String] {
        var hits: UInt64 = 0
        let rc = cNames.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { seam_watch_read(fd, $0.baseAddress, Int32(names.count), &hits) }
        }
        guard rc == 0 else { throw SystemError("read inotify", errno: errno) }
        guard hits != 0 else { return [] }
        return names.indices.filter { hits & (1 << UInt64($0)) != 0 }.map { names[$0] }
    }
}
