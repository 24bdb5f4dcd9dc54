import SeamJSON

/// What `seam doctor` found, a check at a time: what it looked at, what it saw, and — for
/// anything short of ok — what to do. Pure: the facts come from `DoctorCommand`.
struct Finding: Equatable {
    enum Level: String { case ok, note, warning, problem }

    var check: String
    var level: Level
    var said: String
    var todo: String?

    var json: JSON {
        .object(["check": .string(check), "level": .string(level.rawValue), "said": .string(said), "todo": todo.map(JSON.string) ?? .null])
    }
}

enum Doctor {
    /// What `DoctorCommand` gathered.
    struct Facts {
        var socketPath: String
        /// Why the socket's directory is unsafe (others may write to it), nil when it is safe
        /// or missing.
        var socketDirectoryProblem: String?
        var socketDirectoryExists = true
        /// `org.seam.Store.Status`, when seamd answered; else why not.
        var status: JSONObject?
        var unreachable: String?
        var syncStatus: JSONObject?
        /// The systemd user units' directory, and for each unit there its `ExecStart` program
        /// (nil for the socket unit) and whether that program exists.
        var unitDirectory: String
        var units: [(name: String, program: String?, programExists: Bool)] = []
        var dataDirectory: String
        var availableBytes: Int64?
        /// The sync configuration: nil when there is none; its problems (unreadable, a password
        /// or key file others may read, a key file missing) when there is.
        var syncConfigured = false
        var syncProblems: [String] = []
    }

    static let mebibyte: Int64 = 1 << 20

    static func findings(_ f: Facts) -> [Finding] {
        var out: [Finding] = []
        // The socket and seamd.
        if let problem = f.socketDirectoryProblem {
            out.append(Finding(check: "socket directory", level: .problem, said: "\(parent(f.socketPath)): \(problem): another user could put "
                               + "a socket of theirs in place of seamd's", todo: "chmod 700 \(parent(f.socketPath)), or use a directory of "
                               + "your own (--socket, $SEAM_SOCKET)"))
        } else if f.socketDirectoryExists {
            out.append(Finding(check: "socket directory", level: .ok, said: "\(parent(f.socketPath)) is yours alone"))
        }
        if let s = f.status {
            out.append(Finding(check: "seamd", level: .ok, said: "\(s["product"]?.stringValue ?? "seamd") \(s["version"]?.stringValue ?? "") "
                               + "(pid \(s["pid"]?.int64Value ?? 0)) answers on \(f.socketPath)"))
        } else {
            out.append(Finding(check: "seamd", level: .problem, said: "no seamd answers on \(f.socketPath)" + (f.unreachable.map { " (\($0))" } ?? ""),
                               todo: "seam up (or systemctl --user start seamd.socket, with the units); seamd --help for running it by hand"))
        }
        out += units(f)
        out += stores(f)
        out += disk(f)
        out += sync(f)
        out += roles(f)
        return out
    }

    /// Where the Debian package puts the systemd user units.
    static let packagedUnitDirectory = "/usr/lib/systemd/user"

    static func units(_ f: Facts) -> [Finding] {
        guard !f.units.isEmpty else {
            return [Finding(check: "units", level: .note, said: "no systemd user units in \(f.unitDirectory) or \(packagedUnitDirectory)",
                            todo: "seam install-units writes them, so that systemd starts seamd at the first connection")]
        }
        return f.units.map { u in
            guard let program = u.program else { return Finding(check: "unit \(u.name)", level: .ok, said: "installed") }
            return u.programExists
                ? Finding(check: "unit \(u.name)", level: .ok, said: "runs \(program)")
                : Finding(check: "unit \(u.name)", level: .problem, said: "runs \(program), which is not there (moved, or removed)",
                          todo: "seam install-units --force, from the seam beside the seamd to run")
        }
    }

