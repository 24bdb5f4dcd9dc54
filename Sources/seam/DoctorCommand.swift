import SeamClient
import SeamCommandLine
import SeamJSON
import SeamSyncSetup
import SeamSystem

/// `seam doctor`: gathers what `Doctor` judges — the socket and its directory, seamd's status,
/// the systemd units, free disk beside the stores, the sync files and worker — and prints a
/// line per check (or JSON); exits 1 when any check found a problem.
enum DoctorCommand {
    static let command = Command("doctor", "check what can go wrong around Seam, and say what to do about each problem",
                                 options: [Opt.dataDir, Opt.configDir, Opt.json]) { _, args in
        let findings = Doctor.findings(facts(args))
        let problems = findings.filter { $0.level == .problem }.count
        if args.flag("json") {
            output(.object(["findings": .array(findings.map(\.json)), "problems": .integer(Int64(problems))]))
        } else {
            let width = min(24, findings.map(\.check.count).max() ?? 0)
            for f in findings {
                let level = f.level == .problem ? "PROBLEM" : f.level.rawValue
                print(level.padded(8) + Terminal.printable(f.check).padded(width + 2) + Terminal.printable(f.said))
                if let todo = f.todo { print(String(repeating: " ", count: 10 + width) + "→ " + todo) }
            }
            print(problems == 0 ? "no problems found" : "\(problems) problem(s) found")
        }
        Terminal.flushOutput()
        if problems > 0 { Terminal.exit(1) }
    }

    static func facts(_ args: Arguments) -> Doctor.Facts {
        let socket = args.value("socket") ?? Environment.socketPath
        let config = args.value("config-dir") ?? Environment.configDirectory
        let unitDirectory = FileSystem.join(Environment.value("XDG_CONFIG_HOME") ?? FileSystem.join(Environment.home, ".config"), "systemd/user")
        var f = Doctor.Facts(socketPath: socket, unitDirectory: unitDirectory, dataDirectory: args.value("data-dir") ?? Environment.dataDirectory)
        let socketDirectory = Doctor.parent(socket)
        f.socketDirectoryExists = FileSystem.isDirectory(socketDirectory)
        if f.socketDirectoryExists { f.socketDirectoryProblem = FileSystem.untrustedDirectory(socketDirectory) }
        do {
            let c = try SeamConnection.connect(path: socket)
            f.status = try c.status()
            if FileSystem.exists(FileSystem.join(config, "sync.json")) {
                f.syncStatus = try? c.call("org.seam.Sync.Status")
            }
            // seamd's own data directory, when it says which.
            if args.value("data-dir") == nil, let path = f.status?["stores"]?[0]?["path"]?.stringValue { f.dataDirectory = Doctor.parent(path) }
        } catch {
            f.unreachable = !FileSystem.exists(socket) ? "no socket there" : FileSystem.isSocket(socket) ? "nothing answers on the socket"
                : "\(FileSystem.kind(socket) ?? "a file") there, not a socket"
        }
        // The user's own units first (they override), then those a package installed.
        for name in ["seamd.socket", "seamd.service"] {
            for (directory, shown) in [(unitDirectory, name), (Doctor.packagedUnitDirectory, "\(name) (\(Doctor.packagedUnitDirectory))")] {
                guard let text = try? FileSystem.read(FileSystem.join(directory, name)) else { continue }
                let program = name == "seamd.service" ? execStart(String(decoding: text, as: UTF8.self)) : nil
                f.units.append((shown, program, program.map { FileSystem.exists($0) } ?? true))
                break
            }
        }
        f.availableBytes = FileSystem.availableBytes(FileSystem.isDirectory(f.dataDirectory) ? f.dataDirectory : Doctor.parent(f.dataDirectory))
        let syncPath = FileSystem.join(config, "sync.json")
        if FileSystem.exists(syncPath) {
            f.syncConfigured = true
            do {
                let c = try SyncConfiguration.parse(try FileSystem.read(syncPath), path: syncPath)
                if let p = c.passwordFile {
                    if let (mode, mine) = FileSystem.permissions(p) {
                        if !mine || mode & 0o077 != 0 {
                            f.syncProblems.append("\(p) may be read by others (mode \(String(mode, radix: 8))): chmod 600 \(p), and change "
                                                  + "the server password if someone else may have read it")
                        }
                    } else {
                        f.syncProblems.append("\(p), the password file sync.json names, is missing: seam sync setup URL again")
                    }
                }
                if let k = c.keyFile {
                    do { _ = try ZoneKey.read(k) } catch { f.syncProblems.append(error.description) }
                }
            } catch {
                f.syncProblems.append("\(error)")
            }
        }
        return f
    }

    /// The program of a unit's `ExecStart=` (quoted as `seam install-units` writes it, or not).
    static func execStart(_ unit: String) -> String? {
        guard let line = unit.split(separator: "\n").first(where: { $0.hasPrefix("ExecStart=") }) else { return nil }
        var rest = line.dropFirst("ExecStart=".count)
        guard rest.first == "\"" else { return rest.split(separator: " ").first.map(String.init) }
        rest = rest.dropFirst()
        var out = "", escaped = false
        for c in rest {
            if escaped { out.append(c); escaped = false; continue }
            if c == "\\" { escaped = true; continue }
            if c == "\"" { break }
            out.append(c)
        }
        return out.replacing("%%", with: "%")
    }
}

extension String {
    fileprivate func padded(_ width: Int) -> String { count >= width ? self + " " : self + String(repeating: " ", count: width - count) }
}
