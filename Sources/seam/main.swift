// seam: the command-line client of seamd — the timer app's commands and the store's, for people
// and scripts. Each command lives in TimerCommands or StoreCommands; this file only dispatches.
import SeamCommandLine

let seam = CommandSet(
    tool: "seam",
    about: """
        Talks to seamd over its socket (--socket, else $SEAM_SOCKET, else $XDG_RUNTIME_DIR/seam/seamd.sock).
        Timers are referred to by name or by the start of their uuid. Listings take --json.
        """,
    commonOptions: ["socket"],
    commands: TimerCommands.all + [WatchCommand.command] + StoreCommands.all + SyncCommands.all + ServiceCommands.all
)
await seam.main(Array(CommandLine.arguments.dropFirst()))
