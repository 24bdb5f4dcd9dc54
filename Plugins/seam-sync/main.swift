// seam-sync: seamd's sync worker. Mirrors the Cloud store to a PostgreSQL server and back.
import SeamClient
import SeamCommandLine
import SeamSync
import SeamSystem

let usage = """
    usage: seam-sync CONFIG

    seamd's sync worker, started by seamd (role "sync", its connection on $SEAM_FD) once
    `seam sync setup URL` has written CONFIG (sync.json). It exports the Cloud store's changes
    to the server and imports the server's, on every change, on every server notification, and
    every few seconds. Never run it by hand: use `seam sync status` and `seam sync now`.
    """

let tool = "seam-sync"
do {
    let args = try Arguments(Array(CommandLine.arguments.dropFirst()), options: [], flags: [])
    if args.wantsHelp { print(usage); Terminal.exit(0) }
    guard args.positional.count == 1 else { throw Arguments.UsageError("give the sync configuration file\n\n" + usage) }
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
} catch let e as Arguments.UsageError {
    Terminal.fail(tool, e.message, status: Terminal.usageError)
} catch {
    Terminal.fail(tool, "\(error)")
}
