// seam: the command-line client of seamd — the timer app's commands and the store's, for people
// and scripts. Each command lives in TimerCommands or StoreCommands; this file only dispatches.
import SeamClient
import SeamCommandLine

var seam = CommandSet(
    tool: "seam",
    about: """
        Talks to seamd over its socket: --socket, else the one seamd handed over ($SEAM_FD), else
        $SEAM_SOCKET, else $XDG_RUNTIME_DIR/seam/seamd.sock, else /tmp/seam-$UID/seamd.sock.
        Timers are referred to by name or by a short id: 4 or more characters from the start or
        the end of their uuid (listings show its last 8).
        Listings take --json.
        """,
    commonOptions: ["socket"],
    commonFlags: ["verbose"],
    commands: TimerCommands.all + [WatchCommand.command] + StoreCommands.all + MaintenanceCommands.all + SyncCommands.all + ServiceCommands.all
)
seam.version = "0.1.0"
// seamd's errors as a person reads them; their varlink names with --verbose or --json.
seam.describeError = { error, verbose in
    guard !verbose, let e = error as? ClientError else { return "\(error)" }
    return e.personMessage
}
await seam.main(Array(CommandLine.arguments.dropFirst()))
