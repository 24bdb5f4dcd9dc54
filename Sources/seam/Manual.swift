import SeamCommandLine

/// seam's man page beyond what its commands declare: each command's prose (shown by `--help` too),
/// the paragraphs of DESCRIPTION after the tool's `about`, the subsections of COMMANDS, and the
/// sections after OPTIONS. Prose marks: `` `bold` `` for commands, options and literal values,
/// `*italic*` for placeholders and paths; a mark never spans two lines.
enum SeamManual {
    /// Each command's prose beyond its one-line summary and its option list, by the command's name.
    static let discussions: [String: String] = [
        // Timers and groups
        "timer add": """
            One or more steps, each with a label and a duration, run in order, *N* times over
            (`--repeat`). A session copies the timer's `--sound` when it starts.

            Prints the new timer's uuid, or the timer as JSON with `--json`.
            """,
        "timer ls": """
            Shows each timer's name, steps, rounds, group and short id (the end of its uuid).
            """,
        "timer show": """
            Shows every attribute of the timer.
            """,
        "timer edit": """
            Steps given replace all the steps.
            """,
        "group add": """
            Prints the new group's uuid, or the group as JSON with `--json`.
            """,

        // Sessions
        "start": """
            A session is a running copy of a timer: starting a timer copies its steps (and its name,
            icon, colour, rounds and sound), so editing or deleting the timer later does not change a
            session under way.

            Prints the new session's short id. The session keeps *TEXT* as its note (none without
            `--note`).
            """,
        "flash": """
            A one-off session of one step, with no timer behind it. The session keeps *TEXT* as its
            note (none without `--note`).
            """,
        "pause": """
            Pauses a running session.
            """,
        "resume": """
            Resumes a paused session.
            """,
        "reset": """
            Takes a session back to the first step of its first round; a paused session stays paused
            there, a finished one runs again.
            """,
        "stop": """
            Finishes a session now (or when its last step ended, if it had). It stays in the list,
            finished, until `seam clear`.
            """,
        "skip": """
            Ends the current step of a session now and moves on to the next, or finishes the session
            after its last step.
            """,
        "ls": """
            The unified list: every timer with its session, if it has one (its state, the time left,
            the current step, and its note when it has one), then the sessions that have no timer.
            """,
        "watch": """
            A live view of the sessions that redraws in place, on the terminal's alternate screen:
            countdowns, the current step, the round, notes, and paused and finished sessions. It
            follows a query channel on the sessions, so it shows each change as `seamd` commits it,
            and counts down by the clock in between. It redraws to the new size when the terminal is
            resized.

            It rings the terminal bell each time a session moves to its next step and when it
            finishes (`--bell steps`, the default: a Pomodoro's work ending is heard as well as its
            last break), only when a session finishes (`--bell end`), or never (`--bell off`); a
            session that finishes is highlighted.

            When standard output is not a terminal, or with `--plain`, it prints a plain line for
            each event instead. Ctrl-C (or SIGTERM, or SIGHUP) quits.
            """,

        // The broker
        "up": """
            Starts `seamd` in the background, detached from the terminal, on the socket `seam` would
            use (the one given with `--socket`, else the default) and with the stores in *DIR* if
            given, and waits until it answers. Its log goes to *$XDG_STATE_HOME/seam/seamd.log*,
            else *~/.local/state/seam/seamd.log*. `seamd` is looked for beside `seam`, else on `PATH`.

            Does nothing when a `seamd` already answers on the socket; removes a stale socket that no
            `seamd` answers on (what a killed one leaves behind). When `seamd` exits before it
            answers, `seam up` fails with the last lines of its log.
            """,
        "down": """
            It sends that `seamd` SIGTERM. Does nothing when none answers. (A `seamd` started by
            systemd through *seamd.socket* is started again at the next connection.)
            """,
        "install-units": """
            Writes the systemd user units *seamd.service* and *seamd.socket* (socket activation:
            systemd holds the socket and starts `seamd` on the first connection) into *DIR*, by
            default *$XDG_CONFIG_HOME/systemd/user*, else *~/.config/systemd/user*, and prints how to
            enable them.

            The socket unit listens on *$XDG_RUNTIME_DIR/seam/seamd.sock*; the service runs the
            `seamd` found beside `seam`, else on `PATH`, by its absolute path, quoted for systemd (a
            path with a space or `%` works; systemd runs none with a quote or a backslash in it, so
            those are refused).

            Units already there that differ are kept, and the command fails, unless `--force` is
            given.
            """,
        "status": """
            The broker's version, pid, connections, subscriptions and channels, the commit sequence
            number, the store files (with the reason a closed one is closed), and the roles it
            supervises, each with its name, state (and when a dead one restarts), pid, number of
            restarts and last error; then any problems with its configuration file.
            """,
        "web": """
            The address of the timers' web page, `http://127.0.0.1:`*PORT*`/?token=`*TOKEN*: the `web`
            role (`seam-web`), which seamd runs when *seamd.json* enables it (`"roles": {"web":
            {"enabled": true, "port": 8620}}`). The page shows the groups, timers and running
            sessions live, and starts, pauses, resumes, skips, resets and stops them, and adds and
            edits timers. It listens on the loopback only and lets in only a browser that brings the
            token (kept in *web-token*, mode 0600, in the configuration directory; the page keeps it
            in a cookie after the first visit), for a `Host` naming the loopback and, for what it
            changes, from its own origin. `--json` prints the address, port and token.
            """,
        "metrics": """
            What seamd counts of itself (`org.seam.Metrics.Get`), in Prometheus's text exposition
            format: calls by method and outcome and how long they took, commit sizes, connections,
            subscriptions and channels, bytes queued for clients and connections held back,
            resyncs, each role's restarts, migration progress, how far behind sync is and the
            records it set aside, each store's size and WAL, checkpoint times. Counters count from
            seamd's start. `--json` prints the reply as seamd sent it. PROTOCOL.md ("Metrics")
            lists every family; to have Prometheus scrape seamd, enable the `metrics` role in
            *seamd.json* (seamd(1)).
            """,
        "schema": """
            The models the broker serves: each one's name, version and structural hash, and each
            entity with its configuration and attributes.
            """,
        "store info": """
            The store files: their paths, sizes, state (`open`; `outdated`, served at an older
            version until it is migrated; `migrating`; or `checking`, while its check at open runs;
            `damaged`; or `closed` with the reason, such as a store written by a newer build), whether
            each can only be read, the model versions each holds beside this build's, and every
            generation *backups/* keeps (each migration and restore keeps the files it replaced).
            """,
        "backup": """
            Takes every store, as one moment between saves, into the new (or empty) directory *DIR*:
            each store's file, the sequence lease and *seam-backup.json*.

            While seamd serves, it does the work and saves go on; with no seamd, the stores of
            `--data-dir` (default: the data directory) are read directly. Progress is drawn on a
            terminal.
            """,
        "check": """
            A store found damaged is closed by seamd (its state becomes `damaged`), and the exit
            status is non-zero.
            """,
        "restore": """
            The set is checked first (every store present, readable by this build, not damaged, and
            taken from this data directory unless `--from-elsewhere` is given), then swapped in as a
            migration swaps, the files it replaces kept in *backups/*. Through seamd, the stores close
            meanwhile and every subscription gets a fresh result after.
            """,
        "migrate": """
            The work is done by seamd's migration worker, `seam-migrate`: seamd closes the stores the
            migration touches (the others keep serving; a call that needs a closed one fails at once
            with how far the migration is), the worker builds verified copies from the originals, and
            seamd swaps them in, keeping each original in *backups/*.

            Shows a live progress bar: the phase, rows or bytes, and an estimate of the time left. A
            failed migration leaves the originals serving at their old versions; running it again
            retries. A store migrated that does not open again (no file descriptors left, a disk
            error) is named with the reason, and the command exits with status 1: seamd tries to open
            it again, up to every minute.

            seamd migrates outdated stores on its own when it starts, unless its configuration file
            says `"roles": {"migrate": {"enabled": false}}` (see `seamd`(1)).
            """,

        // Sync
        "sync setup": """
            Timers and groups (the Cloud store) sync between a person's machines through a
            PostgreSQL server; sessions (the Local store) never leave the machine. See
            *Protocol/sync.md* in the Seam sources for the rules.

            *URL* is `postgresql://`*USER*`@`*HOST*[`:`*PORT*]`/`*DATABASE*, with no password in it:
            the password is asked for without echo, or read from standard input with
            `--password-stdin`, and kept in *sync.pgpass* (mode 0600) beside *sync.json*; with
            `--no-password`, libpq's own *~/.pgpass* or service file is used.

            It connects once, through the sync worker's own program (`seam-sync --check` *URL*),
            creating the server's tables if they are not there, writes *sync.json* in *DIR* (default
            *$XDG_CONFIG_HOME/seam*), and has seamd start its sync worker, `seam-sync`.

            Timer names, step labels and group names reach the server sealed with the zone's key:
            the server's operator holds ciphertext. On a zone's first machine, setup makes the key,
            keeps it in *sync.key* (mode 0600) and shows its recovery phrase of 24 words; write it
            down. Another machine joins the zone with that phrase: setup asks for it (not echoed),
            or reads it from the line after the password with `--key-stdin`. A phrase with a
            mistyped word is refused (its last word is a checksum), as is the phrase of another
            key. Setting up again on a machine that has the zone's key needs no phrase.
            """,
        "doctor": """
            Looks at what can go wrong around Seam and says, for each problem, what to do: the
            socket's directory (others must not be able to write to it), whether seamd answers,
            the systemd user units (and whether the seamd they run is still there), each store's
            state (outdated, damaged, read only), the free space beside the stores (a migration
            or a backup writes copies), the sync files (a password or key file others may read)
            and the sync worker (its last error, records set aside), and each role (restarts,
            its last error). A line per check: `ok`, `note`, `warning` or `PROBLEM`, and what to
            do under it; `--json` gives them as one object (`findings`, `problems`). Exits 1 when
            any check found a problem.
            """,
        "sync phrase": """
            Prints the recovery phrase of the key in *sync.key*. Anyone with it can read what the
            server holds of the zone: show it only to machines of your own.
            """,
        "sync rotate-key": """
            For a key that may have been seen. Makes a new key, has the server's records sealed
            with it (resuming where it stopped, if interrupted: run it again), keeps the old key
            as *sync.key.old*, restarts the worker and shows the new phrase. Every other machine
            of the zone stops syncing until it joins again with the new phrase (`seam sync setup`
            *URL*); it loses nothing meanwhile.
            """,
        "sync status": """
            The server (never a password), whether the worker runs, when it last pushed and pulled,
            how many local changes wait, its last error, and, while it waits out a pause (for the
            Cloud store, for the server), when it tries again.
            """,
        "sync now": """
            The worker also syncs on every change, on every notification from the server, and every
            few seconds.
            """,
        "sync off": """
            Removes *sync.json* and the password file, and has seamd stop its worker. The data stays,
            here and on the server, and so does the key (*sync.key*); set up again, sync carries on
            from where it was.
            """,

        // Queries
        "query": """
            *ENTITY* is one of the entities that `seam schema` lists: `Timer`, `UserGroup`,
            `Session`, `SyncToken`, `SyncRecord`.

            Prints the rows of the entity that match *PREDICATE*, one JSON object a line, or one JSON
            array with `--json`. *KEYS* is a comma-separated list of attributes, each optionally
            followed by `[c]` to ignore case and preceded by `-` for descending order
            (`-startedAt`, `sortOrder, name[c]`). `--fields` limits the attributes printed;
            `--limit` the number of rows (0 to 100000).

            The predicate language (in the spirit of NSPredicate:
            `name BEGINSWITH[c] 'te' AND repeatCount > 1`) is specified in
            *Protocol/predicates.md* in the Seam sources.
            """,
        "subscribe": """
            *ENTITY*, *PREDICATE* and *KEYS* are as for `seam query`.

            Follows a live query until interrupted: prints its result, then a diff for each commit
            that changes it (rows inserted, deleted, updated and moved, with the commit's sequence
            number), as JSON lines, or described for reading with `--pretty`. A subscription that
            reconnects resumes where it left off.
            """,
        "call": """
            Calls the method with a JSON object of parameters and prints the reply; any method of the
            broker may be called, for example `org.seam.Store.Count` or
            `org.varlink.service.GetInfo`.
            """,
    ]

