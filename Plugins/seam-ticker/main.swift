// seam-ticker: moves running sessions through their steps on time, through the broker.
import SeamCommandLine
import SeamSystem
import SeamTicker

let usage = """
    usage: seam-ticker [--socket PATH]

    Follows the running sessions of seamd and advances each when its step ends (on the wall
    clock, so it catches up after a suspend or after being down). Logs to stderr. Start it
    beside seamd; a second ticker is harmless (the broker's Advance is idempotent).
    """

do {
    let args = try Arguments(Array(CommandLine.arguments.dropFirst()), options: ["socket"])
    if args.wantsHelp { print(usage); Terminal.exit(0) }
    guard args.positional.isEmpty else { throw Arguments.UsageError(usage) }
    // Started by seamd (its connection on $SEAM_FD): it ends with seamd, even a seamd killed
    // with SIGKILL, rather than tick on alone.
    if Environment.value("SEAM_FD") != nil, !Processes.dieWithParent() {
        Terminal.fail("seam-ticker", "seamd, which started this ticker, is gone")
    }
    let ticker = try Ticker(options: Ticker.Options(socketPath: args.value("socket"))) { Terminal.error("seam-ticker: " + $0) }
    try ticker.run()
} catch let e as Arguments.UsageError {
    Terminal.fail("seam-ticker", e.message, status: Terminal.usageError)
} catch {
    Terminal.fail("seam-ticker", "\(error)")
}
