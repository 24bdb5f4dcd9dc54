// seamd's man page beyond what its spec declares (Spec.swift): the prose of the hand-written
// man/seamd.1, moved here.
//
// What the old OPTIONS section said beyond each option's one-line help is in `discussion` below,
// one paragraph per option, each opening with the option's name:
//   --data-dir           the directory is created, readable by its owner only, if missing.
//   --socket             the checks on the socket's directory (this user's or root's; writable by
//                        others only with the sticky bit), and what is replaced or kept there.
//   --no-roles           a migration still runs through its worker.
//   --durability         what normal risks (the last commits on a power loss); full also holds
//                        back subscribers' diffs; a failed flush stops seamd with status 74.
//   --handshake-timeout  the connection is closed; at most 3600.
//   --spin               yields the CPU between polls; at most 100000; its CPU cost; deadlines kept.
// The first paragraph of the old DESCRIPTION is the tool's `about`, except what `about` does not
// say yet (the two store files, the interfaces' methods, org.varlink.service, same-user only): that
// opens `description` below. (The old page also has seamd stop cleanly on SIGHUP, which `about`
// leaves out.)
import SeamCommandLine

enum SeamdManual {
    /// The options' details that do not fit their one-line help (`--help` shows them too).
    static let discussion = """
        `--data-dir` *DIR*: the directory of the stores is created, readable by its owner only, if
        it is missing.

        `--socket` *PATH*: the socket's directory must belong to this user (or to root), and be
        writable by others only with the sticky bit, as */tmp* is; any other is refused, since
        someone else could put a socket of theirs in place of it. A socket there that nobody
        answers on is replaced; a file that is not a socket is kept, and `seamd` does not start.

        `--no-roles`: no long-running role process is started, neither the ticker nor the plugins
        (they run elsewhere, or not at all). A migration still runs through its worker.

        `--durability`: `normal` (the default) is SQLite in WAL mode with synchronous=NORMAL, so a
        commit survives a crash of `seamd` but the last commits may be lost if the machine loses
        power. `full` puts every save on the disk (fdatasync of the WAL) before its reply, or any
        subscriber's diff of it, is sent. If that flush fails, `seamd` stops at once (exit status
        74) without answering: on the next start the store recovers what reached the disk.

        `--handshake-timeout` *SECONDS*: a new connection that has made no call by then is closed.
        At most 3600.

        `--spin` *MICROSECONDS*: after a turn of its event loop that handled anything (a request, a
        signal, a role's output), `seamd` keeps polling that long, yielding the CPU between polls,
        before it sleeps, so that the next request of a conversation is read at once rather than
        after an idle CPU has woken. At most 100000; 0 sleeps at once. It costs up to that much CPU
        time after each such turn, none while nothing comes. Deadlines (timeouts, restarts) are
        kept.
        """

    /// DESCRIPTION after the `about`.
    static let description: [Manual.Block] = [
        .paragraph("""
            `seamd` owns the two SQLite files of the Seam timer app: *Cloud.sqlite* for what may be
            synced between a person's machines (timers and their groups) and *Local.sqlite* for what
            never leaves the machine (running sessions). It serves them to every other process over
            a Unix socket in the varlink protocol (NUL-framed JSON): the interfaces `org.seam.Store`
            (fetch, count, save, schema, status, and query channels that tell a subscriber each
            change to a query's result), `org.seam.Timers` (the session lifecycle: start, flash,
            pause, resume, reset, skip, stop, clear) and `org.varlink.service`. Only processes of
            the same user may connect.
            """),
        .paragraph("""
            A store written by an older version is served at that version while its migration
            worker, `seam-migrate`, upgrades it: seamd closes the stores the migration touches (the
            others keep serving; a call that needs a closed one fails at once with how far the
            migration is), the worker builds verified copies from the originals, which it only
            reads, and seamd verifies them again and swaps them in, keeping the originals in
            *backups/*. A worker that fails or dies, a copy that does not verify, or a full disk
            leaves the originals serving at their old versions, and no temporary file;
            `seam migrate` retries.
            """),
        .paragraph("""
            A store that does not open again after its migration (no file descriptor left, a disk
            error) stays closed, saying why, and seamd tries again, every minute at most, until it
            opens. A swap that stopped part way and cannot be finished (at a start either) keeps the
            stores it names closed, with what stops it, while the others serve; `seam migrate` (or
            the next start) finishes it once that is fixed. A store written by a newer build is
            never touched: it stays closed, the other store serves, and `seam status` says which
            version it holds.
            """),
        .paragraph("""
            A second `seamd` on the same stores exits with a message saying so. `seamd` stops
            cleanly on SIGTERM, SIGINT or SIGHUP (the terminal it runs in closed).
            """),
        .paragraph("""
            To run it in the background use `seam up` and `seam down`, or let systemd start it on
            the first connection with the units that `seam install-units` writes; see `seam`(1).
            When systemd passes it a listening socket (`LISTEN_FDS` and `LISTEN_PID`), `seamd`
            serves on that socket instead of creating one.
            """),
    ]

