// seam-ticker: moves running sessions through their steps on time, through the broker.
import SeamCommandLine
import SeamSystem
import SeamTicker

var spec = CommandSet(
    tool: "seam-ticker",
    about: """
        Follows the running sessions of seamd and advances each when its step ends (on the wall
        clock, so it catches up after a suspend or after being down). Logs to stderr. seamd starts
        it as a role (its connection on $SEAM_FD); started by hand beside seamd, a second ticker is
        harmless (the broker's Advance is idempotent).
        """,
    root: Command("", "move running sessions through their steps on time",
                  options: [.value("socket", "PATH", "the socket of seamd (default as seam finds it)", complete: .file)]))
spec.version = "0.1.0"
spec.manual = Manual(headline: "move the Seam timer app's running sessions through their steps on time", date: "2026-12-06",
                     sections: [.init("See also", [.paragraph("`seamd`(1), `seam`(1)")])])

let args = spec.arguments(Array(CommandLine.arguments.dropFirst()))
do {
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
