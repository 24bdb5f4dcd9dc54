import Foundation
import SeamCommandLine
import SeamJSON
import SeamSystem
import SeamTestSupport
import XCTest

/// The real `seam` CLI against a real seamd: what a person types, what they see, exit codes.
final class CLITests: BrokerTestCase {
    @discardableResult
    func seam(_ arguments: String..., status expected: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        try seam(arguments, status: expected, file: file, line: line)
    }

    func seam(_ arguments: [String], status expected: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let r = try Executables.run("seam", arguments, environment: ["SEAM_SOCKET": broker.socketPath])
        XCTAssertEqual(r.status, expected, "seam \(arguments.joined(separator: " ")): \(r.stderr)", file: file, line: line)
        return expected == 0 ? r.stdout : r.stderr
    }

    func json(_ text: String) throws -> JSON { try JSON.decode(Array(text.utf8)) }

    func testTimersGroupsAndTheSessionLifecycle() throws {
        try seam("group", "add", "Kitchen")
        let tea = try json(try seam("timer", "add", "Tea", "--step", "Steep=3m", "--step", "Rest=30s", "--repeat", "2",
                                    "--group", "kitchen", "--json"))
        XCTAssertEqual(tea["steps"]?.arrayValue?.count, 2)
        XCTAssertEqual(tea["repeatCount"]?.int64Value, 2)
        XCTAssertNotNil(tea["groupUUID"]?.stringValue)
        try seam("timer", "add", "Eggs", "--step", "Boil=7m")
        let listed = try json(try seam("timer", "ls", "--json"))
        XCTAssertEqual(listed.arrayValue?.compactMap { $0["name"]?.stringValue }, ["Eggs", "Tea"])

        XCTAssertTrue(try seam("start", "tea").hasPrefix("started Tea"))
        XCTAssertTrue(try seam("start", "Tea", status: 1).contains("already running"))
        try seam("flash", "1:30", "--name", "Pasta")
        var ls = try json(try seam("ls", "--json")).arrayValue ?? []
        XCTAssertEqual(ls.map { $0["name"]?.stringValue }, ["Tea", "Eggs", "Pasta"], "grouped timers, ungrouped, then orphan sessions")
        XCTAssertEqual(ls[0]["session"]?["state"]?.stringValue, "running")
        XCTAssertEqual(ls[2]["kind"]?.stringValue, "session")
        XCTAssertEqual(ls[2]["remaining"]?.doubleValue ?? 0, 90, accuracy: 5)

        // Editing the timer mid-run changes nothing in the run.
        try seam("timer", "edit", "Tea", "--name", "Green tea", "--step", "Steep=2m")
        ls = try json(try seam("ls", "--json")).arrayValue ?? []
        let running = try XCTUnwrap(ls.first { $0["timer"]?["name"]?.stringValue == "Green tea" })
        XCTAssertEqual(running["session"]?["name"]?.stringValue, "Tea")
        XCTAssertEqual(running["session"]?["steps"]?.arrayValue?.count, 2)

        XCTAssertEqual(try seam("pause", "green tea"), "green tea: paused\n")
        XCTAssertTrue(try seam("pause", "green tea", status: 1).contains("not running"))
        XCTAssertEqual(try seam("resume", "Green tea"), "Green tea: running\n")
        XCTAssertEqual(try seam("skip", "Pasta"), "Pasta: finished\n")
        XCTAssertEqual(try seam("clear"), "cleared 1 finished session(s)\n")
        XCTAssertEqual(try json(try seam("ls", "--json")).arrayValue?.count, 2, "the finished flash session is gone")

        // Deleting a timer deletes its session.
        try seam("timer", "rm", "green tea")
        XCTAssertEqual(try json(try seam("query", "Session", "--json")).arrayValue?.count, 0)
        try seam("group", "rename", "Kitchen", "Pantry")
        XCTAssertEqual(try json(try seam("group", "ls", "--json")).arrayValue?.first?["name"]?.stringValue, "Pantry")
        try seam("group", "rm", "pantry")
    }

