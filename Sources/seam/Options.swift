import SeamCommandLine

/// The options and operands more than one of seam's commands take, declared once.
enum Opt {
    static let json = Option.flag("json", "print JSON instead of a table or text")
    static let dataDir = Option.value("data-dir", "DIR", "the stores' directory, when no seamd runs (default: as seamd finds it)",
                                      complete: .directory)
    static let configDir = Option.value("config-dir", "DIR", "where sync.json and the password file are (default $XDG_CONFIG_HOME/seam)",
                                        complete: .directory)

    // A timer's attributes (`timer add`, `timer edit`).
    static func step(required: Bool) -> Option {
        .value("step", "LABEL=DURATION", "a step: its label and duration (90s, 5m, 1h30m, 1:30, 1:02:03 or seconds; a week at most)",
               repeatable: true, required: required)
    }
    static let rounds = Option.value("repeat", "N", "how many times the steps run (1 to 1000; default 1)")
    static let icon = Option.value("icon", "ICON", "an icon's name, for a view to show")
    static let colour = Option.value("colour", "COLOUR", "a colour, for a view to show")
    static let sound = Option.value("sound", "NAME", "the sound its sessions play when a step ends (none by default)")
    static let group = Option.value("group", "GROUP", "the group it belongs to: an existing group's name or short id",
                                    complete: .names(["group", "ls"]), excludes: ["no-group"])
    static let note = Option.value("note", "TEXT", "a note kept with the session")

    // Queries (`query`, `subscribe`).
    static let query: [Option] = [
        .value("where", "PREDICATE", "the rows to give: a predicate, e.g. \"name BEGINSWITH 'Tea'\""),
        .value("sort", "KEYS", "sort keys, comma-separated: name, -startedAt (descending), name[c] (ignoring case)"),
        .value("limit", "N", "at most N rows"),
        .value("fields", "A,B", "only these attributes (and uuid)"),
    ]

    static let entityArg = Operand("ENTITY", "an entity of the schema: Timer, UserGroup, Session, …",
                                complete: .words(["Timer", "UserGroup", "Session", "SyncToken", "SyncRecord"]))
    static let timerArg = Operand("TIMER", "a timer's name or short id (4 or more characters from the start or end of its uuid)",
                               complete: .names(["timer", "ls"]))
    static let groupArg = Operand("GROUP", "a group's name or short id", complete: .names(["group", "ls"]))
}
