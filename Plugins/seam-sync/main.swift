// seam-sync: seamd's sync worker. Mirrors the Cloud store to a PostgreSQL server and back.
import SeamClient
import SeamCommandLine
import SeamPostgres
import SeamSync
import SeamSyncSetup
import SeamSystem

var spec = CommandSet(
    tool: "seam-sync",
    about: """
        seamd's sync worker, started by seamd (role "sync", its connection on $SEAM_FD) once
        `seam sync setup URL` has written *CONFIG* (sync.json). It exports the Cloud store's changes
        to the server and imports the server's, on every change, on every server notification, and
        every few seconds. Never run it by hand: use `seam sync status` and `seam sync now`.
        """,
    root: Command("", "seamd's sync worker, and a server's setup",
                  operands: [Operand("CONFIG", "the sync configuration seam sync setup wrote (sync.json)", optional: true, complete: .file)],
                  options: [
                      .value("init-server", "URL", "for a server's administrator: create (or upgrade) the server's sync schema as the "
                             + "role in URL, which then owns it; that role must be no zone (no person's machines sync as it)"),
                      .flag("password-stdin", "with --init-server: read the password from standard input (else libpq's ~/.pgpass, "
                            + "PGPASSFILE or PGPASSWORD)"),
                      .value("check", "URL", "what seam sync setup runs: connect as the worker would, make the server's sync tables "
                             + "if it may, and print a line saying so and one naming the zone's key (`zone key: ID` or `none`); exit 1 "
                             + "with the reason when it cannot"),
                      .value("key-id", "ID", "with --check: make ID the zone's key when it has none (the zone's key is printed after)"),
                      .flag("rotate-key", "what seam sync rotate-key runs: with CONFIG and --new-key, make the new key the zone's and "
                            + "seal again everything sealed with the old one"),
                      .value("new-key", "FILE", "with --rotate-key: the new key", complete: .file),
                  ],
                  discussion: """
                      `scripts/pg-server` runs `--init-server` for the servers it starts. The server's layout and the
                      roles it needs are in Protocol/sync.md.
                      """))
spec.version = "0.1.0"
spec.manual = Manual(headline: "the Seam store broker's sync worker, through PostgreSQL", date: "2026-12-06",
                     sections: [.init("See also", [.paragraph("`seam`(1), `seamd`(1)")])])

/// `--check URL`: `seam sync setup`'s proof that the server answers, as the worker will connect;
/// with `keyID`, that key registered as the zone's when it has none. Says which key the zone has.
func check(_ url: String, keyID: String?) -> Never {
    do {
        let pg = try ServerSchema.connect(url)
        let version = try ServerSchema.ensure(pg)
        print(version.found == 0 ? "connected; created the sync tables" : "connected")
        let zoneKey = try keyID.map { try ZoneKeyRecord.register($0, pg) } ?? ZoneKeyRecord.read(pg)?.id
        print("zone key: \(zoneKey ?? "none")")
        Terminal.exit(0)
    } catch {
        Terminal.fail(tool, "\(error)")
    }
}

/// `--rotate-key CONFIG --new-key FILE`: `seam sync rotate-key`'s work on the server.
func rotateKey(configurationPath path: String, newKeyPath: String) -> Never {
    do {
        let configuration = try SyncConfiguration.parse(try FileSystem.read(path), path: path)
        guard let keyFile = configuration.keyFile else {
            Terminal.fail(tool, "\(path) names no key file: this setup seals nothing yet (run seam sync setup URL again)")
        }
        let old = try ZoneKey.read(keyFile), new = try ZoneKey.read(newKeyPath)
        if let file = configuration.passwordFile { Environment.set("PGPASSFILE", file) }
        let pg = try ServerSchema.connect(configuration.url)
        _ = try ServerSchema.ensure(pg)
        let n = try KeyRotation.rotate(pg, from: old, to: new) { print($0) }
        print("the zone's key is \(new.id); sealed \(n) record(s) again")
        Terminal.exit(0)
    } catch {
        Terminal.fail(tool, "\(error)")
    }
}