    /// DESCRIPTION after the `about` (which says how the socket is found, what a short id is, and
    /// that listings take `--json`).
    static let description: [Manual.Block] = [
        .paragraph("""
            `seam` is the client of `seamd`(1), the broker that owns the timer app's two store files.
            Every command but `install-units` talks to `seamd` over its Unix socket; the one seamd
            hands over is a socket already connected, inherited on the descriptor that `SEAM_FD`
            names.
            """),
        .paragraph("""
            A command is named by one or two words (`seam timer add`, `seam ls`). Every listing
            prints a table, or JSON instead with `--json`. Tables line up in terminal columns (a CJK
            character or an emoji takes two); on a terminal, a name or note longer than 40 columns
            (a group name, 24) is cut short with an ellipsis; piped or with `--json`, nothing is cut.
            """),
        .paragraph("""
            Options may be written `--name value` or `--name=value`; options that may repeat
            (`--step`) are given once per value, and `--` ends the options. Options go after the
            command (`seam ls --json`), though they may also come before its words
            (`seam --socket` *PATH* `status`). An operand that starts with a dash and a digit
            (`-5m`) is an operand, not an option.
            """),
        .paragraph("""
            Groups too are referred to by name or short id. A name is matched exactly, else without
            regard to case. The last eight characters of the uuid that listings show are random:
            uuids that seamd makes begin with the time they were made, so rows made in the same
            minute share their start. A name that is also the start or end of another row's uuid (a
            timer called `beef`) names both, and `seam` asks which is meant rather than guess.
            """),
        .paragraph("""
            A session is referred to by its uuid or a short id, by its own name, or by the name of
            the timer it was started from. A name that a running or paused session has means that
            one, though finished sessions (listed until `seam clear`) had it too. When more than one
            row matches, `seam` lists them (the first ten) and asks for more of the uuid. A name
            cannot be empty, only white space, or only characters of no width.
            """),
        .paragraph("""
            Durations are written `90s`, `5m`, `1h30m`, `1:30` (minutes and seconds), `1:02:03`
            (hours, minutes and seconds) or as a number of seconds (`45`). A step lasts at least a
            second and at most a week (`168h`); a longer one is refused as such, however it is
            written.
            """),
    ]

