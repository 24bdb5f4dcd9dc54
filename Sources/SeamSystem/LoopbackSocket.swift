import Glibc

/// TCP on 127.0.0.1 only, for the endpoints a local program serves (the metrics role): listening
/// on a port of the loopback, and the port it got. Accept, read and write are `UnixSocket`'s
/// (they take any stream socket).
public enum LoopbackSocket {
    /// A non-blocking, close-on-exec socket listening on 127.0.0.1:`port` (0: a free port, see
    /// `port(of:)`). `SO_REUSEADDR`, so that a restart does not wait out the old one's TIME_WAIT.
    public static func listen(port: Int, backlog: Int32 = 64) throws(SystemError) -> Int32 {
        let what = "127.0.0.1:\(port)"
        guard (0...65_535).contains(port) else { throw SystemError("bind", path: what, errno: EINVAL) }
        let fd = try FileSystem.retrying("socket", what) {
            socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = withLoopback(port) { bind(fd, $0, $1) }
        if rc != 0 || Glibc.listen(fd, backlog) != 0 {
            let e = errno
            close(fd)
            throw SystemError(rc != 0 ? "bind" : "listen", path: what, errno: e)
        }
        return fd
    }

    /// A blocking socket connected to 127.0.0.1:`port` (a client of such an endpoint: the tests).
    public static func connect(port: Int) throws(SystemError) -> Int32 {
        let what = "127.0.0.1:\(port)"
        let fd = try FileSystem.retrying("socket", what) { socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        guard withLoopback(port, { Glibc.connect(fd, $0, $1) }) == 0 else {
            let e = errno
            close(fd)
            throw SystemError("connect", path: what, errno: e)
        }
        return fd
    }

    private static func withLoopback(_ port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// The port a listening socket is bound to.
    public static func port(of fd: Int32) throws(SystemError) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { throw SystemError("getsockname", errno: errno) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
