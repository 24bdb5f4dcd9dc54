import Foundation

/// A fresh directory under the system's temporary directory, removed when released.
public final class TemporaryDirectory {
    public let path: String

    public init(_ label: String = "seam") {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        path = base + "/\(label)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// `path/name`.
    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
