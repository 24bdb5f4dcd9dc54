import Glibc

/// The process environment and the paths Seam derives from it (see `design.md`, Contracts).
public enum Environment {
    /// Sets a variable for this process and the programs it starts (before any thread runs).
    public static func set(_ name: String, _ value: String) {
        setenv(name, value, 1)
    }

    public static func value(_ name: String) -> String? {
        guard let v = getenv(name) else { return nil }
        let s = String(cString: v)
        return s.isEmpty ? nil : s
    }

    /// `$HOME`, else the home directory the user database gives this user (a process started
    /// with an empty environment), else `/`.
    public static var home: String {
        if let h = value("HOME") { return h }
        if let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir, dir.pointee != 0 { return String(cString: dir) }
        return "/"
    }

    /// `$SEAM_DATA_DIR`, else `$XDG_DATA_HOME/seam`, else `~/.local/share/seam`.
    public static var dataDirectory: String {
        value("SEAM_DATA_DIR") ?? FileSystem.join(value("XDG_DATA_HOME") ?? FileSystem.join(home, ".local/share"), "seam")
    }

    /// `$SEAM_SOCKET`, else `$XDG_RUNTIME_DIR/seam/seamd.sock`, else `/tmp/seam-$UID/seamd.sock`.
    public static var socketPath: String {
        if let s = value("SEAM_SOCKET") { return s }
        if let runtime = value("XDG_RUNTIME_DIR") { return FileSystem.join(runtime, "seam/seamd.sock") }
        return "/tmp/seam-\(getuid())/seamd.sock"
    }

    /// `$XDG_CONFIG_HOME/seam`, else `~/.config/seam`.
    public static var configDirectory: String {
        FileSystem.join(value("XDG_CONFIG_HOME") ?? FileSystem.join(home, ".config"), "seam")
    }

    /// `$XDG_STATE_HOME/seam`, else `~/.local/state/seam`.
    public static var stateDirectory: String {
        FileSystem.join(value("XDG_STATE_HOME") ?? FileSystem.join(home, ".local/state"), "seam")
    }

    public static var userID: UInt32 { getuid() }

    /// The process's working directory ("/" when it cannot be read).
    public static var workingDirectory: String {
        var buffer = [CChar](repeating: 0, count: 4097)
        guard getcwd(&buffer, buffer.count) != nil else { return "/" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    public static var processID: Int32 { getpid() }

    /// The listening socket systemd passed (`LISTEN_FDS`, for this process), if any: fd 3.
    public static var socketActivationDescriptor: Int32? {
        guard let pid = value("LISTEN_PID"), Int32(pid) == getpid(), let n = value("LISTEN_FDS"), let count = Int(n), count >= 1 else {
            return nil
        }
        return 3
    }
}