/// `--init-server URL`: the server's sync schema, made or upgraded by the role that owns it.
func initServer(_ url: String, passwordFromStdin: Bool) throws -> Never {
    if passwordFromStdin {
        guard let password = Secret.readLine(prompt: ""), !password.isEmpty else {
            Terminal.fail(tool, "no password on standard input", status: Terminal.usageError)
        }
        Environment.set("PGPASSWORD", password)
    }
    let pg: PostgresConnection
    do { pg = try ServerSchema.connect(url) } catch { Terminal.fail(tool, "cannot connect to \(url): \(error)") }
    let role = try pg.query("SELECT session_user::text").first?[0] ?? "?"
    if try pg.query("SELECT to_regclass('seam.records') IS NOT NULL").first?[0] == "t",
       let n = try pg.query("SELECT count(*) FROM seam.records WHERE zone = session_user").first?[0] ?? nil, n != "0" {
        Terminal.fail(tool, "\(role) syncs a zone of its own (\(n) records): the schema's owner must be no one's zone, or it could "
                      + "read and change every other zone; make a role for it (scripts/pg-server's seam_owner, say)")
    }
    let schema = try ServerSchema.ensure(pg)
    if schema.now < ServerSchema.version {
        Terminal.fail(tool, "the server's sync schema is version \(schema.now), and \(role) may not upgrade it to version "
                      + "\(ServerSchema.version): run this as the role that owns schema seam")
    } else if schema.found == ServerSchema.version {
        print("the server's sync schema is at version \(schema.found) already; nothing to do")
    } else {
        print("made the server's sync schema version \(ServerSchema.version)\(schema.found == 0 ? "" : " (was \(schema.found))"), "
              + "owned by \(role); zone roles need only CONNECT on the database (Protocol/sync.md, \"The server layout\")")
    }
    Terminal.exit(0)
}

let tool = "seam-sync"
let args = spec.arguments(Array(CommandLine.arguments.dropFirst()))
do {
    if let url = args.value("check") {
        guard args.positional.isEmpty else { throw Arguments.UsageError("--check takes only the URL") }
        check(url, keyID: args.value("key-id"))
    }
    if args.flag("rotate-key") {
        guard args.positional.count == 1, let newKey = args.value("new-key") else {
            throw Arguments.UsageError("--rotate-key takes the sync configuration and --new-key FILE")
        }
        rotateKey(configurationPath: args.positional[0], newKeyPath: newKey)
    }
    if let url = args.value("init-server") {
        guard args.positional.isEmpty else { throw Arguments.UsageError("--init-server takes only the URL") }
        try initServer(url, passwordFromStdin: args.flag("password-stdin"))
    }
    guard args.positional.count == 1 else { throw Arguments.UsageError("give the sync configuration file; usage: " + spec.usageLine(spec.commands[0])) }
    guard Environment.value("SEAM_FD") != nil else {
        Terminal.fail(tool, "seamd starts this worker once sync is configured: run `seam sync setup URL`", status: Terminal.usageError)
    }
    // It ends with seamd, even a seamd killed with SIGKILL.
    guard Processes.dieWithParent() else { Terminal.fail(tool, "seamd, which started this worker, is gone") }
    let path = args.positional[0]
    let configuration: SyncConfiguration
    do { configuration = try SyncConfiguration.parse(try FileSystem.read(path), path: path) } catch {
        Terminal.fail(tool, "cannot read \(path): \(error)")
    }
    // libpq reads the password from this file; it is never in a URL, a log or an argument.
    if let file = configuration.passwordFile { Environment.set("PGPASSFILE", file) }
    let broker = try SeamConnection.connect()
    let worker = try SyncWorker(broker: broker, configuration: configuration) { line in
        print(line)
        Terminal.flushOutput()
    }
    try worker.run()
    Terminal.exit(0)  // seamd is gone
} catch let e as Arguments.UsageError {
    Terminal.fail(tool, e.message, status: Terminal.usageError)
} catch {
    Terminal.fail(tool, "\(error)")
}
