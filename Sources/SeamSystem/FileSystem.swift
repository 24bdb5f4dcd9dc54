import CSeamSystem
import Glibc

/// File operations the stores need, each one checked: the only place SeamStore's file handling
/// reaches the system. Calls are retried on `EINTR` (except `close`).
public enum FileSystem {
    /// Runs `call` until it does not fail with `EINTR`; throws on any other failure.
    @discardableResult
    static func retrying(_ operation: String, _ path: String?, _ call: () -> Int32) throws(SystemError) -> Int32 {
        while true {
            let rc = call()
            if rc >= 0 { return rc }
            let e = errno
            if e == EINTR { continue }
            throw SystemError(operation, path: path, errno: e)
        }
    }

    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Whether `path` is a Unix socket (not followed if it is a link).
    public static func isSocket(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK
    }

    /// Why directory `path` may not hold this process's socket, or nil when it may: it must be
    /// ours or root's, and writable by others only with the sticky bit (as `/tmp` is), so that
    /// nobody else can remove the socket and put theirs in its place.
    public static func untrustedDirectory(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        if st.st_uid != geteuid() && st.st_uid != 0 { return "it belongs to another user (uid \(st.st_uid))" }
        if st.st_mode & 0o022 != 0 && st.st_mode & 0o1000 == 0 { return "others may write to it and it has no sticky bit" }
        return nil
    }

    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether this process may create files in directory `path`; `nil` when it may, else the
    /// reason (`EROFS` for a read-only file system, `EACCES` for permissions).
    public static func writeProblem(_ path: String) -> SystemError? {
        access(path, W_OK) == 0 ? nil : SystemError("access", path: path, errno: errno)
    }

    /// Size in bytes, or `nil` when there is no such file.
    public static func size(_ path: String) -> Int64? {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : nil
    }

    /// Which file a path names: its device and inode, and how many names it has; nil when the
    /// path names nothing. Two paths name the same file when device and inode agree.
    public struct Identity: Sendable, Equatable, CustomStringConvertible {
        public var device: UInt64
        public var inode: UInt64
        public var links: UInt64
        /// Device and inode alike (the link count may differ).
        public func isSameFile(as other: Identity) -> Bool { device == other.device && inode == other.inode }
        public var description: String { "device \(device), inode \(inode), \(links) link\(links == 1 ? "" : "s")" }
    }