    static let environment = Manual.Section("Environment", [
        .item("SEAM_SOCKET", "The socket of `seamd` when `--socket` is not given."),
        .item("SEAM_FD", """
            The number of an inherited descriptor holding a socket already connected to `seamd`;
            used, when `--socket` is not given, before `SEAM_SOCKET` and the default path. `seamd`
            sets it (to 3) for the roles it supervises.
            """),
        .item("XDG_RUNTIME_DIR", """
            The default socket is *$XDG_RUNTIME_DIR/seam/seamd.sock*; without it,
            */tmp/seam-$UID/seamd.sock*.
            """),
        .item("XDG_STATE_HOME", """
            Where `seam up` keeps the log of `seamd` (*$XDG_STATE_HOME/seam/seamd.log*, else
            *~/.local/state/seam/seamd.log*).
            """),
        .item("XDG_CONFIG_HOME", """
            Where `seam install-units` writes by default (*$XDG_CONFIG_HOME/systemd/user*, else
            *~/.config/systemd/user*), and where `seam sync setup` and `seam sync off` keep
            *sync.json* without `--config-dir` (*$XDG_CONFIG_HOME/seam*, else *~/.config/seam*).
            """),
        .item("`SEAM_DATA_DIR`, `XDG_DATA_HOME`", """
            Where the `seamd` that `seam up` starts finds its stores, without `--data-dir`; see
            `seamd`(1).
            """),
        .item("PATH", """
            Where `seam up` and `seam install-units` look for `seamd` when it is not beside `seam`.
            """),
    ])

