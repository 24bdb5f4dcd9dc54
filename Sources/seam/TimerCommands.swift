import SeamClient
import SeamCommandLine
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamSystem
import SeamTimers

/// The timer app's commands: timers, groups, sessions, the unified list.
enum TimerCommands {
    static let all: [Command] = timer + group + sessions + [list]

    static let timer: [Command] = [
        Command("timer add", "define a timer (durations: 90s, 5m, 1h30m, 1:30, 1:02:03 or seconds; a week at most)",
                operands: [Operand("NAME", "the new timer's name, not one another timer has")],
                options: [Opt.step(required: true), Opt.rounds, Opt.icon, Opt.colour, Opt.sound, Opt.group, Opt.json]) { operands, args in
            var values: JSONObject = ["name": .string(try nonEmptyName(operands[0], of: "a timer"))]
            let c = try connect(args)
            try requireNewName(operands[0], among: try c.fetch("Timer", fields: ["uuid", "name"]), kind: "timer")
            let steps = args.values("step")
            guard !steps.isEmpty else { throw Arguments.UsageError("a timer needs at least one --step LABEL=DURATION") }
            values["steps"] = try stepsJSON(steps)
            if let n = try args.integer("repeat", in: 1...SessionClock.maxRounds) { values["repeatCount"] = .integer(Int64(n)) }
            if let i = args.value("icon") { values["icon"] = .string(i) }
            if let colour = args.value("colour") { values["colour"] = .string(colour) }
            if let sound = args.value("sound") { values["sound"] = .string(sound) }
            if let g = args.value("group") { values["groupUUID"] = try resolveGroup(c, g)["uuid"]! }
            let now = WallClock.now()
            values["createdAt"] = .double(now)
            values["modifiedAt"] = .double(now)
            let uuid = try c.save([.insert(entity: "Timer", values: values)]).inserted[0]
            if args.flag("json") { output(.object(try c.row("Timer", uuid: uuid) ?? [:])) } else { print(uuid) }
        },
        Command("timer ls", "the timers", options: [Opt.json]) { _, args in
            prepareForListing()
            let c = try connect(args, hello: false)
            let rows = try timers(c)
            if args.flag("json") {
                outputArray(rows, JSON.object)
                exitAfterListing()
            }
            // The same honest group labels as `seam ls`: twins told apart, missing groups said.
            let groupRows = try groups(c).map { values($0, entity: "UserGroup") }
            let twins = TimerList.duplicateNames(groupRows)
            let groupByUUID = Dictionary(groupRows.map { ($0["uuid"]?.stringValue ?? "", $0) }, uniquingKeysWith: { a, _ in a })
            table([["NAME", "STEPS", "REPEAT", "GROUP", "UUID"]] + rows.map { t in
                let group = t["groupUUID"]?.stringValue
                return [t["name"]?.stringValue ?? "", describeSteps(t["steps"]), "\(t["repeatCount"]?.int64Value ?? 1)×",
                        TimerList.groupLabel(groupUUID: group, group: group.flatMap { groupByUUID[$0] }, duplicateNames: twins),
                        ShortID.of(t["uuid"]?.stringValue ?? "")]
            })
            exitAfterListing()
        },
        Command("timer show", "one timer, by name or short id", operands: [Opt.timerArg], options: [Opt.json]) { operands, args in
            let c = try connect(args, hello: false)
            let t = try resolveTimer(c, operands[0])
            if args.flag("json") { return output(.object(t)) }
            for (k, v) in t { print("\(k): \(Terminal.printable(v.stringValue ?? v.description))") }
        },
        Command("timer edit", "change a timer; a running session keeps what it started with", operands: [Opt.timerArg],
                options: [.value("name", "NAME", "a new name, not one another timer has"), Opt.step(required: false), Opt.rounds, Opt.icon,
                          Opt.colour, Opt.sound, Opt.group, .flag("no-group", "take it out of its group", excludes: ["group"]), Opt.json]) { operands, args in
            var values: JSONObject = [:]
            if let n = args.value("name") { values["name"] = .string(try nonEmptyName(n, of: "a timer")) }
            let c = try connect(args)
            let t = try resolveTimer(c, operands[0])
            if let n = args.value("name") {
                try requireNewName(n, among: try c.fetch("Timer", fields: ["uuid", "name"]), kind: "timer", renaming: t["uuid"]?.stringValue)
            }
            if !args.values("step").isEmpty { values["steps"] = try stepsJSON(args.values("step")) }
            if let n = try args.integer("repeat", in: 1...SessionClock.maxRounds) { values["repeatCount"] = .integer(Int64(n)) }
            if let i = args.value("icon") { values["icon"] = .string(i) }
            if let colour = args.value("colour") { values["colour"] = .string(colour) }
            if let sound = args.value("sound") { values["sound"] = .string(sound) }
            if let g = args.value("group") { values["groupUUID"] = try resolveGroup(c, g)["uuid"]! }
            if args.flag("no-group") { values["groupUUID"] = .null }
            guard !values.isEmpty else {
                throw Arguments.UsageError("nothing to change: give --name, --step, --repeat, --icon, --colour, --sound or --group")
            }
            values["modifiedAt"] = .double(WallClock.now())
            let uuid = t["uuid"]!.stringValue!
            try c.save([.update(entity: "Timer", uuid: uuid, values: values)])
            if args.flag("json") { output(.object(try c.row("Timer", uuid: uuid) ?? [:])) }
        },
        Command("timer rm", "delete a timer (and its session)", operands: [Opt.timerArg]) { operands, args in
            let c = try connect(args)
            let t = try resolveTimer(c, operands[0])
            try c.save([.delete(entity: "Timer", uuid: t["uuid"]!.stringValue!)])
        },
    ]

