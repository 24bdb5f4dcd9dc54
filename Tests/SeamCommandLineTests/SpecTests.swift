import Foundation
@testable import SeamCommandLine
import SeamTestSupport
import XCTest

/// The command spec: parsing from it, suggestions, and the completions and man page it generates,
/// run in real bash, zsh and groff.
final class SpecTests: XCTestCase {
    /// A small tool shaped like seam: a group of two-word commands, a one-word command with an
    /// operand completed from a list, repeatable and excluding options, a common option.
    static let tool: CommandSet = {
        var set = CommandSet(
            tool: "demo",
            about: "A demonstration of the spec: `demo pot add` makes a *POT*.",
            commonOptions: [.value("socket", "PATH", "the socket", complete: .file), .flag("verbose", "say more")],
            commands: [
                Command("pot add", "add a pot", operands: [Operand("NAME", "its name")],
                        options: [.value("step", "LABEL=DURATION", "a step", repeatable: true, required: true),
                                  .value("size", "N", "how big (1 to 9)"), .flag("json", "print JSON")],
                        discussion: "Adds a pot.\n\nA second paragraph, with `--step` in bold and\n.a line that starts with a dot."),
                Command("pot ls", "the pots", options: [.flag("json", "print JSON")]),
                Command("brew", "brew from a pot", operands: [Operand("KIND", "what to brew", complete: .words(["tea", "coffee"]))],
                        options: [.value("dir", "DIR", "where", complete: .directory),
                                  .value("when", "now|later", "when to brew", complete: .words(["now", "later"])),
                                  .flag("cold", "cold brew", excludes: ["hot"]), .flag("hot", "hot brew", excludes: ["cold"])]),
            ])
        set.version = "1.0"
        set.manual = Manual(headline: "brews from pots", date: "2026-12-06",
                            commandSections: [("Pots", ["pot"])],
                            sections: [.init("Environment", [.item("DEMO_SOCKET", "the socket when *--socket* is not given")]),
                                       .init("Examples", [.example("demo pot add Green --step steep=3m\n.demo brew tea")])])
        return set
    }()

    func testOptionsBeforeOrAfterTheCommandAndTheEndOfOptions() throws {
        let (command, _, rest) = Self.tool.resolve(["--socket", "/s", "--json", "pot", "add", "--step", "a=1", "--", "--size"])
        XCTAssertEqual(command?.name, "pot add")
        let parsed = try Self.tool.parse(rest, for: try XCTUnwrap(command))
        XCTAssertEqual(parsed.value("socket"), "/s")
        XCTAssertTrue(parsed.flag("json"))
        XCTAssertEqual(parsed.positional, ["--size"], "after --, everything is an operand")
        XCTAssertEqual(parsed.values("step"), ["a=1"])
    }

    func testRepeatsOnlyWhereDeclaredAndOperandCounts() throws {
        let add = try XCTUnwrap(Self.tool.find(["pot", "add"]))
        XCTAssertEqual(try Self.tool.parse(["x", "--step", "a=1", "--step=b=2"], for: add).values("step"), ["a=1", "b=2"])
        XCTAssertThrowsError(try Self.tool.parse(["x", "--size", "1", "--size", "2"], for: add)) {
            XCTAssertEqual("\($0)", "--size is given twice; it takes one value")
        }
        XCTAssertThrowsError(try Self.tool.parse(["x", "y"], for: add)) {
            XCTAssertTrue("\($0)".contains("'y' is one operand too many: demo pot add takes 1 operand; usage: demo pot add NAME"), "\($0)")
        }
        XCTAssertThrowsError(try Self.tool.parse([], for: add)) { XCTAssertTrue("\($0)".contains("takes 1 operand, 0 given"), "\($0)") }
        XCTAssertEqual(add.usage, "NAME --step LABEL=DURATION … [--size N] [--json]")
    }

    func testSuggestionsForAMistypedWord() {
        XCTAssertEqual(Suggestions.didYouMean("--stpe", among: ["--step", "--size"]), " (did you mean --step?)")
        XCTAssertEqual(Suggestions.didYouMean("brw", among: ["brew", "pot"]), " (did you mean 'brew'?)")
        XCTAssertEqual(Suggestions.didYouMean("--zzzzzz", among: ["--step", "--size"]), "")
        XCTAssertEqual(Suggestions.didYouMean("--sise=3", among: ["--step", "--size"]), " (did you mean --size?)")
        XCTAssertEqual(Suggestions.distance("ab", "ba"), 1, "a swap is one edit")
        XCTAssertThrowsError(try Arguments(["--jsno"], flags: ["json"])) { XCTAssertEqual("\($0)", "unknown option --jsno (did you mean --json?)") }
    }

