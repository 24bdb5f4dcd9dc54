import SeamCommandLine

/// seamd's command line, declared once: parsing, `--help`, completions and the man page.
enum SeamdSpec {
    static let options: [Option] = [
        .value("data-dir", "DIR", "the stores (default $SEAM_DATA_DIR, else $XDG_DATA_HOME/seam, else ~/.local/share/seam)",
               complete: .directory),
        .value("socket", "PATH", "the socket (default $SEAM_SOCKET, else $XDG_RUNTIME_DIR/seam/seamd.sock, else "
               + "/tmp/seam-$UID/seamd.sock); a socket passed by systemd (LISTEN_FDS) is used instead when present", complete: .file),
        .value("config", "FILE", "the roles to run, limits, backups (default $XDG_CONFIG_HOME/seam/seamd.json, else "
               + "~/.config/seam/seamd.json; missing: the ticker, found beside seamd)", complete: .file),
        .flag("no-roles", "start no role processes (they run elsewhere, or not at all); a --config FILE still sets everything else"),
        .value("durability", "normal|full", "normal (WAL, synchronous=NORMAL; the default) or full (every save on the disk before it is answered)",
               complete: .words(["normal", "full"])),
        .value("log-level", "LEVEL", "debug, info (the default), warning or error", complete: .words(["debug", "info", "warning", "error"])),
        .value("handshake-timeout", "SECONDS", "seconds a new connection has to send its first call (default 10)"),
        .value("spin", "MICROSECONDS", "after a turn that handled anything, poll this long before sleeping, so that the next request is "
               + "read without waiting for an idle CPU to wake (default $SEAM_SPIN_MICROSECONDS, else 200; 0: never)"),
    ]

    static var tool: CommandSet {
        var set = CommandSet(
            tool: "seamd",
            about: """
                Serves the timer app's stores over the varlink protocol (org.seam.Store, org.seam.Timers), in the foreground,
                logging to stderr. Stops cleanly on SIGTERM, SIGINT or SIGHUP.
                """,
            root: Command("", "the Seam store broker", options: options, discussion: SeamdManual.discussion))
        set.version = "0.1.0"
        set.manual = SeamdManual.manual
        return set
    }
}