    static let roles = Manual.Section("Roles", [
        .paragraph("""
            `seamd` supervises the role processes of the app (unless given `--no-roles`). By default
            that is the ticker, `seam-ticker`, which moves running sessions through their steps on
            time. Plugins listed in the configuration file run beside it. A program named without a
            `/` is looked for beside the `seamd` executable, else on `PATH`.
            """),
        .paragraph("""
            Each role is started in a process group of its own with a socket already connected to
            `seamd` on descriptor 3, and with `SEAM_FD=3`, `SEAM_ROLE` (its name) and `SEAM_SOCKET`
            added to its environment, so it needs no path to reach the broker. The ticker and the
            sync and migration workers ask the kernel to end them when `seamd` ends, even when it is
            killed with SIGKILL and cannot stop them; a plugin should exit when its socket closes.
            """),
        .paragraph("""
            What a role writes to standard output or standard error goes to the log of `seamd`, each
            line prefixed with the role's name: `ticker` for the ticker, `plugin:`*name* for a
            plugin. The connection handed over already holds the role: the broker records the role
            (or `plugin:`*name*) as the author of its saves, whatever the process claims.
            """),
        .paragraph("""
            A plugin may read and write only the entities it declares in the `capabilities` of its
            Hello (for example `{"reads": ["Session"], "writes": []}`); `seam status` lists the
            plugins with what they declared.
            """),
        .paragraph("""
            A role that exits is started again after a delay that starts at 1 second and doubles
            with each failure up to 60 seconds; the delay goes back to 1 second once the role has
            stayed up for a minute. When `seamd` stops, it sends its roles' process groups SIGTERM
            (a role's own children stop with it) and kills those that do not stop in time. A role
            that ends takes what it started and left behind with it. `seam status` lists the roles
            with their states, pids, restarts and last errors.
            """),
    ])

    static let configurationFile = Manual.Section("Configuration file", [
        .paragraph("The configuration file is JSON. Every key is optional:"),
        .example("""
            {
              "roles": {
                "ticker": {"enabled": true, "command": ["/path/to/seam-ticker"]},
                "migrate": {"enabled": true},
                "metrics": {"enabled": true, "port": 9464},
                "web": {"enabled": true, "port": 8620}
              },
              "plugins": [
                {"name": "logger",
                 "command": ["/usr/bin/python3", "/path/logger.py", "Session"],
                 "environment": {"KEY": "value"}}
              ]
            }
            """),
        .item("roles.ticker.enabled", "Whether to run the ticker (default true)."),
        .item("roles.ticker.command", """
            The ticker's program and its arguments (default `seam-ticker` beside `seamd`, else on
            `PATH`).
            """),
        .item("roles.ticker.environment", "Variables added to the ticker's environment."),
        .item("roles.migrate.enabled", """
            Whether `seamd` migrates outdated stores on its own when it starts (default true); when
            false they are served at their old versions until `seam migrate` is run.
            """),
        .item("`roles.migrate.command`, `roles.migrate.environment`", """
            The migration worker's program (default `seam-migrate`), given `--worker --stores`
            *A,B DIR* after its arguments, and variables for its environment. The worker runs once
            per migration and is never restarted; `--no-roles` does not stop it.
            """),
        .item("roles.metrics.enabled", """
            Whether to run the metrics role, `seam-metrics` (default false: it runs only when this is
            true). It serves what `seam metrics` prints, Prometheus's text format, at
            *http://127.0.0.1:PORT/metrics*, on the loopback only, to requests whose `Host` names
            the loopback.
            """),
        .item("roles.metrics.port", "The TCP port it listens on (default 9464); `--port` *PORT* is added to its command."),
        .item("`roles.metrics.command`, `roles.metrics.environment`", "Its program (default `seam-metrics`) and variables."),
        .item("roles.web.enabled", """
            Whether to run the timers' web page, `seam-web` (default false). It listens on
            *http://127.0.0.1:PORT/* and lets in a browser that brings the per-user token `seam web`
            prints (kept in *web-token*, mode 0600, beside this file).
            """),
        .item("roles.web.port", "The TCP port it listens on (default 8620); `--port` *PORT* is added to its command."),
        .item("`roles.web.command`, `roles.web.environment`", "Its program (default `seam-web`) and variables."),
        .item("plugins", """
            Further role processes, each with a `name` (1 to 64 letters, digits, `-`, `_` or `.`;
            unique), a `command` (the program and its arguments), and optionally an `environment` of
            variables added to the one `seamd` was started with, and `enabled` (default true).
            """),
        .paragraph("""
            A missing file means the defaults. A file that is not valid JSON is reported when
            `seamd` starts, and the defaults are used. An entry that is wrong (an unknown key, a
            plugin without a name or a command) is reported and left out while the rest apply; the
            problems are logged at start and shown by `seam status`. An entry whose program does
            not exist is reported and tried again with the same backoff as a role that exits, while
            the other roles run.
            """),
    ])