    static let group: [Command] = [
        Command("group add", "a group for timers", operands: [Operand("NAME", "the new group's name, not one another group has")],
                options: [Opt.json]) { operands, args in
            let name = try nonEmptyName(operands[0], of: "a group")
            let c = try connect(args)
            try requireNewName(name, among: try groups(c), kind: "group")
            let now = WallClock.now()
            let uuid = try c.save([.insert(entity: "UserGroup", values: ["name": .string(name), "createdAt": .double(now),
                                                                         "modifiedAt": .double(now)])]).inserted[0]
            if args.flag("json") { output(.object(try c.row("UserGroup", uuid: uuid) ?? [:])) } else { print(uuid) }
        },
        Command("group ls", "the groups", options: [Opt.json]) { _, args in
            prepareForListing()
            let rows = try groups(try connect(args, hello: false))
            if args.flag("json") {
                outputArray(rows, JSON.object)
                exitAfterListing()
            }
            table([["NAME", "UUID"]] + rows.map { [$0["name"]?.stringValue ?? "", ShortID.of($0["uuid"]?.stringValue ?? "")] })
        },
        Command("group rename", "rename a group", operands: [Opt.groupArg, Operand("NEW-NAME", "its new name")]) { operands, args in
            let name = try nonEmptyName(operands[1], of: "a group")
            let c = try connect(args)
            let g = try resolveGroup(c, operands[0])
            try requireNewName(name, among: try groups(c), kind: "group", renaming: g["uuid"]?.stringValue)
            try c.save([.update(entity: "UserGroup", uuid: g["uuid"]!.stringValue!, values: ["name": .string(name),
                                                                                              "modifiedAt": .double(WallClock.now())])])
        },
        Command("group rm", "delete a group (its timers stay, ungrouped)", operands: [Opt.groupArg]) { operands, args in
            let c = try connect(args)
            try c.save([.delete(entity: "UserGroup", uuid: try resolveGroup(c, operands[0])["uuid"]!.stringValue!)])
        },
    ]

    static let sessions: [Command] = [
        Command("start", "start a timer: its session copies it", operands: [Opt.timerArg], options: [Opt.note]) { operands, args in
            let c = try connect(args)
            let t = try resolveTimer(c, operands[0])
            var p: JSONObject = ["timer": t["uuid"]!]
            if let note = args.value("note") { p["note"] = .string(note) }
            let r = try c.call("org.seam.Timers.Start", p)
            print("started \(Terminal.printable(t["name"]?.stringValue ?? "")) (session \(ShortID.of(r["session"]?.stringValue ?? "")))")
        },
        Command("flash", "start a one-off timer with no definition",
                operands: [Operand("DURATION", "how long: 90s, 5m, 1h30m, 1:30, 1:02:03 or seconds; a week at most")],
                options: [.value("name", "NAME", "a name for the session"), Opt.note]) { operands, args in
            var p: JSONObject = ["seconds": .integer(Int64(try asUsage { () throws(TimerInputError) in try DurationText.parse(operands[0]) }))]
            if let n = args.value("name") { p["name"] = .string(try nonEmptyName(n, of: "a flash timer")) }
            if let note = args.value("note") { p["note"] = .string(note) }
            let r = try connect(args).call("org.seam.Timers.Flash", p)
            print("started \(Terminal.printable(args.value("name") ?? "a flash timer")) (session \(ShortID.of(r["session"]?.stringValue ?? "")))")
        },
    ] + ["pause", "resume", "reset", "stop", "skip"].map { verb in
        Command(verb, "\(verb) a session (by its timer's name, its name, or short id)",
                operands: [Operand("SESSION-OR-TIMER", "a running timer's name, a flash session's name, or a short id",
                                   complete: .names(["ls"]))]) { operands, args in
            let c = try connect(args)
            let s = try resolveSession(c, operands[0])
            let r = try c.call("org.seam.Timers.\(verb.prefix(1).uppercased() + verb.dropFirst())", ["session": .string(s)])
            print("\(operands[0]): \(r["state"]?.stringValue ?? "?")")
        }
    } + [
        Command("clear", "remove finished sessions") { _, args in
            let r = try connect(args).call("org.seam.Timers.Clear")
            print("cleared \(r["deleted"]?.int64Value ?? 0) finished session(s)")
        },
    ]

