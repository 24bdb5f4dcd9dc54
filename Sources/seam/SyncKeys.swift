import SeamClient
import SeamCommandLine
import SeamSyncSetup
import SeamSystem

/// The zone's key on this machine: made or joined by `seam sync setup`, shown again by `seam
/// sync phrase`, replaced by `seam sync rotate-key` (`Protocol/sync.md`, "Encrypted fields").
enum SyncKeys {
    static let commands: [Command] = [
        Command("sync phrase", "show the recovery phrase of the zone's key, for another machine to join with",
                options: [Opt.configDir]) { _, args in
            let key = try readKey(args)
            showPhrase(key, made: false)
        },
        Command("sync rotate-key", "seal everything on the server with a new key, and show its recovery phrase",
                options: [Opt.configDir]) { _, args in
            try rotate(args)
        },
    ]

    static func readKey(_ args: Arguments) throws -> ZoneKey {
        let directory = args.value("config-dir") ?? Environment.configDirectory
        do { return try ZoneKey.read(ZoneKey.path(in: directory)) } catch { throw CLIError(error.description) }
    }

    /// The phrase to tell a person: once when the key is made, again on `seam sync phrase`.
    static func showPhrase(_ key: ZoneKey, made: Bool) {
        print((made ? "made a new key for this zone (\(key.id)). " : "") + "Its recovery phrase:\n")
        print("    " + key.phrase + "\n")
        print("Keep it somewhere safe and private: another machine joins this zone with it (seam sync setup URL asks for it), and "
              + "without it nobody — you included — can read what the server holds.")
    }

    /// `--key-stdin`: the line after the password (or the first), nil without the flag; an
    /// empty line is `.new` (make a key here, for a new zone).
    enum Given { case phrase(ZoneKey), new }

    static func phraseFromStandardInput(_ args: Arguments) throws -> Given? {
        guard args.flag("key-stdin") else { return nil }
        guard let line = Secret.readLine(prompt: "") else {
            throw Arguments.UsageError("--key-stdin: no line on standard input; give the zone's recovery phrase, or an empty line for a new zone")
        }
        if line.allSatisfy(\.isWhitespace) { return .new }
        do { return .phrase(try ZoneKey(phrase: line)) } catch { throw Arguments.UsageError("the recovery phrase: \(error)") }
    }

    /// `seam-sync --check URL [--key-id ID]`: what it said, and the zone's key after.
    static func check(_ url: String, keyID: String? = nil, environment: [String: String]) throws -> (said: String, zoneKey: String?) {
        guard let worker = Processes.find("seam-sync") else {
            throw SyncSetupError("seam-sync, the sync worker, is not installed beside seam or on PATH")
        }
        let (exit, output) = try Processes.run(worker, arguments: ["--check", url] + (keyID.map { ["--key-id", $0] } ?? []),
                                               environment: environment)
        // libpq's messages run over lines, the later ones indented: one line, as the CLI prints it.
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map { $0.drop { $0 == " " || $0 == "\t" } }
        let said = lines.filter { !$0.isEmpty && !$0.hasPrefix("zone key: ") }.joined(separator: "; ")
        guard exit.succeeded else {
            throw SyncSetupError(said.hasPrefix("seam-sync: ") ? String(said.dropFirst("seam-sync: ".count)) : "seam-sync \(exit): \(said)")
        }
        let zone = lines.first { $0.hasPrefix("zone key: ") }.map { String($0.dropFirst("zone key: ".count)) }
        return (said, zone == "none" ? nil : zone)
    }

    struct Chosen {
        var key: ZoneKey
        /// Made here: its phrase is shown.
        var made: Bool
    }

