import SeamClient
import SeamCommandLine
import SeamJSON
import SeamSyncSetup
import SeamSystem

/// `seam sync …`: set sync up, see how it stands, ask for it now.
enum SyncCommands {
    static let all: [Command] = [
        Command("sync setup", "sync the Cloud store through a PostgreSQL server",
                operands: [Operand("URL", "postgresql://USER@HOST[:PORT]/DATABASE, with no password in it")],
                options: [.flag("password-stdin", "read the password from standard input, not a prompt", excludes: ["no-password"]),
                          .flag("no-password", "use libpq's own password or service file", excludes: ["password-stdin"]),
                          .flag("key-stdin", "read the zone's recovery phrase from standard input (after the password, with "
                                + "--password-stdin); an empty line: a new zone, whose key is made here"), Opt.configDir]) { operands, args in
            try setup(operands[0], args)
        },
        Command("sync status", "the server, the last push and pull, changes waiting, the last error", options: [Opt.json]) { _, args in
            let s = try connect(args, hello: false).call("org.seam.Sync.Status")
            if args.flag("json") { return output(.object(s)) }
            guard s["configured"]?.boolValue == true else {
                print("sync is not configured: `seam sync setup postgresql://USER@HOST/DATABASE` sets it up")
                return
            }
            print("server: \(s["server"]?.stringValue ?? "(the worker has not reported yet)")")
            print("worker: \(s["running"]?.boolValue == true ? "running" : "not running"), \(s["state"]?.stringValue ?? "starting")")
            func when(_ key: String) -> String {
                guard let t = s[key]?.doubleValue else { return "never" }
                let ago = max(0, WallClock.now() - t)
                return ago < 1 ? "just now" : "\(Int(ago)) s ago"
            }
            print("last push: \(when("lastPush")), last pull: \(when("lastPull"))")
            print("pending: \(s["pending"]?.int64Value ?? 0) change(s); pushed \(s["pushed"]?.int64Value ?? 0), "
                  + "pulled \(s["pulled"]?.int64Value ?? 0) record(s) since the worker started")
            if let e = s["lastError"]?.stringValue { print("last error: \(e)") }
            if let t = s["nextTry"]?.doubleValue { print("trying again in \(max(0, Int((t - WallClock.now()).rounded(.up)))) s (`seam sync now` tries at once)") }
            let setAside = s["setAside"]?.arrayValue ?? []
            if !setAside.isEmpty {
                print("set aside: \(setAside.count) record(s) sync passes over until they change (correct or delete them on the server):")
                for r in setAside {
                    print("  \(r["type"]?.stringValue ?? "?") \(r["uuid"]?.stringValue ?? "?"): \(DisplayWidth.cut(Terminal.printable(r["reason"]?.stringValue ?? ""), to: 160))")
                }
            }
        },
        Command("sync off", "stop syncing: remove sync.json and the password file, and stop the worker (the data stays, here and on the server)",
                options: [Opt.configDir]) { _, args in
            try off(args)
        },
        Command("sync now", "ask the sync worker to sync at once") { _, args in
            try connect(args).call("org.seam.Sync.Now")
            print("asked seam-sync to sync now; `seam sync status` shows how it went")
        },
    ] + SyncKeys.commands

    /// Removes the sync configuration and its password file, and has seamd stop its worker.
    /// The records stay, here and on the server; setting up again later syncs what changed.
    static func off(_ args: Arguments) throws {
        let directory = args.value("config-dir") ?? Environment.configDirectory
        let path = FileSystem.join(directory, "sync.json")
        guard FileSystem.exists(path) else {
            print("sync is not configured (no \(path))")
            return
        }
        // The key stays: the zone's records are sealed with it, and setting up again needs it.
        for file in [path, FileSystem.join(directory, "sync.pgpass")] where FileSystem.exists(file) {
            do { try FileSystem.remove(file) } catch { throw CLIError("cannot remove \(file): \(error.message)") }
            print("removed \(file)")
        }
        do {
            let reply = try connect(args).call("org.seam.Sync.Reload")
            print(reply["action"]?.stringValue == "stopped" ? "seamd stopped seam-sync" : "no sync worker was running")
        } catch {
            print("seamd does not answer; it starts no sync worker when it next starts")
        }
    }

    /// Checks the URL, takes the password into a 0600 file (or leaves it to libpq's own files),
    /// proves the server answers, writes sync.json and has seamd start its worker.
    static func setup(_ text: String, _ args: Arguments) throws {
        let url = try SyncURL.parse(text)
        let directory = args.value("config-dir") ?? Environment.configDirectory
        try FileSystem.makeDirectory(directory, mode: 0o700)
        let passwordFile = FileSystem.join(directory, "sync.pgpass")
        // Tried from a file of its own: a wrong password must not replace the one a working
        // setup uses. It takes the real name only once the server has accepted it.
        let trying = passwordFile + ".trying"
        var configuration = SyncConfiguration(url: text, passwordFile: nil)
        if url.service != nil, !args.flag("no-password") {
            throw Arguments.UsageError("a service URL takes its password from libpq's files: add --no-password")
        }
        if !args.flag("no-password") {
            let prompt = "password for \(url.user) at \(url.host):\(url.port)/\(url.database): "
            guard let password = Secret.readLine(prompt: args.flag("password-stdin") ? "" : prompt), !password.isEmpty else {
                throw Arguments.UsageError("no password given; type it, pipe it with --password-stdin, or use --no-password to rely on "
                                           + "libpq's ~/.pgpass or service file")
            }
            try FileSystem.writeAtomically(Array(url.passwordFileLine(password: password).utf8), to: trying, mode: 0o600)
            configuration.passwordFile = passwordFile
        }
        // The phrase, read before anything is tried: it follows the password on standard input.
        let phrase = try SyncKeys.phraseFromStandardInput(args)
        // The worker's own program proves the server answers (and makes its tables), so that
        // this CLI does not link libpq: it connects exactly as the worker will.
        var environment = Processes.environment
        if configuration.passwordFile != nil { environment["PGPASSFILE"] = trying }
        let key: SyncKeys.Chosen
        do {
            let check = try SyncKeys.check(text, environment: environment)
            print("connected to " + (url.service.map { "service \($0)" } ?? "\(url.host):\(url.port)/\(url.database) as \(url.user)")
                  + (check.said.contains("created the sync tables") ? "; created the sync tables" : ""))
            key = try SyncKeys.choose(zoneKey: check.zoneKey, given: phrase, directory: directory, url: text, environment: environment)
        } catch {
            try? FileSystem.remove(trying)
            throw SyncSetupError("cannot sync with \(text): \(error); nothing was changed")
        }
        if configuration.passwordFile != nil {
            try FileSystem.rename(trying, to: passwordFile)
        }
        let keyPath = ZoneKey.path(in: directory)
        try key.key.write(to: keyPath)
        try FileSystem.syncDirectory(directory)
        configuration.keyFile = keyPath
        if key.made { SyncKeys.showPhrase(key.key, made: true) }
        let path = FileSystem.join(directory, "sync.json")
        try FileSystem.writeAtomically(configuration.encoded, to: path, mode: 0o600)
        print("wrote \(path)")
        do {
            let reply = try connect(args).call("org.seam.Sync.Reload")
            print("seamd \(reply["action"]?.stringValue ?? "started") seam-sync; `seam sync status` shows how it goes")
        } catch {
            print("seamd will start seam-sync when it next starts (`seam up`)")
        }
    }
}
