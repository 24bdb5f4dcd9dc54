import CSeamSystem
import Glibc

/// Who is on the other end of a Unix socket, as the kernel says (`SO_PEERCRED`).
public struct PeerCredentials: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
}

/// Unix stream sockets: listening, accepting, connecting, reading and writing without blocking.
/// Every call is checked; `EINTR` is retried and `EAGAIN` becomes a value, not an error.
public enum UnixSocket {
    /// The longest path a `sockaddr_un` holds.
    public static let maxPathLength = 107

    /// Creates a listening socket at `path`: its directory 0700 (created if missing), the socket
    /// 0600. A leftover socket file that nobody answers on is removed first; a live one is an
    /// `EADDRINUSE` error.
    public static func listen(path: String, backlog: Int32 = 128) throws(SystemError) -> Int32 {
        guard path.utf8.count <= maxPathLength else { throw SystemError("bind", path: path, errno: ENAMETOOLONG) }
        let directory = FileSystem.parentDirectory(path)
        try FileSystem.makeDirectory(directory, mode: 0o700)
        if let why = FileSystem.untrustedDirectory(directory) {
            throw SystemError("listen", path: path, errno: EPERM,
                              detail: "\(directory) is not safe for a socket, since \(why); give a --socket in a directory of yours")
        }
        if FileSystem.exists(path) {
            if let fd = try? connect(path: path) {
                close(fd)
                throw SystemError("bind", path: path, errno: EADDRINUSE)
            }
            // Only a socket is a leftover to clear: any other file there is someone's, and kept.
            guard FileSystem.isSocket(path) else {
                throw SystemError("bind", path: path, errno: EEXIST, detail: "it is a file, not a socket; give another --socket, or move the file aside")
            }
            try FileSystem.remove(path)
        }
        let fd = try FileSystem.retrying("socket", path) { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0) }
        let oldMask = umask(0o177)
        let rc = withAddress(path) { bind(fd, $0, $1) }
        let bindErrno = errno
        umask(oldMask)
        if rc != 0 {
            close(fd)
            throw SystemError("bind", path: path, errno: bindErrno)
        }
        func failed(_ operation: String) -> SystemError {
            let e = errno
            close(fd)
            unlink(path)  // bound by us a moment ago: not left behind
            return SystemError(operation, path: path, errno: e)
        }
        if chmod(path, 0o600) != 0 { throw failed("chmod") }
        if Glibc.listen(fd, backlog) != 0 { throw failed("listen") }
        return fd
    }

    /// Connects to the socket at `path` (blocking connect, then the descriptor as it is).
    public static func connect(path: String) throws(SystemError) -> Int32 {
        guard path.utf8.count <= maxPathLength else { throw SystemError("connect", path: path, errno: ENAMETOOLONG) }
        let fd = try FileSystem.retrying("socket", path) { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        let rc = withAddress(path) { Glibc.connect(fd, $0, $1) }
        if rc != 0 {
            let e = errno
            close(fd)
            throw SystemError("connect", path: path, errno: e)
        }
        return fd
    }

    /// Accepts one pending connection (non-blocking, close-on-exec), or nil when none waits.
    public static func accept(_ listener: Int32) throws(SystemError) -> Int32? {
        while true {
            let fd = seam_accept(listener)
            if fd >= 0 { return fd }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ECONNABORTED: return nil
            default: throw SystemError("accept", errno: errno)
            }
        }
    }

    public static func peerCredentials(_ fd: Int32) throws(SystemError) -> PeerCredentials {
        var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
        guard seam_peer_credentials(fd, &pid, &uid, &gid) == 0 else { throw SystemError("getsockopt(SO_PEERCRED)", errno: errno) }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }

    public enum ReadResult: Sendable, Equatable {
        case bytes(Int)
        case wouldBlock
        case closed
    }

    /// Reads what is available into `buffer` (appending), at most `max` bytes.
    public static func read(_ fd: Int32, into buffer: inout [UInt8], max: Int = 65536) throws(SystemError) -> ReadResult {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max, alignment: 1)
        defer { scratch.deallocate() }
        let result = try read(fd, into: scratch)
        if case .bytes(let n) = result { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<n])) }
        return result
    }

    /// Reads what is available into `scratch`; `.bytes(n)` says how many of its first bytes are new.
    public static func read(_ fd: Int32, into scratch: UnsafeMutableRawBufferPointer) throws(SystemError) -> ReadResult {
        while true {
            let n = Glibc.read(fd, scratch.baseAddress, scratch.count)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET: return .closed
            default: throw SystemError("read", errno: errno)
            }
        }
    }

    /// Writes as much of `bytes[offset...]` as the socket takes now; returns how much it took.
    public static func write(_ fd: Int32, _ bytes: [UInt8], from offset: Int, atMost limit: Int = .max) throws(SystemError) -> Int {
        let count = min(bytes.count - offset, limit)
        while true {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, count, Int32(MSG_NOSIGNAL)) }
            if n >= 0 { return n }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return 0
            default: throw SystemError("send", errno: errno)
            }
        }
    }

    /// Writes all of `bytes`, waiting when the socket is full (for blocking clients).
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let n = try write(fd, bytes, from: offset)
            if n == 0 {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 1000)
            }
            offset += n
        }
    }

    /// Sets or clears `O_NONBLOCK`.
    public static func setNonBlocking(_ fd: Int32, _ on: Bool) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
    }

    /// Marks `fd` close-on-exec, so that no program this process starts inherits it; false when
    /// `fd` is no open descriptor.
    @discardableResult
    public static func setCloseOnExec(_ fd: Int32) -> Bool {
        let flags = fcntl(fd, F_GETFD)
        guard flags >= 0 else { return false }
        return fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0
    }

    /// Shuts both directions of a socket down: a thread blocked reading it wakes to end-of-file.
    public static func shutdown(_ fd: Int32) { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    /// Sets how many bytes the kernel buffers for sending on `fd` (it doubles the figure, and
    /// keeps a minimum of its own).
    public static func setSendBuffer(_ fd: Int32, bytes: Int) {
        var size = Int32(clamping: bytes)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A connected pair of sockets (for handing one to a child process).
    public static func pair() throws(SystemError) -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw SystemError("socketpair", errno: errno)
        }
        return (fds[0], fds[1])
    }

    public static func closeDescriptor(_ fd: Int32) { _ = Glibc.close(fd) }

    /// Waits up to `timeout` milliseconds for `fd` to be readable; false on timeout.
    /// Waits until one of `fds` has something to read (or hung up), or `timeoutMilliseconds` pass
    /// (-1: no limit); answers which did. An interrupted wait answers all false.
    public static func waitReadable(_ fds: [Int32], timeoutMilliseconds: Int32 = -1) -> [Bool] {
        var polls = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        guard poll(&polls, nfds_t(polls.count), timeoutMilliseconds) > 0 else { return fds.map { _ in false } }
        return polls.map { $0.revents != 0 }
    }

    /// Waits until one of `fds` can take more bytes, or `timeoutMilliseconds` pass.
    public static func waitWritable(_ fds: [Int32], timeoutMilliseconds: Int32) {
        var polls = fds.map { pollfd(fd: $0, events: Int16(POLLOUT), revents: 0) }
        while poll(&polls, nfds_t(polls.count), timeoutMilliseconds) < 0 && errno == EINTR {}
    }

    public static func waitReadable(_ fd: Int32, timeoutMilliseconds: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let rc = poll(&p, 1, timeoutMilliseconds)
            if rc < 0 && errno == EINTR { continue }
            return rc > 0
        }
    }

    private static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