    static let environment = Manual.Section("Environment", [
        .item("SEAM_DATA_DIR", "The directory of the stores when `--data-dir` is not given."),
        .item("SEAM_SPIN_MICROSECONDS", "How long seamd polls after a request when `--spin` is not given."),
        .item("XDG_DATA_HOME", """
            Without `SEAM_DATA_DIR`, the stores are in *$XDG_DATA_HOME/seam*; without either,
            *~/.local/share/seam*.
            """),
        .item("SEAM_SOCKET", "The socket when `--socket` is not given."),
        .item("SEAM_METRICS", "When `0`, seamd counts nothing for `org.seam.Metrics.Get` (for the benchmark that measures what counting costs)."),
        .item("XDG_RUNTIME_DIR", """
            Without `SEAM_SOCKET`, the socket is *$XDG_RUNTIME_DIR/seam/seamd.sock*; without either,
            */tmp/seam-$UID/seamd.sock*.
            """),
        .item("XDG_CONFIG_HOME", """
            The configuration file is *$XDG_CONFIG_HOME/seam/seamd.json* when `--config` is not
            given; without it, *~/.config/seam/seamd.json*.
            """),
        .item("`LISTEN_FDS`, `LISTEN_PID`", """
            Set by systemd for socket activation: when `LISTEN_PID` is the pid of `seamd` and
            `LISTEN_FDS` is 1 or more, `seamd` serves on descriptor 3.
            """),
        .item("`SEAM_FD`, `SEAM_ROLE`", """
            Set in the environment of each role `seamd` starts: `SEAM_FD` to 3, the descriptor of
            its connection to the broker, and `SEAM_ROLE` to the role's name. `SEAM_SOCKET` is set
            to the socket, and `LISTEN_FDS`, `LISTEN_PID` and `NOTIFY_SOCKET` are removed.
            """),
        .item("PATH", """
            Where the programs of the roles (`seam-ticker`, plugins named without a `/`) are looked
            for when they are not beside `seamd`.
            """),
    ])

    static let files = Manual.Section("Files", [
        .item("*~/.local/share/seam/Cloud.sqlite*", "Timers and groups, and the sync metadata."),
        .item("*~/.local/share/seam/Local.sqlite*", "Sessions."),
        .item("*~/.local/share/seam/seamd.lock*", "Held while a `seamd` serves the directory."),
        .item("*~/.local/share/seam/backups/*", "The stores as they were before a migration."),
        .item("*~/.config/seam/seamd.json*", "The configuration of the roles."),
        .item("*$XDG_RUNTIME_DIR/seam/seamd.sock*", """
            The socket; */tmp/seam-$UID/seamd.sock* when `XDG_RUNTIME_DIR` is not set.
            """),
    ])

    static let exitStatus = Manual.Section("Exit status", [
        .item("0", "Stopped cleanly, on SIGTERM, SIGINT or SIGHUP; or `--help` or `--version`."),
        .item("64", "A usage error: an unknown option, an unexpected argument, a value of the wrong form."),
        .item("1", """
            The broker could not start or stopped on an error, for example because another `seamd`
            serves the same stores; the reason is in the log.
            """),
        .item("74", """
            With `--durability full`, flushing a store's WAL to the disk failed; nobody was told of
            the commit it held. Check the disk (dmesg) before starting again.
            """),
    ])

    static let examples = Manual.Section("Examples", [
        .paragraph("Run the broker in the foreground on a scratch directory and socket:"),
        .example("""
            seamd --data-dir /tmp/scratch --socket /tmp/scratch.sock --log-level debug
            """),
        .paragraph("Run a plugin beside the ticker: put this in *~/.config/seam/seamd.json*, then start `seamd`:"),
        .example("""
            {"plugins": [{"name": "logger",
                          "command": ["/usr/bin/python3", "/home/me/logger.py"]}]}
            """),
        .paragraph("Start it on demand with systemd:"),
        .example("""
            seam install-units
            systemctl --user daemon-reload
            systemctl --user enable --now seamd.socket
            """),
    ])

    static let seeAlso = Manual.Section("See also", [
        .paragraph("`seam`(1), `systemctl`(1), `systemd.socket`(5), `sd_listen_fds`(3)"),
    ])

    static let manual = Manual(
        headline: "the Seam store broker, serving the timer app's stores over a Unix socket",
        date: "2026-12-06",
        description: description,
        sections: [roles, configurationFile, environment, files, exitStatus, examples, seeAlso])
}
