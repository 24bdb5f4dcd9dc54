/// One command of a tool: the words that name it (`timer add`), a one-line summary, its operands
/// and options, the prose its help and man page show, and what it does. A tool of one command
/// (`seamd`) has a command of no words.
public struct Command: Sendable {
    public typealias Run = @Sendable (_ operands: [String], _ arguments: Arguments) async throws -> Void

    public var words: [String]
    public var summary: String
    public var operands: [Operand]
    public var options: [Option]
    /// Paragraphs after the summary, in `--help` and the man page (prose marks: see `Manual`).
    public var discussion: String
    public var run: Run

    /// `run` may be left out by a tool of one command that does its work after `arguments(_:)`.
    public init(_ words: String, _ summary: String, operands: [Operand] = [], options: [Option] = [], discussion: String = "",
                run: @escaping Run = { _, _ in }) {
        self.words = words.split(separator: " ").map(String.init)
        self.summary = summary
        self.operands = operands
        self.options = options
        self.discussion = discussion
        self.run = run
    }

    public var name: String { words.joined(separator: " ") }

    /// How many operands it takes: the required ones, up to all (no bound when the last repeats).
    public var operandRange: ClosedRange<Int> {
        let required = operands.filter { !$0.optional }.count
        return required...(operands.last?.repeats == true ? Int.max : operands.count)
    }

    /// What follows the command's words in its usage line: operands, then options.
    public var usage: String { (operands.map(\.usage) + options.map(\.usage)).joined(separator: " ") }

    public func returning(discussion: String) -> Command {
        var c = self
        c.discussion = discussion
        return c
    }
}

/// A tool's commands, declared once: finds the command the first words name, parses the rest,
/// writes help (`--help` on the tool and on every command), suggests what a mistyped command or
/// option meant, generates the shell completions and the man page (`--generate bash|zsh|man`,
/// not listed), and turns errors into one line on stderr with a non-zero exit (64 for usage
/// errors).
public struct CommandSet: Sendable {
    public let tool: String
    /// What the tool is, for `--help` and the man page's DESCRIPTION (prose marks: see `Manual`).
    public let about: String
    public let commands: [Command]
    /// Options every command takes (`--socket`, say), before or after the command.
    public let commonOptions: [Option]

    /// What `--version` prints after the tool's name, when set.
    public var version: String?
    public var manual: Manual?
    /// What the first word of a group of commands (`timer`) is about, for completions.
    public var groupSummaries: [String: String] = [:]

    /// How a command's error is worded on stderr: `verbose` when the command was given
    /// `--verbose` or `--json` (a tool's errors may name their internals then, as scripts want).
    public var describeError: @Sendable (_ error: any Error, _ verbose: Bool) -> String = { error, _ in "\(error)" }

    public init(tool: String, about: String, commonOptions: [Option] = [], commands: [Command]) {
        self.tool = tool
        self.about = about
        self.commonOptions = commonOptions
        self.commands = commands
    }

    /// A tool that is one command: its operands and options follow the tool's name.
    public init(tool: String, about: String, root: Command) {
        self.init(tool: tool, about: about, commands: [root])
    }

    /// The command a tool of one command is.
    var root: Command? { commands.count == 1 && commands[0].words.isEmpty ? commands[0] : nil }

    /// The command named by the longest run of leading words, and the words it used.
    public func find(_ words: [String]) -> Command? {
        commands.filter { c in c.words.count <= words.count && Array(words.prefix(c.words.count)) == c.words }
            .max { $0.words.count < $1.words.count }
    }

    /// Every option `command` takes, its own and the common ones, and help.
    func allOptions(_ command: Command) -> [Option] { command.options + commonOptions + [helpOption] }

    /// Whether any command's option `name` takes a value (to read options before the command).
    func takesValue(_ name: String) -> Bool {
        (commonOptions + commands.flatMap(\.options)).contains { $0.name == name && !$0.isFlag }
    }

    /// Whether the tool answers `--version` itself (a tool with an option of that name does not).
    var answersVersion: Bool { version != nil && !commands.flatMap(\.options).contains { $0.name == "version" } }

    /// Parses `arguments` for `command`, checking its operands.
    public func parse(_ arguments: [String], for command: Command) throws(Arguments.UsageError) -> Arguments {
        let options = allOptions(command)
        let parsed = try Arguments(arguments, options: Set(options.filter { !$0.isFlag }.map(\.name)),
                                   flags: Set(options.filter(\.isFlag).map(\.name)),
                                   repeatable: Set(options.filter(\.repeatable).map(\.name)))
        if !parsed.wantsHelp, let problem = operandProblem(command, parsed.positional) { throw problem }
        return parsed
    }