    func testHelpComesFromTheSpec() throws {
        let help = Self.tool.help(for: try XCTUnwrap(Self.tool.find(["brew"])))
        XCTAssertTrue(help.hasPrefix("usage: demo brew KIND [--dir DIR] [--when now|later] [--cold] [--hot]\n"), help)
        XCTAssertTrue(help.contains("  --when now|later  when to brew"), help)
        XCTAssertTrue(help.contains("  -h, --help"), help)
        XCTAssertTrue(Self.tool.help.contains("A demonstration of the spec: demo pot add makes a POT."), "marks dropped: \(Self.tool.help)")
        XCTAssertEqual(Manual.spans("a `b` *c* 2 * 3 *x").map(\.text), ["a ", "b", " ", "c", " 2 * 3 *x"])
    }

    /// The man page renders in groff without one warning, with every command, option and
    /// section in it, and a prose line that starts with a dot kept as text.
    func testTheManPageRendersWithoutAWarning() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/bin/groff"), "groff is not installed")
        let roff = ManPage(Self.tool).roff
        let page = try Self.temporaryFile("demo.1", roff)
        let check = try Self.run("/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-z", page], environment: ["LC_ALL": "C.UTF-8"])
        XCTAssertEqual(check.output + check.error, "", roff)
        let text = try Self.run("/usr/bin/groff", ["-man", "-Tascii", "-P-cbou", page]).output
        for wanted in ["demo pot add NAME --step LABEL=DURATION ... [--size N] [--json]", "Pots", "ENVIRONMENT", "DEMO_SOCKET",
                       "EXAMPLES", ".demo brew tea", "and .a line that starts", "--cold", "Cold brew."] {
            XCTAssertTrue(text.contains(wanted), "'\(wanted)' is not in:\n\(text)")
        }
    }

    /// The bash completion, sourced in a bash of its own with a line to complete: commands,
    /// second words, options (the common ones too), values from a list, and an option before
    /// the command.
    func testTheBashCompletionCompletes() throws {
        let script = try Self.temporaryFile("demo.bash", BashCompletion(Self.tool).script)
        func offered(_ line: String) throws -> [String] {
            let run = try ShellCompletion.bash(script: script, function: "_demo", line: line)
            XCTAssertEqual(run.errors, "", line)
            return run.offered
        }
        XCTAssertEqual(try offered("demo "), ["pot", "brew"])
        XCTAssertEqual(try offered("demo pot "), ["add", "ls"])
        XCTAssertEqual(try offered("demo pot add x --s"), ["--step", "--size", "--socket"])
        XCTAssertEqual(try offered("demo brew "), ["tea", "coffee"])
        XCTAssertEqual(try offered("demo brew --when l"), ["later"])
        XCTAssertEqual(try offered("demo brew --when=n"), ["now"])
        XCTAssertEqual(try offered("demo --socket /tmp/s brew c"), ["coffee"], "an option and its value before the command")
        XCTAssertEqual(try offered("demo brew tea -- --"), [], "after --, no options")
    }

    /// The zsh completion loads through compinit, and `_demo` offers the commands and second
    /// words (with `_describe` standing in, as the completion system runs only while a line is
    /// edited).
    func testTheZshCompletionLoadsAndOffersTheCommands() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/bin/zsh"), "zsh is not installed")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("zsh-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try ZshCompletion(Self.tool).script.write(to: directory.appendingPathComponent("_demo"), atomically: true, encoding: .utf8)
        let run = try Self.run("/usr/bin/zsh", ["-f", "-c", """
            fpath=("$1" $fpath)
            autoload -Uz compinit && compinit -u -D || exit 1
            [[ $_comps[demo] == _demo ]] || { print "not registered"; exit 1 }
            autoload +X _demo || exit 1
            _arguments() { state=$stub_state; return 0 }
            _describe() { local -a names; names=(${${(P)${@[-1]}}%%:*}); print -rl -- ${names/#/offered: $prefix} }
            service=demo
            stub_state=command prefix="" words=(demo "") CURRENT=2
            _demo
            stub_state=arguments prefix="pot " words=(pot "") CURRENT=2
            _demo
            """, "zsh-check", directory.path])
        XCTAssertEqual(run.error, "")
        XCTAssertEqual(run.output, "offered: pot\noffered: brew\noffered: pot add\noffered: pot ls\n")
        let parse = try Self.run("/usr/bin/zsh", ["-n", directory.appendingPathComponent("_demo").path])
        XCTAssertEqual(parse.status, 0, parse.error)
    }

    // MARK: - helpers

    static func temporaryFile(_ name: String, _ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString)-\(name)")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    static func run(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> (status: Int32, output: String, error: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }
}
