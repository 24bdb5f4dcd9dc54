// seam-migrate: upgrades the timer app's stores in a directory: offline (no seamd running), or as
// seamd's migration worker (--worker; see Worker.swift).
import SeamCommandLine
import SeamStore
import SeamSystem
import SeamTimers

var spec = CommandSet(
    tool: "seam-migrate",
    about: """
        Brings Cloud.sqlite and Local.sqlite in DIR to the current versions: each on a copy,
        verified, swapped in only on success; the originals are kept in DIR/backups/.
        Run it while no seamd uses DIR; while seamd runs, `seam migrate` does this through seamd
        (which runs `seam-migrate --worker --stores A,B DIR` itself).
        """,
    root: Command("", "upgrade the timer app's stores, on copies swapped in only on success",
                  operands: [Operand("DIR", "the directory that holds Cloud.sqlite and Local.sqlite", complete: .directory)],
                  options: [
                      .flag("dry-run", "print the plan (each step in words, and its SQL) and change nothing"),
                      .flag("integrity", "verify copies with a full integrity_check (slower) instead of quick_check"),
                      .value("batch", "N", "rows per copy batch (default 20000)"),
                      .flag("create", "also create the stores when DIR has none (as seamd does at start)"),
                      .flag("worker", "run as seamd's migration worker: build the copies of the stores seamd closed, report progress "
                            + "on $SEAM_FD, and let seamd swap them in"),
                      .value("stores", "A,B", "with --worker: the stores seamd closed"),
                  ]))
spec.version = "0.1.0"
spec.manual = Manual(headline: "upgrade the Seam timer app's stores offline, or as seamd's migration worker", date: "2026-12-06",
                     sections: [.init("See also", [.paragraph("`seam`(1), `seamd`(1), `seam-fixture`(1)")])])

let tool = "seam-migrate"
let args = spec.arguments(Array(CommandLine.arguments.dropFirst()))
do {
    guard FileSystem.isDirectory(args.positional[0]) else {
        Terminal.fail(tool, "\(args.positional[0]) is not a directory; give the directory that holds Cloud.sqlite and Local.sqlite")
    }
    if args.flag("worker") {
        var options = MigrationOptions()
        options.fullIntegrityCheck = args.flag("integrity")
        options.batchSize = try args.integer("batch", in: 1...10_000_000) ?? options.batchSize
        let stores = (args.value("stores") ?? "").split(separator: ",").map(String.init)
        guard !stores.isEmpty else { throw Arguments.UsageError("--worker needs --stores, the stores seamd closed") }
        Worker.run(directory: args.positional[0], stores: stores, options: options)
    }
    // Offline, the tool must be alone with the files: a seamd serving them holds seamd.lock,
    // and a swap under it would send every later save to a file no longer in the directory.
    let lockPath = FileSystem.join(args.positional[0], "seamd.lock")
    let lock: FileLock
    do { lock = try FileLock(path: lockPath) } catch {
        if error.errno == SystemError.wouldBlock {
            Terminal.fail(tool, "a seamd serves \(args.positional[0]) (\(lockPath) is locked): migrate through it with `seam migrate`, "
                          + "or stop it first")
        }
        Terminal.fail(tool, "cannot take \(lockPath): \(error.message)")
    }
    defer { withExtendedLifetime(lock) {} }
    let directory = StoreDirectory(path: args.positional[0], schema: TimerApp.schema)
    for line in try directory.recover() { print(line) }
    for c in try directory.inspect() { print(c.summary) }
    let plan = try directory.plan()
    if args.flag("dry-run") {
        print(plan.description, terminator: "")
        Terminal.exit(0)
    }
    if plan.isEmpty {
        if args.flag("create") {
            let stores = try directory.open()
            print("stores ready in \(args.positional[0]): " + stores.keys.sorted().map { "\($0).sqlite" }.joined(separator: ", "))
        } else {
            print("Nothing to migrate: every store is current.")
        }
        Terminal.exit(0)
    }
    var options = MigrationOptions()
    options.fullIntegrityCheck = args.flag("integrity")
    options.batchSize = try args.integer("batch", in: 1...10_000_000) ?? options.batchSize
    let progress = Progress()
    let report = try directory.migrate(options: options) { p in
        progress.show("\(p.configuration) \(p.phase.rawValue)\(p.entity.map { " \($0)" } ?? "")", fraction: p.fraction,
                      detail: "\(p.rowsDone)/\(p.rowsTotal) rows", phase: "\(p.configuration) \(p.phase.rawValue)")
    }
    progress.end()
    print("migrated \(report.configurations.joined(separator: ", ")): \(report.rowsCopied) rows; originals kept in "
          + report.backups.joined(separator: ", "))
} catch let e as Arguments.UsageError {
    Terminal.fail(tool, e.message, status: Terminal.usageError)
} catch {
    Terminal.fail(tool, "\(error)")
}