    /// The command `arguments` name and the arguments it is given: its operands and options, with
    /// the options written before its words (`seam --socket S status`) moved behind them.
    func resolve(_ arguments: [String]) -> (command: Command?, words: [String], rest: [String]) {
        if let root { return (root, [], arguments) }
        var i = 0
        var leading: [String] = []
        while i < arguments.count, arguments[i].hasPrefix("-"), arguments[i] != "--", !Arguments.isNegativeNumber(arguments[i]) {
            let argument = arguments[i]
            leading.append(argument)
            i += 1
            if let name = longName(argument), !argument.contains("="), takesValue(name), i < arguments.count {
                leading.append(arguments[i])
                i += 1
            }
        }
        let words = Array(arguments[i...].prefix { !$0.hasPrefix("-") })
        guard let command = find(words) else { return (nil, words, leading) }
        var rest = Array(arguments[i...].dropFirst(command.words.count))
        // Before a `--`, which ends the options: what follows it is operands only.
        rest.insert(contentsOf: leading, at: rest.firstIndex(of: "--") ?? rest.endIndex)
        return (command, words, rest)
    }

    /// Runs the command `arguments` name; never returns.
    public func main(_ given: [String]) async -> Never {
        if given.first == "--generate" { generate(Array(given.dropFirst())) }
        if let problem = commonValueProblem(given) { Terminal.fail(tool, problem, status: Terminal.usageError) }
        if answersVersion, given.prefix(while: { $0 != "--" }).contains("--version") {
            print("\(tool) \(version ?? "")")
            Terminal.exit(0)
        }
        let (found, words, rest) = resolve(given)
        guard let command = found else { noCommand(given, words: words, leading: rest) }
        var verbose = false
        do {
            let parsed = try parse(rest, for: command)
            verbose = parsed.flag("verbose") || parsed.flag("json")
            if parsed.wantsHelp {
                print(help(for: command))
                Terminal.exit(0)
            }
            try await command.run(parsed.positional, parsed)
            Terminal.flushOutput()
            Terminal.exit(0)
        } catch let e as Arguments.UsageError {
            let named = command.words.isEmpty ? tool : "\(tool) \(command.name)"
            let hint = e.message.contains("--help") || e.message.contains("usage:") ? "" : "; \(named) --help lists its options"
            Terminal.fail(tool, e.message + hint, status: Terminal.usageError)
        } catch {
            Terminal.flushOutput()
            Terminal.fail(tool, describeError(error, verbose))
        }
    }

    /// For a tool of one command that does its work synchronously after parsing: the arguments
    /// `given` hold, or the process ended here — with the help, the version, a generated file,
    /// or a usage error (exit 64).
    public func arguments(_ given: [String]) -> Arguments {
        guard let root else { preconditionFailure("arguments(_:) is for a tool of one command") }
        if given.first == "--generate" { generate(Array(given.dropFirst())) }
        if answersVersion, given.prefix(while: { $0 != "--" }).contains("--version") {
            print("\(tool) \(version ?? "")")
            Terminal.exit(0)
        }
        do {
            let parsed = try parse(given, for: root)
            if parsed.wantsHelp {
                print(help(for: root))
                Terminal.exit(0)
            }
            return parsed
        } catch {
            Terminal.fail(tool, error.message + (error.message.contains("usage:") ? "" : "; \(tool) --help lists its options"),
                          status: Terminal.usageError)
        }
    }

    /// `--generate bash|zsh|man`: what the build writes into completions/ and man/.
    func generate(_ what: [String]) -> Never {
        switch what {
        case ["bash"]: print(BashCompletion(self).script, terminator: "")
        case ["zsh"]: print(ZshCompletion(self).script, terminator: "")
        case ["man"]: print(ManPage(self).roff, terminator: "")
        default: Terminal.fail(tool, "--generate takes bash, zsh or man", status: Terminal.usageError)
        }
        Terminal.exit(0)
    }