    /// `--sound` on timer add and timer edit; timer show prints it (and --json has it); a
    /// session started from the timer copies it; --help shows the option.
    func testTheSoundRoundTripsThroughAddEditAndShow() throws {
        let added = try json(try seam("timer", "add", "Tea", "--step", "Steep=3m", "--sound", "gong", "--json"))
        XCTAssertEqual(added["sound"]?.stringValue, "gong")
        XCTAssertTrue(try seam("timer", "show", "tea").split(separator: "\n").contains("sound: gong"))
        try seam("timer", "add", "Eggs", "--step", "Boil=7m")
        XCTAssertEqual(try json(try seam("timer", "show", "eggs", "--json"))["sound"]?.stringValue, "", "no sound by default")

        try seam("timer", "edit", "tea", "--sound", "singing bowl")
        XCTAssertTrue(try seam("timer", "show", "tea").split(separator: "\n").contains("sound: singing bowl"))
        XCTAssertEqual(try json(try seam("timer", "show", "tea", "--json"))["sound"]?.stringValue, "singing bowl")
        let edited = try json(try seam("timer", "edit", "tea", "--sound", "bell", "--json"))
        XCTAssertEqual(edited["sound"]?.stringValue, "bell")
        XCTAssertEqual(edited["name"]?.stringValue, "Tea", "the rest is unchanged")

        try seam("start", "tea")
        let ls = try json(try seam("ls", "--json")).arrayValue ?? []
        XCTAssertEqual(ls.first { $0["name"]?.stringValue == "Tea" }?["session"]?["sound"]?.stringValue, "bell")
        XCTAssertTrue(try seam("timer", "add", "--help").contains("[--sound NAME]"))
        XCTAssertTrue(try seam("timer", "edit", "--help").contains("[--sound NAME]"))
        XCTAssertTrue(try seam("timer", "edit", "tea", status: 64).contains("--sound"), "the usage error names every option")
    }

    /// `--note` on start and flash; `seam ls` shows a note only where there is one (a NOTE column
    /// once any session has one; `note` in --json).
    /// `group add` and `timer add` refuse a name one has already (naming it by short id), so
    /// that the person does not make the ambiguity `--group G1` or `seam start G1` would meet;
    /// nothing is saved.
    func testAddingANameThatExistsIsRefused() throws {
        let kitchen = try seam("group", "add", "Kitchen").trimmingCharacters(in: .whitespacesAndNewlines)
        let said = try seam("group", "add", "Kitchen", status: 1)
        XCTAssertTrue(said.contains("a group named 'Kitchen' exists already (\(kitchen.suffix(8)))"), said)
        let tea = try seam("timer", "add", "Tea", "--step", "a=1m").trimmingCharacters(in: .whitespacesAndNewlines)
        let again = try seam("timer", "add", "Tea", "--step", "b=2m", status: 1)
        XCTAssertTrue(again.contains("a timer named 'Tea' exists already (\(tea.suffix(8)))"), again)
        XCTAssertEqual(try client().count("UserGroup"), 1)
        XCTAssertEqual(try client().count("Timer"), 1)
        try seam("timer", "add", "tea", "--step", "a=1m")  // another name: case counts
        // Renaming onto another's name too; onto its own name is no change, and allowed.
        XCTAssertTrue(try seam("timer", "edit", "tea", "--name", "Tea", status: 1).contains("exists already"))
        try seam("timer", "edit", "Tea", "--name", "Tea")
        try seam("group", "add", "Pantry")
        XCTAssertTrue(try seam("group", "rename", "Pantry", "Kitchen", status: 1).contains("a group named 'Kitchen' exists already"))
        try seam("group", "rename", "Pantry", "Larder")
        XCTAssertEqual(Set(try client().fetch("UserGroup").compactMap { $0["name"]?.stringValue }), ["Kitchen", "Larder"])
    }

