/// One command of a tool: the words that name it (`timer add`), what follows them, a one-line
/// summary, the options and flags it takes, and what it does with its operands.
public struct Command: Sendable {
    public typealias Run = @Sendable (_ operands: [String], _ arguments: Arguments) async throws -> Void

    public var words: [String]
    public var usage: String
    public var summary: String
    public var options: Set<String>
    public var flags: Set<String>
    /// Operands the command takes: a range (`1...1` for exactly one).
    public var operands: ClosedRange<Int>
    public var run: Run

    public init(_ words: String, _ usage: String = "", _ summary: String, operands: ClosedRange<Int> = 0...0,
                options: Set<String> = [], flags: Set<String> = [], run: @escaping Run) {
        self.words = words.split(separator: " ").map(String.init)
        self.usage = usage
        self.summary = summary
        self.operands = operands
        self.options = options
        self.flags = flags
        self.run = run
    }

    public var name: String { words.joined(separator: " ") }
}

/// A tool's commands: finds the command the first words name, parses the rest, writes help
/// (`--help` on the tool and on every command), and turns errors into one line on stderr with a
/// non-zero exit (64 for usage errors).
public struct CommandSet: Sendable {
    public let tool: String
    public let about: String
    public let commands: [Command]
    /// Options and flags every command takes (`--socket`, say).
    public let commonOptions: Set<String>
    public let commonFlags: Set<String>

    /// What `--version` prints after the tool's name, when set.
    public var version: String?

    /// How a command's error is worded on stderr: `verbose` when the command was given
    /// `--verbose` or `--json` (a tool's errors may name their internals then, as scripts want).
    public var describeError: @Sendable (_ error: any Error, _ verbose: Bool) -> String = { error, _ in "\(error)" }

    public init(tool: String, about: String, commonOptions: Set<String> = [], commonFlags: Set<String> = [], commands: [Command]) {
        self.tool = tool
        self.about = about
        self.commonOptions = commonOptions
        self.commonFlags = commonFlags
        self.commands = commands
    }

    /// The command named by the longest run of leading words, and the words it used.
    public func find(_ words: [String]) -> Command? {
        commands.filter { c in c.words.count <= words.count && Array(words.prefix(c.words.count)) == c.words }
            .max { $0.words.count < $1.words.count }
    }

    public var help: String {
        let width = min(44, (commands.map { ($0.name + " " + $0.usage).count }.max() ?? 0) + 2)
        var lines = ["usage: \(tool) COMMAND [OPTIONS]", "", about, ""]
        for c in commands {
            let left = "  " + [c.name, c.usage].filter { !$0.isEmpty }.joined(separator: " ")
            lines.append(left.count + 2 <= width + 2 ? left.padding(to: width + 2) + c.summary : left + "\n" + String(repeating: " ", count: width + 2) + c.summary)
        }
        lines.append("")
        lines.append("\(tool) COMMAND --help says more about one command.")
        return lines.joined(separator: "\n")
    }

    public func help(for c: Command) -> String {
        var lines = ["usage: \(tool) \(c.name)\(c.usage.isEmpty ? "" : " " + c.usage)", "", c.summary]
        let options = c.options.union(commonOptions).sorted().map { "--\($0) VALUE" } + c.flags.union(commonFlags).sorted().map { "--\($0)" }
        if !options.isEmpty { lines += ["", "options: " + options.joined(separator: ", ")] }
        return lines.joined(separator: "\n")
    }

    /// Moves common options given before the command (`seam --socket S status`) behind it.
    func commonOptionsLast(_ arguments: [String]) -> [String] {
        var rest = arguments[...]
        var leading: [String] = []
        while let first = rest.first, first.hasPrefix("--") {
            let name = String(first.dropFirst(2).prefix { $0 != "=" })
            if commonOptions.contains(name) {
                leading.append(rest.removeFirst())
                if !first.contains("="), let value = rest.first {
                    leading.append(value)
                    rest.removeFirst()
                }
            } else if commonFlags.contains(name) {
                leading.append(rest.removeFirst())
            } else {
                break
            }
        }
        // Before a `--`, which ends the options: what follows it is operands only.
        if let end = rest.firstIndex(of: "--") { return Array(rest[..<end]) + leading + Array(rest[end...]) }
        return Array(rest) + leading
    }