    public static func identity(_ path: String) -> Identity? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Identity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), links: UInt64(st.st_nlink))
    }

    /// The bytes this user may still write on the file system that holds `path`; nil when it
    /// cannot be asked.
    public static func availableBytes(_ path: String) -> Int64? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        return Int64(st.f_bavail) * Int64(st.f_frsize)
    }

    /// The permission bits of `path` (`0o600`, say), following links, and whether this user
    /// owns it; nil when there is no such file.
    public static func permissions(_ path: String) -> (mode: UInt32, ownedByMe: Bool)? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return (UInt32(st.st_mode & 0o7777), st.st_uid == getuid())
    }

    /// What kind of file `path` is, not following a final link: "file", "directory", "link",
    /// "fifo", "socket", "device"; nil when there is none.
    public static func kind(_ path: String) -> String? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        switch st.st_mode & S_IFMT {
        case S_IFREG: return "file"
        case S_IFDIR: return "directory"
        case S_IFLNK: return "link"
        case S_IFIFO: return "fifo"
        case S_IFSOCK: return "socket"
        default: return "device"
        }
    }

    /// When the file was last modified (Unix seconds), or nil when there is no such file.
    public static func modified(_ path: String) -> Double? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
    }

    /// Removes an empty directory; one that is already gone is not an error.
    public static func removeDirectory(_ path: String) throws(SystemError) {
        if rmdir(path) != 0, errno != ENOENT { throw SystemError("rmdir", path: path, errno: errno) }
    }

    /// Removes a file; a file that is already gone is not an error.
    public static func remove(_ path: String) throws(SystemError) {
        if unlink(path) != 0, errno != ENOENT { throw SystemError("unlink", path: path, errno: errno) }
    }

    /// Renames atomically within one file system, replacing `to` if it exists.
    public static func rename(_ from: String, to: String) throws(SystemError) {
        try retrying("rename", "\(from) -> \(to)") { Glibc.rename(from, to) }
    }

    /// Makes a hard link `to` for `from`.
    public static func link(_ from: String, to: String) throws(SystemError) {
        try retrying("link", "\(from) -> \(to)") { Glibc.link(from, to) }
    }

    /// Creates a directory (and its parents) with `mode`; an existing directory is fine.
    public static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws(SystemError) {
        if isDirectory(path) { return }
        let parent = parentDirectory(path)
        if parent != path, !parent.isEmpty, !isDirectory(parent) { try makeDirectory(parent, mode: mode) }
        if mkdir(path, mode) != 0 {
            // Something else by that name (a file) is not the directory asked for.
            let e = errno == EEXIST && !isDirectory(path) ? ENOTDIR : errno
            if e != EEXIST { throw SystemError("mkdir", path: path, errno: e) }
        }
    }

    /// Flushes a file's data and metadata to the disk.
    public static func sync(_ path: String) throws(SystemError) {
        let fd = try retrying("open", path) { open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        try retrying("fsync", path) { fsync(fd) }
    }

    /// Flushes a directory, so that renames and unlinks in it are on the disk.
    public static func syncDirectory(_ path: String) throws(SystemError) {
        let fd = try retrying("open", path) { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        try retrying("fsync", path) { fsync(fd) }
    }

    /// The names in a directory, without `.` and `..`.
    public static func contents(of path: String) throws(SystemError) -> [String] {
        guard let dir = opendir(path) else { throw SystemError("opendir", path: path, errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { p in
                p.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// The whole file, or an error.
    public static func read(_ path: String) throws(SystemError) -> [UInt8] {
        let fd = try retrying("open", path) { open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = try retrying("read", path) { Int32(truncatingIfNeeded: buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }) }
            if n == 0 { break }
            out.append(contentsOf: buffer[0..<Int(n)])
        }
        return out
    }

    /// Copies a file's bytes to a new file (`copy_file_range`, so the kernel does the work) and
    /// flushes the copy to disk.
    public static func copyFile(
        _ from: String, to: String, mode: mode_t = 0o600, progress: (Int64) -> Void = { _ in }
    ) throws(SystemError) {
        let input = try retrying("open", from) { open(from, O_RDONLY | O_CLOEXEC) }
        defer { close(input) }
        let output = try retrying("open", to) { open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }
        defer { close(output) }
        // 64 MiB a call: few system calls, and progress a person can watch on a large file.
        let chunk = 1 << 26
        var copied: Int64 = 0
        var inKernel = true
        var buffer: [UInt8] = []
        while true {
            var n: Int
            if inKernel {
                n = seam_copy_file_range(input, output, chunk)
                // Between file systems (a backup set on another disk) the kernel may not copy: read
                // and write instead, from where it stopped.
                if n < 0, copied == 0 || [EXDEV, EINVAL, ENOSYS, EOPNOTSUPP].contains(errno),
                   [EXDEV, EINVAL, ENOSYS, EOPNOTSUPP].contains(errno) {
                    inKernel = false
                    buffer = [UInt8](repeating: 0, count: 1 << 20)
                    continue
                }
            } else {
                n = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
                if n > 0 {
                    var written = 0
                    while written < n {
                        let w = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress! + written, n - written) }
                        if w < 0 {
                            if errno == EINTR { continue }
                            throw SystemError("write", path: to, errno: errno)
                        }
                        written += w
                    }
                }
            }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError(inKernel ? "copy_file_range" : "read", path: "\(from) -> \(to)", errno: errno)
            }
            copied += Int64(n)
            progress(copied)
        }
        try retrying("fsync", to) { fsync(output) }
    }

    /// Writes `bytes` to `path` so that a crash leaves either the old file or the whole new one:
    /// a temporary file, fsync, rename, fsync of the directory.
    public static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(SystemError) {
        let temporary = path + ".tmp"
        let fd = try retrying("open", temporary) { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }
        var written = 0
        do {
            while written < bytes.count {
                let n = try retrying("write", temporary) {
                    Int32(truncatingIfNeeded: bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) })
                }
                written += Int(n)
            }
            try retrying("fsync", temporary) { fsync(fd) }
        } catch {
            close(fd)
            try? remove(temporary)
            throw error
        }
        close(fd)
        try rename(temporary, to: path)
        try syncDirectory(parentDirectory(path))
    }

    /// Opens `path` for appending (created 0600 if missing), close-on-exec: for a log.
    public static func openForAppending(_ path: String) throws(SystemError) -> Int32 {
        try retrying("open", path) { open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600) }
    }

    /// The directory part of `path` (`.` for a bare name).
    public static func parentDirectory(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let parent = String(path[..<slash])
        return parent.isEmpty ? "/" : parent
    }

    /// `a/b`, without doubling the slash.
    public static func join(_ a: String, _ b: String) -> String { a.hasSuffix("/") ? a + b : a + "/" + b }
}