    /// The key this machine syncs with: the zone's (from the phrase given, or this machine's
    /// own from an earlier setup), or — for a zone with none yet — a new one (or the one given),
    /// registered as the zone's on the server.
    static func choose(zoneKey: String?, given: Given?, directory: String, url: String,
                       environment: [String: String]) throws -> Chosen {
        // This machine's key from an earlier setup; one it cannot use (others may read it) is
        // said, not replaced.
        let ownPath = ZoneKey.path(in: directory)
        let own: ZoneKey?
        do { own = FileSystem.exists(ownPath) ? try ZoneKey.read(ownPath) : nil } catch { throw SyncSetupError(error.description) }
        guard let zoneKey else {
            var chosen: Chosen
            switch given {
            case .phrase(let key)?: chosen = Chosen(key: key, made: false)
            case .new?, nil: chosen = own.map { Chosen(key: $0, made: false) } ?? Chosen(key: .generate(), made: true)
            }
            let registered = try check(url, keyID: chosen.key.id, environment: environment).zoneKey
            guard registered == chosen.key.id else {
                throw SyncSetupError("another machine set up a key for this zone meanwhile (\(registered ?? "?")): run seam sync setup again "
                                     + "and give that key's recovery phrase")
            }
            return chosen
        }
        let joinHow = "this zone has a key already (\(zoneKey)): a machine joins it with its recovery phrase, which `seam sync phrase` "
            + "shows on a machine that syncs"
        switch given {
        case .phrase(let key)?:
            guard key.id == zoneKey else {
                throw SyncSetupError("that recovery phrase is another key (\(key.id)) than this zone's (\(zoneKey)): check you have the "
                                     + "phrase of this zone")
            }
            return Chosen(key: key, made: false)
        case .new?:
            throw SyncSetupError(joinHow + " (--key-stdin with an empty line makes a key only for a new zone)")
        case nil:
            if let own, own.id == zoneKey { return Chosen(key: own, made: false) }
            guard Terminal.stdinIsTerminal else { throw SyncSetupError(joinHow + "; give it with --key-stdin") }
            let typed = Secret.readLine(prompt: "recovery phrase of this zone's key (seam sync phrase shows it on a machine that syncs): ") ?? ""
            let key: ZoneKey
            do { key = try ZoneKey(phrase: typed) } catch { throw SyncSetupError("the recovery phrase: \(error)") }
            guard key.id == zoneKey else {
                throw SyncSetupError("that recovery phrase is another key (\(key.id)) than this zone's (\(zoneKey))")
            }
            return Chosen(key: key, made: false)
        }
    }

    /// A new key: made (kept as `sync.key.new` until the server has it, so that an interrupted
    /// rotation resumes with the same key), the server's records sealed again with it by
    /// `seam-sync --rotate-key`, then swapped in (the old one kept as `sync.key.old` for what the
    /// worker sealed meanwhile), and the worker restarted.
    static func rotate(_ args: Arguments) throws {
        let directory = args.value("config-dir") ?? Environment.configDirectory
        let configPath = FileSystem.join(directory, "sync.json")
        guard FileSystem.exists(configPath) else { throw CLIError("sync is not configured (no \(configPath)): seam sync setup URL first") }
        _ = try readKey(args)  // the key being replaced: this machine's, readable by it alone
        let path = ZoneKey.path(in: directory), pending = path + ".new"
        let new: ZoneKey
        if let resumed = try? ZoneKey.read(pending) {
            new = resumed
            print("resuming the rotation to \(new.id)")
        } else {
            new = ZoneKey.generate()
            try new.write(to: pending)
        }
        guard let worker = Processes.find("seam-sync") else {
            throw SyncSetupError("seam-sync, the sync worker, is not installed beside seam or on PATH")
        }
        let (exit, output) = try Processes.run(worker, arguments: ["--rotate-key", configPath, "--new-key", pending],
                                               environment: Processes.environment)
        let said = String(decoding: output, as: UTF8.self).trimmingSpaces
        guard exit.succeeded else {
            throw CLIError("the key was not rotated: \(said.hasPrefix("seam-sync: ") ? String(said.dropFirst("seam-sync: ".count)) : said)"
                           + " (run seam sync rotate-key again to finish)")
        }
        print(said)
        try FileSystem.rename(path, to: path + ".old")
        try FileSystem.rename(pending, to: path)
        try FileSystem.syncDirectory(directory)
        do { _ = try connect(args).call("org.seam.Sync.Reload") } catch {
            print("seamd does not answer; its sync worker takes the new key when it next starts")
        }
        showPhrase(new, made: false)
        print("Every other machine of this zone stops syncing until it joins again with this phrase (seam sync setup URL); it loses "
              + "nothing meanwhile.")
    }
}