    /// Runs the command `arguments` name; never returns.
    public func main(_ given: [String]) async -> Never {
        if let problem = commonValueProblem(given) { Terminal.fail(tool, problem, status: Terminal.usageError) }
        let arguments = commonOptionsLast(given)
        let words = Array(arguments.prefix { !$0.hasPrefix("-") })
        guard let command = find(words) else { noCommand(arguments, words: words) }
        var verbose = false
        do {
            let parsed = try Arguments(Array(arguments.dropFirst(command.words.count)), options: command.options.union(commonOptions),
                                       flags: command.flags.union(commonFlags))
            verbose = (commonFlags.contains("verbose") && parsed.flag("verbose")) || (command.flags.contains("json") && parsed.flag("json"))
            if parsed.wantsHelp {
                print(help(for: command))
                Terminal.exit(0)
            }
            if let problem = operandProblem(command, parsed.positional) { throw problem }
            try await command.run(parsed.positional, parsed)
            Terminal.flushOutput()
            Terminal.exit(0)
        } catch let e as Arguments.UsageError {
            let hint = e.message.contains("--help") || e.message.contains("usage:") ? "" : "; \(tool) \(command.name) --help lists its options"
            Terminal.fail(tool, e.message + hint, status: Terminal.usageError)
        } catch {
            Terminal.flushOutput()
            Terminal.fail(tool, describeError(error, verbose))
        }
    }

    /// The help, the version, or what is wrong when `arguments` name no command; never returns.
    func noCommand(_ arguments: [String], words: [String]) -> Never {
        if arguments.isEmpty {  // a usage error: the help goes where errors go
            Terminal.error(help)
            Terminal.exit(Terminal.usageError)
        }
        if arguments.contains("--help") || arguments.contains("-h") || arguments == ["help"] {
            print(help)
            Terminal.exit(0)
        }
        if arguments == ["--version"], let version {
            print("\(tool) \(version)")
            Terminal.exit(0)
        }
        if words.isEmpty { Terminal.fail(tool, optionsBeforeCommand(arguments), status: Terminal.usageError) }
        // The longest run of leading words that starts a group (`seam timer`, `seam timer foo`): what may follow it.
        for n in stride(from: words.count, to: 0, by: -1) {
            let group = Array(words.prefix(n))
            let following = commands.filter { $0.words.count > n && Array($0.words.prefix(n)) == group }
            guard !following.isEmpty else { continue }
            let name = "\(tool) \(group.joined(separator: " "))"
            let unknown = n < words.count ? "'\(Terminal.printable(words[n]))' is not a command; " : ""
            Terminal.fail(tool, "\(unknown)\(name) takes one of: " + following.map { $0.words[n...].joined(separator: " ") }.joined(separator: ", ")
                          + "; \(tool) --help says what each does", status: Terminal.usageError)
        }
        Terminal.fail(tool, "unknown command '\(Terminal.printable(words.joined(separator: " ")))'; \(tool) --help lists them",
                      status: Terminal.usageError)
    }

    /// What to say when `arguments` start with an option that is not a common one (`seam --json
    /// ls`, `seam -v`): options go after the command, and the line as it should be when it has one.
    func optionsBeforeCommand(_ arguments: [String]) -> String {
        let leading = Array(arguments.prefix { $0.hasPrefix("-") })
        let rest = Array(arguments.dropFirst(leading.count))
        let first = Terminal.printable(leading[0])
        if let name = commonName(leading[0]), commonOptions.contains(name) || commonFlags.contains(name) {
            return "\(first) needs a command to go with; \(tool) --help lists them"
        }
        guard let command = find(Array(rest.prefix { !$0.hasPrefix("-") })) else {
            return "unknown option \(first): options go after the command; \(tool) --help lists the commands, "
                + "\(tool) COMMAND --help a command's options"
        }
        let line = [tool] + command.words + rest.dropFirst(command.words.count) + leading
        return "options go after the command: " + line.map(Terminal.printable).joined(separator: " ")
    }

    /// `socket` for `--socket` and `--socket=PATH`; nil for what is not a long option.
    func commonName(_ argument: String) -> String? {
        guard argument.hasPrefix("--") else { return nil }
        return String(argument.dropFirst(2).prefix { $0 != "=" })
    }

    /// A common option's value that is a missing one in disguise: empty (`--socket=` from an
    /// unset variable), or a command's first word (`seam --socket status`, the path forgotten).
    func commonValueProblem(_ arguments: [String]) -> String? {
        var i = 0
        while i < arguments.count, arguments[i] != "--" {
            let argument = arguments[i]
            i += 1
            guard let name = commonName(argument), commonOptions.contains(name) else { continue }
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
        let range = command.operands
        guard !range.contains(operands.count) else { return nil }
        let usage = "usage: \(tool) \(command.name)" + (command.usage.isEmpty ? "" : " " + command.usage)
        let takes = range.upperBound == 0 ? "none"
            : range.lowerBound == range.upperBound ? "\(range.lowerBound) operand\(range.lowerBound == 1 ? "" : "s")"
            : "\(range.lowerBound) to \(range.upperBound) operands"
        if operands.count > range.upperBound {
            let extra = operands[range.upperBound...].map { "'\(Terminal.printable($0))'" }
            let tooMany = extra.count == 1 ? "is one operand too many" : "are \(extra.count) operands too many"
            return Arguments.UsageError("\(extra.joined(separator: ", ")) \(tooMany): \(tool) \(command.name) takes \(takes); \(usage)")
        }
        return Arguments.UsageError("\(tool) \(command.name) takes \(takes), \(operands.count) given; \(usage)")
    }
}

extension String {
    func padding(to width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
