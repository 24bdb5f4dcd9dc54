// seam: the command-line client of seamd — the timer app's commands and the store's, for people
// and scripts. Each command lives in TimerCommands or StoreCommands; its prose in Manual.swift;
// this file only dispatches.
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
    commonOptions: [
        .value("socket", "PATH", "the socket of seamd", complete: .file),
        .flag("verbose", "an error from seamd shows its varlink name too, as --json shows it"),
    ],
    commands: (TimerCommands.all + [WatchCommand.command] + StoreCommands.all + MaintenanceCommands.all + SyncCommands.all
               + ServiceCommands.all + [DoctorCommand.command, WebCommand.command]).map { $0.returning(discussion: SeamManual.discussions[$0.name] ?? "") }
)
seam.version = "0.1.0"
seam.manual = SeamManual.manual
seam.groupSummaries = [
    "timer": "define, list, show, edit and delete timers", "group": "add, list, rename and delete groups of timers",
    "store": "the store files", "sync": "sync timers and groups through a PostgreSQL server",
]
// seamd's errors as a person reads them; their varlink names with --verbose or --json.
seam.describeError = { error, verbose in
    guard !verbose, let e = error as? ClientError else { return "\(error)" }
    return e.personMessage
}
await seam.main(Array(CommandLine.arguments.dropFirst()))