    /// The help, or what is wrong when `arguments` name no command; never returns.
    func noCommand(_ arguments: [String], words: [String], leading: [String]) -> Never {
        if arguments.isEmpty {  // a usage error: the help goes where errors go
            Terminal.error(help)
            Terminal.exit(Terminal.usageError)
        }
        if arguments.contains("--help") || arguments.contains("-h") || arguments == ["help"] {
            // `seam sync --help`: the group's commands; `seam --help`: them all.
            let group = commands.filter { !words.isEmpty && $0.words.count > words.count && Array($0.words.prefix(words.count)) == words }
            print(group.isEmpty ? help : help(forGroup: words, group))
            Terminal.exit(0)
        }
        if words.isEmpty {
            let first = leading.first ?? arguments[0]
            if let name = longName(first), (commonOptions + commands.flatMap(\.options)).contains(where: { $0.name == name }) {
                Terminal.fail(tool, "\(Terminal.printable(first)) needs a command to go with; \(tool) --help lists them",
                              status: Terminal.usageError)
            }
            let known = (commonOptions + commands.flatMap(\.options)).map { "--" + $0.name } + ["--help", "--version"]
            Terminal.fail(tool, "unknown option \(Terminal.printable(first))\(Suggestions.didYouMean(first, among: known)); "
                          + "\(tool) --help lists the commands, \(tool) COMMAND --help a command's options", status: Terminal.usageError)
        }
        // The longest run of leading words that starts a group (`seam timer`, `seam timer foo`): what may follow it.
        for n in stride(from: words.count, to: 0, by: -1) {
            let group = Array(words.prefix(n))
            let following = commands.filter { $0.words.count > n && Array($0.words.prefix(n)) == group }
            guard !following.isEmpty else { continue }
            let name = "\(tool) \(group.joined(separator: " "))"
            let next = following.map { $0.words[n] }
            let unknown = n < words.count
                ? "'\(Terminal.printable(words[n]))' is not a command\(Suggestions.didYouMean(words[n], among: next)); " : ""
            Terminal.fail(tool, "\(unknown)\(name) takes one of: " + following.map { $0.words[n...].joined(separator: " ") }.joined(separator: ", ")
                          + "; \(tool) --help says what each does", status: Terminal.usageError)
        }
        let firsts = commands.compactMap(\.words.first)
        Terminal.fail(tool, "unknown command '\(Terminal.printable(words.joined(separator: " ")))'"
                      + "\(Suggestions.didYouMean(words[0], among: firsts)); \(tool) --help lists them", status: Terminal.usageError)
    }

    /// `socket` for `--socket` and `--socket=PATH`; nil for what is not a long option.
    func longName(_ argument: String) -> String? {
        guard argument.hasPrefix("--"), argument.count > 2 else { return nil }
        return String(argument.dropFirst(2).prefix { $0 != "=" })
    }

    /// A common option's value that is a missing one in disguise: empty (`--socket=` from an
    /// unset variable), or a command's first word (`seam --socket status`, the path forgotten).
    func commonValueProblem(_ arguments: [String]) -> String? {
        var i = 0
        while i < arguments.count, arguments[i] != "--" {
            let argument = arguments[i]
            i += 1
            guard let name = longName(argument), commonOptions.contains(where: { $0.name == name && !$0.isFlag }) else { continue }
            let value: String
            if let eq = argument.firstIndex(of: "=") {
                value = String(argument[argument.index(after: eq)...])
            } else if i < arguments.count {
                value = arguments[i]
                i += 1
            } else {
                continue  // no value at all: the parser says so
            }
            if value.isEmpty { return "--\(name) needs a value, not an empty one" }
            if commands.contains(where: { $0.words.first == value }) {
                return "--\(name) needs a value before the command '\(value)': \(tool) --\(name) VALUE \(value) …"
            }
        }
        return nil
    }

    /// What is wrong with the number of `operands` `command` was given, if anything: which are
    /// one too many, or how many it needs, and its usage.
    func operandProblem(_ command: Command, _ operands: [String]) -> Arguments.UsageError? {
        let range = command.operandRange
        guard !range.contains(operands.count) else { return nil }
        let usage = "usage: " + usageLine(command)
        let named = command.words.isEmpty ? tool : "\(tool) \(command.name)"
        let takes = range.upperBound == 0 ? "no operands"
            : range.lowerBound == range.upperBound ? "\(range.lowerBound) operand\(range.lowerBound == 1 ? "" : "s")"
            : range.upperBound == Int.max ? "at least \(range.lowerBound) operand\(range.lowerBound == 1 ? "" : "s")"
            : "\(range.lowerBound) to \(range.upperBound) operands"
        if operands.count > range.upperBound {
            let extra = operands[range.upperBound...].map { "'\(Terminal.printable($0))'" }
            let tooMany = extra.count == 1 ? "is one operand too many" : "are \(extra.count) operands too many"
            return Arguments.UsageError("\(extra.joined(separator: ", ")) \(tooMany): \(named) takes \(takes); \(usage)")
        }
        return Arguments.UsageError("\(named) takes \(takes), \(operands.count) given; \(usage)")
    }

    /// `seam timer add NAME --step LABEL=DURATION … [--repeat N] …`.
    public func usageLine(_ command: Command) -> String {
        ([tool] + command.words + (command.usage.isEmpty ? [] : [command.usage])).joined(separator: " ")
    }
}