    static func stores(_ f: Facts) -> [Finding] {
        guard let s = f.status else {
            return [Finding(check: "stores", level: .note, said: "not looked at: seamd does not answer", todo: "seam check --data-dir "
                            + "\(f.dataDirectory) checks them without seamd")]
        }
        var out: [Finding] = []
        for store in s["stores"]?.arrayValue ?? [] {
            let name = store["name"]?.stringValue ?? "?"
            let state = store["state"]?.stringValue ?? "?"
            let reason = store["reason"]?.stringValue
            let check = "store \(name)"
            switch state {
            case "open" where store["readOnly"]?.boolValue == true:
                out.append(Finding(check: check, level: .problem, said: "read only: \(store["readOnlyReason"]?.stringValue ?? "")",
                                   todo: "give it back to this user (chmod u+w \(store["path"]?.stringValue ?? ""))"))
            case "open":
                out.append(Finding(check: check, level: .ok, said: "open, \(megabytes(store["size"]?.int64Value ?? 0))"))
            case "outdated":
                out.append(Finding(check: check, level: .warning, said: "served at an older version until it is migrated",
                                   todo: "seam migrate (seam migrate --dry-run shows the plan)"))
            case "migrating":
                out.append(Finding(check: check, level: .note, said: "migrating", todo: "seam migrate shows how far"))
            case "damaged":
                out.append(Finding(check: check, level: .problem, said: "damaged: \(reason ?? "")",
                                   todo: store["backup"]?.stringValue.map { "seam restore a set seam backup made, or the copy backups/ keeps: \($0)" }
                                       ?? "seam restore a set seam backup made (backups/ keeps no copy of it)"))
            default:
                out.append(Finding(check: check, level: .problem, said: "\(state)" + (reason.map { ": \($0)" } ?? ""),
                                   todo: "seam store info says more"))
            }
        }
        return out
    }

    static func disk(_ f: Facts) -> [Finding] {
        guard let free = f.availableBytes else { return [] }
        let sizes = (f.status?["stores"]?.arrayValue ?? []).compactMap { $0["size"]?.int64Value }
        // A migration writes a copy of a store beside it; a backup, a copy of them all.
        let needed = 2 * (sizes.max() ?? 0) + 64 * mebibyte
        if free < 16 * mebibyte {
            return [Finding(check: "disk", level: .problem, said: "\(megabytes(free)) free beside the stores in \(f.dataDirectory)",
                            todo: "free some space: saves fail when the disk is full (nothing is lost, but nothing is kept)")]
        }
        if free < needed {
            return [Finding(check: "disk", level: .warning, said: "\(megabytes(free)) free beside the stores; a migration or a backup needs "
                            + "about \(megabytes(needed))", todo: "free some space before the next migration (seam migrate) or seam backup")]
        }
        return [Finding(check: "disk", level: .ok, said: "\(megabytes(free)) free beside the stores")]
    }

    static func sync(_ f: Facts) -> [Finding] {
        guard f.syncConfigured else {
            return [Finding(check: "sync", level: .note, said: "not set up", todo: "seam sync setup postgresql://USER@HOST/DATABASE, to sync "
                            + "timers between machines")]
        }
        var out = f.syncProblems.map { Finding(check: "sync files", level: .problem, said: $0, todo: nil) }
        guard let s = f.syncStatus else { return out }
        let state = s["state"]?.stringValue ?? "?"
        if s["running"]?.boolValue != true {
            out.append(Finding(check: "sync", level: .problem, said: "the worker is not running" + (s["lastError"]?.stringValue.map { ": \($0)" } ?? ""),
                               todo: "seam status shows the sync role; seam sync setup URL again if its files are wrong"))
        } else if state == "error" || state.hasPrefix("waiting for the server") {
            out.append(Finding(check: "sync", level: .problem, said: "\(state): \(s["lastError"]?.stringValue ?? "")",
                               todo: "seam sync status; seam sync now once it is fixed"))
        } else {
            let setAside = s["setAside"]?.arrayValue?.count ?? 0
            out.append(Finding(check: "sync", level: setAside > 0 ? .warning : .ok,
                               said: "\(state) with \(s["server"]?.stringValue ?? "the server")"
                                   + (setAside > 0 ? "; \(setAside) record(s) set aside" : ""),
                               todo: setAside > 0 ? "seam sync status names them and why" : nil))
        }
        return out
    }

    static func roles(_ f: Facts) -> [Finding] {
        (f.status?["roles"]?.arrayValue ?? []).compactMap { r in
            let name = r["name"]?.stringValue ?? "?"
            let state = r["state"]?.stringValue ?? "?"
            let restarts = r["restarts"]?.int64Value ?? 0
            let error = r["lastError"]?.stringValue
            if state == "running", restarts == 0 { return Finding(check: "role \(name)", level: .ok, said: "running") }
            if state == "stopped" { return Finding(check: "role \(name)", level: .note, said: "stopped" + (error.map { ": \($0)" } ?? "")) }
            return Finding(check: "role \(name)", level: state == "running" ? .warning : .problem,
                           said: "\(state), restarted \(restarts) time(s)" + (error.map { "; last: \($0)" } ?? ""),
                           todo: "its output is in seamd's log (seam up: $XDG_STATE_HOME/seam/seamd.log; systemd: journalctl --user -u seamd)")
        }
    }

    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func megabytes(_ bytes: Int64) -> String {
        if bytes >= 10 * mebibyte * 1024 { return "\(bytes / (mebibyte * 1024)) GiB" }
        let tenths = bytes * 10 / mebibyte
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}