    static let list = Command("ls", "timers with their sessions, and sessions without a timer", options: [Opt.json]) { _, args in
        prepareForListing()
        let c = try connect(args, hello: false)
        let groupRows = try groups(c).map { values($0, entity: "UserGroup") }
        let twins = TimerList.duplicateNames(groupRows)
        // The table shows no timer's steps (a session has its own copy): its rows are fetched
        // without them, a fifth of the bytes of 100,000 timers.
        // TimerList puts them in order (a total one, the uuid last): seamd need not sort them first.
        let timerRows = args.flag("json") ? try c.fetch("Timer") : try c.fetch("Timer", fields: Array(timerListKeys))
        // With the Local store closed (migrating, damaged), the timers are listed all the same,
        // and the list ends saying why the sessions are not in it.
        var sessionsUnavailable: String?
        let sessionRows: [JSONObject]
        do { sessionRows = try c.fetch("Session") } catch let error as ClientError where error.remoteName == "org.seam.Store.StoreUnavailable" {
            sessionRows = []
            sessionsUnavailable = error.personMessage
        }
        func finish() -> Never {
            guard let why = sessionsUnavailable else { exitAfterListing() }
            Terminal.flushOutput()
            Terminal.fail("seam", "the sessions are not listed: \(why)")
        }
        let entries = TimerList.build(timers: timerRows.map { values($0, entity: "Timer", only: timerListKeys) },
                                      sessions: sessionRows.map { values($0, entity: "Session") }, groups: groupRows)
        let now = WallClock.now()
        func clock(_ e: TimerListEntry) -> SessionClock? { e.session.flatMap { try? SessionClock(session: $0) } }
        if args.flag("json") {
            // Each row as it came from seamd (its wire form), keys sorted; the list written an
            // entry at a time rather than built whole first.
            var timerKeys = KeyOrder(), sessionKeys = KeyOrder()
            outputArray(entries) { e in
                var o: JSONObject = ["kind": .string(e.timer == nil ? "session" : "timer"), "name": .string(e.name)]
                if let i = e.timerIndex { o["timer"] = .object(timerKeys.sorted(timerRows[i])) }
                if let i = e.sessionIndex { o["session"] = .object(sessionKeys.sorted(sessionRows[i])) }
                if let g = e.group?["name"]?.stringValue { o["group"] = .string(g) }
                if e.groupMissing { o["groupMissing"] = .bool(true) }
                if e.timerMissing { o["timerMissing"] = .bool(true) }
                if let note = e.note { o["note"] = .string(note) }
                o["remaining"] = clock(e)?.remaining(at: now).map(JSON.double) ?? .null
                return .object(o)
            }
            finish()
        }
        // The notes get a column when there is one to show.
        let notes = entries.contains { $0.note != nil }
        table([["NAME", "STATE", "LEFT", "STEP", "GROUP"] + (notes ? ["NOTE"] : [])] + entries.map { e in
            let c = clock(e)
            let step: String
            if let c, c.state != .finished, let steps = try? Steps.decode(e.session?["steps"].flatMap { if case .json(let t) = $0 { t } else { nil } } ?? "[]"),
               steps.indices.contains(c.stepIndex) {
                step = steps[c.stepIndex].label + (c.repeatCount > 1 ? " (round \(c.round + 1)/\(c.repeatCount))" : "")
            } else {
                step = ""
            }
            let backing = e.timer != nil ? "" : e.timerMissing ? " (its timer is gone)" : " (no timer)"
            return [e.name + backing, c?.state.rawValue ?? "-",
                    c?.remaining(at: now).map(DurationText.clock) ?? "", step, e.groupLabel(duplicateNames: twins)]
                + (notes ? [e.note ?? ""] : [])
        })
        finish()
    }
}