    static let files = Manual.Section("Files", [
        .item("*$XDG_RUNTIME_DIR/seam/seamd.sock*", """
            The socket of `seamd`; */tmp/seam-$UID/seamd.sock* when `XDG_RUNTIME_DIR` is not set.
            """),
        .item("*~/.local/state/seam/seamd.log*", "The log of a `seamd` started by `seam up`."),
        .item("*~/.config/systemd/user/seamd.service*, *~/.config/systemd/user/seamd.socket*", """
            The units that `seam install-units` writes.
            """),
        .item("*~/.config/seam/sync.json*, *~/.config/seam/sync.pgpass*", """
            The sync configuration that `seam sync setup` writes, and the password file (mode 0600)
            it keeps beside it.
            """),
        .item("*~/.local/share/seam/Cloud.sqlite*, *~/.local/share/seam/Local.sqlite*", """
            The stores, owned by `seamd`: timers and groups in *Cloud.sqlite*, sessions in
            *Local.sqlite*; see `seamd`(1).
            """),
    ])

    static let exitStatus = Manual.Section("Exit status", [
        .item("0", "Success (and after `--help`)."),
        .item("64", """
            A usage error: an unknown command or option, a missing or extra operand, a value of the
            wrong form (a duration that does not read as one, more than 100 steps, an empty name, an
            empty `--socket` or one that names a command).
            """),
        .item("1", "Any other error, such as no `seamd` to talk to, or no timer of that name."),
        .paragraph("Errors are reported in one line on standard error."),
    ])

