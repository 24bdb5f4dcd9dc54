import Glibc

/// A failed system call: which call, on what, and the `errno` it left.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    public var operation: String
    public var path: String?
    public var errno: Int32
    /// What the error number alone would not say (why the call was refused before it was made).
    public var detail: String?

    public init(_ operation: String, path: String? = nil, errno: Int32, detail: String? = nil) {
        self.operation = operation
        self.path = path
        self.errno = errno
        self.detail = detail
    }

    public var message: String { String(cString: strerror(errno)) + (detail.map { ": \($0)" } ?? "") }

    public var description: String {
        "\(operation)\(path.map { " \($0)" } ?? ""): \(message) (errno \(errno))"
    }

    public static let noSpace = ENOSPC
    public static let notFound = ENOENT
    public static let exists = EEXIST
    public static let accessDenied = EACCES
    public static let readOnlyFileSystem = EROFS
    public static let addressInUse = EADDRINUSE
    public static let wouldBlock = EWOULDBLOCK
    /// A write to a socket or pipe whose other end is closed.
    public static let brokenPipe = EPIPE
    public static let connectionReset = ECONNRESET
}