    /// What sync can deliver, shown honestly by `seam ls` and `seam timer ls`: a timer whose
    /// group is not there, and two groups of one name, each with its short id (the end of its uuid).
    func testMissingAndTwinGroupsAreShownHonestly() throws {
        try seam("group", "add", "Kitchen")
        try seam("call", "org.seam.Store.Save", #"{"inserts": [{"entity": "UserGroup", "values": {"name": "Kitchen"}}]}"#)
        try seam("call", "org.seam.Store.Save", #"{"inserts": [{"entity": "Timer", "values": {"name": "Stray", "groupUUID": "dddddddd-0000-4000-8000-0000dddddddd"}}]}"#)
        XCTAssertTrue(try seam("timer", "add", "Soup", "--step", "Boil=10m", "--group", "Kitchen", status: 1).contains("could be any of"))
        for command in [["ls"], ["timer", "ls"]] {
            let out = try Executables.run("seam", command, environment: ["SEAM_SOCKET": broker.socketPath]).stdout
            XCTAssertTrue(out.split(separator: "\n").contains { $0.hasPrefix("Stray ") && $0.contains("(missing dddddddd)") }, out)
        }
        let groups = try json(try seam("group", "ls", "--json")).arrayValue?.compactMap { $0["uuid"]?.stringValue } ?? []
        XCTAssertEqual(groups.count, 2)
        try seam("timer", "add", "Soup", "--step", "Boil=10m", "--group", String(groups[0].suffix(8)))
        XCTAssertTrue(try seam("ls").contains("Kitchen (\(groups[0].suffix(8)))"))
        let listed = try json(try seam("ls", "--json")).arrayValue ?? []
        XCTAssertEqual(listed.first { $0["name"]?.stringValue == "Stray" }?["groupMissing"], .bool(true))
    }

    func testNotesOnStartAndFlashShowInTheList() throws {
        try seam("timer", "add", "Tea", "--step", "Steep=3m")
        try seam("flash", "5m")
        XCTAssertFalse(try seam("ls").contains("NOTE"), "no note, no column")
        try seam("start", "tea", "--note", "for the guests")
        try seam("flash", "90s", "--name", "Pasta", "--note", "salt the water")
        let ls = try json(try seam("ls", "--json")).arrayValue ?? []
        let notes = Dictionary(ls.map { ($0["name"]?.stringValue ?? "", $0["note"]?.stringValue ?? "-") }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(notes, ["Tea": "for the guests", "Pasta": "salt the water", "Flash 5m": "-"])
        XCTAssertEqual(ls.first { $0["name"]?.stringValue == "Tea" }?["session"]?["note"]?.stringValue, "for the guests")
        let lines = try seam("ls").split(separator: "\n")
        XCTAssertTrue(lines.first?.hasSuffix("NOTE") ?? false, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("Tea ") && $0.hasSuffix("for the guests") }, "\(lines)")
        XCTAssertTrue(try seam("start", "--help").contains("--note TEXT"))
        XCTAssertTrue(try seam("flash", "--help").contains("usage: seam flash DURATION [--name NAME] [--note TEXT]"))
    }

    /// Four `seam start` of one timer at the same moment: one session, three refusals.
    func testConcurrentStartsFromTheCLIGiveOneSession() throws {
        try seam("timer", "add", "Tea", "--step", "Steep=3m")
        let processes = try (0..<4).map { _ -> (Process, Pipe) in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Executables.path("seam"))
            p.arguments = ["start", "Tea"]
            p.environment = ProcessInfo.processInfo.environment.merging(["SEAM_SOCKET": broker.socketPath]) { $1 }
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            return (p, err)
        }
        var statuses: [Int32] = []
        for (p, err) in processes {
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            statuses.append(p.terminationStatus)
            if p.terminationStatus != 0 { XCTAssertTrue(text.contains("already running"), text) }
        }
        XCTAssertEqual(statuses.filter { $0 == 0 }.count, 1, "\(statuses)")
        XCTAssertEqual(try json(try seam("query", "Session", "--json")).arrayValue?.count, 1)
    }

    /// A flash started again under the name of one that finished (the list keeps it until
    /// `seam clear`) is the one a name means; two going at once under one name ask for more.
    func testANameMeansTheSessionStillGoing() throws {
        try seam("flash", "10m", "--name", "Pasta")
        XCTAssertTrue(try seam("stop", "pasta").contains("finished"))
        try seam("flash", "10m", "--name", "Pasta")
        XCTAssertTrue(try seam("pause", "pasta").contains("paused"))
        XCTAssertTrue(try seam("resume", "Pasta").contains("running"))
        try seam("flash", "5m", "--name", "Pasta")
        XCTAssertTrue(try seam("pause", "pasta", status: 1).contains("could be any of"))
    }

    /// `--fields` takes a list as `--sort` does, spaces after commas too; a `--` after leading
    /// common options still ends the options.
    func testListsAndTheEndOfOptions() throws {
        try seam("group", "add", "Kitchen")
        let rows = try json(try seam("query", "UserGroup", "--fields", "name, sortOrder", "--json"))
        XCTAssertEqual(rows[0]?["name"]?.stringValue, "Kitchen")
        XCTAssertEqual(rows[0]?["sortOrder"]?.int64Value, 0)
        let r = try Executables.run("seam", ["--socket", broker.socketPath, "query", "--json", "--", "UserGroup"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("Kitchen"), r.stdout)
    }

    /// With the Local store closed (here: not a store at all), `seam ls` lists the timers and
    /// ends saying why the sessions are not there; it does not fail before listing anything.
    func testWithLocalClosedTheTimersAreListedAndTheListSaysWhy() throws {
        try seam("timer", "add", "Kettle", "--step", "boil=3m")
        XCTAssertEqual(broker.stop(), 0)
        try Data(repeating: 0x2A, count: 8192).write(to: URL(fileURLWithPath: broker.dataDirectory + "/Local.sqlite"))
        broker = try broker.restarted()
        for arguments in [["ls"], ["ls", "--json"]] {
            let r = try Executables.run("seam", arguments, environment: ["SEAM_SOCKET": broker.socketPath])
            XCTAssertEqual(r.status, 1, r.stderr)
            XCTAssertTrue(r.stdout.contains("Kettle"), "\(arguments): \(r.stdout)")
            XCTAssertTrue(r.stderr.hasPrefix("seam: the sessions are not listed: "), r.stderr)
            XCTAssertFalse(r.stderr.contains("org.seam."), r.stderr)
        }
    }

    /// seamd's refusals read as words; the varlink name comes with --verbose (or --json).
    func testSeamdsErrorsReadAsWordsAndNameTheirKindOnlyWhenAsked() throws {
        try seam("flash", "10m", "--name", "Bread")
        try seam("pause", "Bread")
        let plain = try seam("pause", "Bread", status: 1)
        XCTAssertTrue(plain.hasPrefix("seam: ") && plain.contains("paused"), plain)
        XCTAssertFalse(plain.contains("org.seam."), plain)
        XCTAssertEqual(plain.split(separator: "\n").count, 1, plain)
        let verbose = try seam("pause", "Bread", "--verbose", status: 1)
        XCTAssertTrue(verbose.contains("org.seam.Timers.WrongState: "), verbose)
        XCTAssertTrue(try seam("--verbose", "pause", "Bread", status: 1).contains("org.seam.Timers.WrongState"), "a common flag, before the command too")
    }

    func testMistakesGetOneLineAndANonZeroExit() throws {
        try seam("timer", "add", "Tea one", "--step", "a=1m")
        try seam("timer", "add", "Tea two", "--step", "a=1m")
        let uuids = (try json(try seam("timer", "ls", "--json")).arrayValue ?? []).compactMap { $0["uuid"]?.stringValue }
        // Two timers share no uuid prefix longer than a few characters; by name they are distinct.
        XCTAssertTrue(try seam("start", "Tea three", status: 1).contains("seam timer ls lists them"))
        // A value of the wrong form is a usage error (64), said before anything is saved.
        XCTAssertTrue(try seam("timer", "add", "X", "--step", "a=soon", status: 64).contains("is not a duration"))
        XCTAssertTrue(try seam("timer", "add", "X", "--step", "a=0s", status: 64).contains("at least one second"))
        XCTAssertTrue(try seam("timer", "add", "X", status: 64).contains("--step"))
        XCTAssertTrue(try seam("flash", "5 minutes", status: 64).contains("is not a duration"))
        XCTAssertTrue(try seam("flash", "0", status: 64).contains("at least one second"))
        let many = (0...100).flatMap { ["--step", "s\($0)=5s"] }
        XCTAssertTrue(try seam(["timer", "add", "Many"] + many, status: 64).contains("at most 100 steps"))
        XCTAssertFalse(try seam("timer", "ls").contains("Many"), "nothing was saved")
        XCTAssertTrue(try seam("flash", "5", "minutes", status: 64).contains("usage"))
        XCTAssertTrue(try seam("frobnicate", status: 64).contains("seam --help"))
        XCTAssertTrue(try seam("timer", "add", "X", "--step", "a=1m", "--bogus", "1", status: 64).contains("unknown option"))
        XCTAssertTrue(try seam("pause", "Tea one", status: 1).contains("not running"))
        XCTAssertTrue(try seam("--help").contains("timer add"))
        XCTAssertTrue(try seam("timer", "edit", "--help").contains("usage: seam timer edit"))
        // Each says what to do next.
        XCTAssertTrue(try seam("pause", "Tea three", status: 1).contains("seam ls lists them"), "a session may be a flash, which seam ls shows")
        XCTAssertTrue(try seam("pause", "4e", status: 1).contains("a short id needs at least 4 characters"))
        XCTAssertTrue(try seam("ls", "--jsn", status: 64).contains("seam ls --help"))
        XCTAssertTrue(try seam("watch", "--bell", "loud", status: 64).contains("--bell is steps"))
        XCTAssertTrue(try seam("timer", status: 64).contains("seam timer takes one of: add, ls"))
        XCTAssertEqual(try seam("--version"), "seam 0.1.0\n")
        XCTAssertTrue(try seam([], status: 64).contains("usage: seam COMMAND"), "no command: the usage, on stderr")
        // Ambiguous: two rows whose names differ only in case.
        try seam("timer", "add", "tea one", "--step", "a=1m")
        let ambiguous = try seam("start", "TEA ONE", status: 1)
        XCTAssertTrue(ambiguous.contains("could be any of"), ambiguous)
        XCTAssertEqual(uuids.count, 2)
        // No broker: say how to start one.
        let r = try Executables.run("seam", ["ls"], environment: ["SEAM_SOCKET": "/tmp/seam-no-such-dir/seamd.sock"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("start it with `seam up`"), r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "one line")
    }

    /// A timer named as the end (or the start) of another timer's uuid: `seam timer rm` asks
    /// which is meant rather than delete the other one (the uuid prefix used to win over the
    /// name). A name in another case is no different.
    func testANameThatStartsAnotherUUIDIsNotTakenForIt() throws {
        let victim = try seam("timer", "add", "Victim", "--step", "a=1m").trimmingCharacters(in: .whitespacesAndNewlines)
        let end = String(victim.suffix(4))
        let named = try seam("timer", "add", end, "--step", "a=1m").trimmingCharacters(in: .whitespacesAndNewlines)
        let said = try seam("timer", "rm", end, status: 1)
        XCTAssertTrue(said.contains("could be any of") && said.contains("Victim (\(victim.suffix(8)))")
                      && said.contains("\(end) (\(named.suffix(8)))"), said)
        func names() throws -> [String] { (try json(try seam("timer", "ls", "--json")).arrayValue ?? []).compactMap { $0["name"]?.stringValue } }
        XCTAssertEqual(try names().sorted(), [end, "Victim"].sorted(), "nothing was deleted")
        if named.prefix(8) == victim.prefix(8) {  // keys made within the same minute or so share their first eight digits
            XCTAssertTrue(try seam("timer", "rm", String(named.prefix(8)), status: 1).contains("could be any of"))
        }
        try seam("timer", "rm", String(named.suffix(8)))
        XCTAssertEqual(try names(), ["Victim"], "the short id a listing shows says which")

        let shouty = String(victim.prefix(35)).uppercased()
        try seam("timer", "add", shouty, "--step", "a=1m")
        XCTAssertTrue(try seam("timer", "rm", shouty.lowercased(), status: 1).contains("could be any of"))
        XCTAssertEqual(try names().count, 2, "nothing was deleted")
        try seam("timer", "rm", "victim")
        XCTAssertEqual(try json(try seam("timer", "show", shouty.lowercased(), "--json"))["name"]?.stringValue, shouty,
                       "no uuid starts so any more: the name alone")
    }

    /// The same for sessions: `seam stop 3af5`, with a timer named 3af5 and another timer's
    /// session whose uuid starts so, names both rather than stop the other one.
    func testANameThatStartsAnotherSessionsUUIDIsNotTakenForIt() throws {
        try seam("timer", "add", "Other", "--step", "a=10m")
        try seam("start", "Other")
        let session = try XCTUnwrap(try client().fetch("Session").first?["uuid"]?.stringValue)
        let prefix = String(session.prefix(4))
        try seam("timer", "add", prefix, "--step", "a=10m")
        let said = try seam("stop", prefix, status: 1)
        XCTAssertTrue(said.contains("could be any of") && said.contains("Other (\(session.suffix(8)))"), said)
        XCTAssertEqual(try client().row("Session", uuid: session)?["state"]?.stringValue, "running", "nothing was stopped")
        try seam("stop", "Other")
        XCTAssertEqual(try client().row("Session", uuid: session)?["state"]?.stringValue, "finished")
    }

    /// Names are store text, which anything may have written: errors show them escaped. A list
    /// of look-alikes stops at ten.
    func testStoreTextInErrorsIsEscapedAndTheListIsShort() throws {
        let name = "kettle\u{1B}[2J"
        for i in 1...12 {
            let variant = String(name.enumerated().map { n, c in i >> n & 1 == 1 ? Character(c.uppercased()) : c })
            try seam("timer", "add", variant, "--step", "a=1m")
        }
        let said = try seam("start", name, status: 1)
        XCTAssertFalse(said.contains("\u{1B}"), said)
        XCTAssertTrue(said.contains("could be any of: ") && said.contains("\\u{1B}[2J"), said)
        XCTAssertEqual(said.components(separatedBy: "[2J (").count - 1, 10, said)
        XCTAssertTrue(said.contains("… and 2 more; give more of a uuid"), said)

        try seam("timer", "add", "Idle\u{1B}]0;owned\u{07}", "--step", "a=1m")
        let idle = try seam("pause", "idle\u{1B}]0;owned\u{07}", status: 1)
        XCTAssertTrue(idle.contains("'Idle\\u{1B}]0;owned\\u{7}' is not running"), idle)
    }

    /// Tables line up in terminal columns (a CJK name takes two per character); on a terminal a
    /// long name is cut, piped it is whole.
    func testTablesLineUpWideNamesAndCutLongOnesOnATerminal() throws {
        let long = String(repeating: "Very long name ", count: 6) + "end"
        for name in ["お茶", "Tea", long] { try seam("timer", "add", name, "--step", "Steep=1m") }
        func stepsColumns(_ lines: [String]) -> Set<Int> {
            Set(lines.map { line in
                DisplayWidth.columns(String(line[..<(line.range(of: "STEPS") ?? line.range(of: "Steep")!).lowerBound]))
            })
        }
        let piped = try seam("timer", "ls").split(separator: "\n").map(String.init)
        XCTAssertEqual(piped.count, 4, "\(piped)")
        XCTAssertEqual(stepsColumns(piped).count, 1, "\(piped)")
        XCTAssertTrue(piped.contains { $0.hasPrefix(long + "  ") }, "\(piped)")

        let tty = try WatchTests.PseudoTerminal(rows: 24, columns: 200)
        let pid = try Processes.spawn(Executables.path("seam"), arguments: ["timer", "ls", "--socket", broker.socketPath],
                                      environment: ["PATH": "/usr/bin:/bin"], descriptors: [-1, -1, -1],
                                      placement: .init(newSession: true, terminal: tty.slavePath))
        defer { if Processes.isAlive(pid) { kill(pid, SIGKILL); _ = Processes.wait(pid) } }
        XCTAssertTrue(tty.read(until: 10) { $0.unicodeScalars.filter { $0 == "\n" }.count >= 4 }, tty.text)
        XCTAssertEqual(Processes.wait(pid, timeout: 5), .status(0))
        let shown = tty.text.replacingOccurrences(of: "\r", with: "").split(separator: "\n").map(String.init)
        XCTAssertEqual(stepsColumns(shown).count, 1, "\(shown)")
        let cut = try XCTUnwrap(shown.first { $0.hasPrefix("Very long") }, "\(shown)")
        XCTAssertFalse(cut.contains("end"), cut)
        XCTAssertTrue(cut.contains("…  Steep"), cut)
        XCTAssertLessThanOrEqual(stepsColumns(shown).first ?? 99, 42, "\(shown)")
    }

    /// Options before the command (taken as after it), a forgotten value, a negative operand, a
    /// mistyped command or option (with the one meant), an option given twice, an operand too
    /// many or too few: each says what was wrong (exit 64).
    func testArgumentsOutOfPlaceSayWhatToDo() throws {
        XCTAssertEqual(try json(try seam("--json", "ls")).arrayValue?.count, 0, "an option before the command is the command's")
        let v = try seam("-v", status: 64)
        XCTAssertTrue(v.contains("unknown option -v") && !v.contains("''"), v)
        XCTAssertTrue(try seam("timr", "ls", status: 64).contains("unknown command 'timr ls' (did you mean 'timer'?)"))
        XCTAssertTrue(try seam("timer", "sho", status: 64).contains("'sho' is not a command (did you mean 'show'?)"))
        XCTAssertTrue(try seam("ls", "--jsn", status: 64).contains("unknown option --jsn (did you mean --json?)"))
        let group = try seam("sync", "--help")
        XCTAssertTrue(group.hasPrefix("usage: seam sync COMMAND") && group.contains("rotate-key") && !group.contains("timer add"), group)
        XCTAssertTrue(try seam("timer", "add", "X", "--step", "a=1m", "--repeat", "2", "--repeat", "3", status: 64)
            .contains("--repeat is given twice; it takes one value"))
        XCTAssertEqual(try seam("--version"), "seam 0.1.0\n")
        XCTAssertTrue(try seam("--socket", "status", status: 64).contains("--socket needs a value"))
        XCTAssertTrue(try seam("status", "--socket=", status: 64).contains("--socket needs a value"))
        XCTAssertTrue(try seam("flash", "-5m", status: 64).contains("'-5m' is not a duration"))
        let foo = try seam("timer", "foo", status: 64)
        XCTAssertTrue(foo.contains("'foo'") && foo.contains("seam timer takes one of: add, ls, show, edit, rm"), foo)
        let extra = try seam("flash", "5m", "extra", status: 64)
        XCTAssertTrue(extra.contains("'extra' is one operand too many") && extra.contains("usage: seam flash DURATION"), extra)
        XCTAssertTrue(try seam("ls", "now", status: 64).contains("'now' is one operand too many: seam ls takes no operands"))
        XCTAssertTrue(try seam("group", "rename", "Kitchen", status: 64).contains("seam group rename takes 2 operands, 1 given"))
        XCTAssertEqual(try json(try seam("ls", "--json")).arrayValue?.count, 0, "nothing was started")
    }

    /// A name nobody could see in a list or type again: refused as a usage error.
    func testEmptyNamesAreRefused() throws {
        try seam("group", "add", "Kitchen")
        try seam("timer", "add", "Tea", "--step", "a=1m")
        let attempts = [["timer", "add", "", "--step", "a=1m"], ["timer", "add", "  ", "--step", "a=1m"], ["group", "add", ""],
                        ["group", "add", "\t"], ["timer", "edit", "Tea", "--name", ""], ["group", "rename", "Kitchen", " "],
                        ["flash", "1m", "--name", ""], ["timer", "add", "\u{200B}\u{200D}", "--step", "a=1m"]]
        for a in attempts {
            let said = try seam(a, status: 64)
            XCTAssertTrue(said.contains("name cannot be empty"), said)
        }
        XCTAssertEqual((try json(try seam("timer", "ls", "--json")).arrayValue ?? []).compactMap { $0["name"]?.stringValue }, ["Tea"])
        XCTAssertEqual((try json(try seam("group", "ls", "--json")).arrayValue ?? []).compactMap { $0["name"]?.stringValue }, ["Kitchen"])
        XCTAssertEqual(try json(try seam("ls", "--json")).arrayValue?.count, 1, "no flash session")
    }
}