    static let examples = Manual.Section("Examples", [
        .paragraph("Start the broker in the background and check it:"),
        .example("""
            seam up
            seam status
            """),
        .paragraph("Define a timer with two steps, start it and watch it:"),
        .example("""
            seam timer add Eggs --step Boil=7m --step Cool=1m
            seam start eggs
            seam watch
            """),
        .paragraph("A one-off timer, paused and resumed:"),
        .example("""
            seam flash 90s --name Pasta --note "salt the water"
            seam pause pasta; seam resume pasta
            """),
        .paragraph("The running sessions as JSON, and a live query for scripts:"),
        .example("""
            seam query Session --where "state == 'running'" --json
            seam subscribe Timer --sort name --fields name
            """),
        .paragraph("Any method of the protocol:"),
        .example("""
            seam call org.seam.Store.Count '{"entity":"Timer"}'
            """),
        .paragraph("Let systemd start `seamd` on demand:"),
        .example("""
            seam install-units
            systemctl --user daemon-reload
            systemctl --user enable --now seamd.socket
            """),
    ])

    static let seeAlso = Manual.Section("See also", [
        .paragraph("`seamd`(1), `systemctl`(1), `systemd.socket`(5)"),
    ])

    static let manual = Manual(
        headline: "timers, sessions and stores of the Seam timer app, from the command line",
        date: "2026-12-06",
        description: description,
        commandSections: [
            ("Timers and groups", ["timer", "group"]),
            ("Sessions", ["start", "flash", "pause", "resume", "reset", "stop", "skip", "clear", "ls", "watch"]),
            ("The broker", ["up", "down", "install-units", "status", "doctor", "schema", "store", "backup", "check", "restore", "migrate"]),
            ("Sync", ["sync"]),
            ("Queries", ["query", "subscribe", "call"]),
        ],
        sections: [environment, files, exitStatus, examples, seeAlso])
}
