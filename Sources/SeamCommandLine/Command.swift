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
        let arguments = commonOptionsLast(given)
        let words = arguments.prefix { !$0.hasPrefix("-") }
        guard let command = find(Array(words)) else {
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
            // The first word of a group (`seam timer`): what may follow it.
            let following = commands.filter { Array($0.words.prefix(words.count)) == Array(words) && $0.words.count > words.count }
            if !words.isEmpty, !following.isEmpty {
                Terminal.fail(tool, "\(tool) \(words.joined(separator: " ")) takes one of: "
                              + following.map { $0.words[words.count...].joined(separator: " ") }.joined(separator: ", ")
                              + "; \(tool) --help says what each does", status: Terminal.usageError)
            }
            Terminal.fail(tool, "unknown command '\(words.joined(separator: " "))'; \(tool) --help lists them", status: Terminal.usageError)
        }
        do {
            let parsed = try Arguments(Array(arguments.dropFirst(command.words.count)), options: command.options.union(commonOptions),
                                       flags: command.flags.union(commonFlags))
            if parsed.wantsHelp {
                print(help(for: command))
                Terminal.exit(0)
            }
            guard command.operands.contains(parsed.positional.count) else {
                throw Arguments.UsageError("usage: \(tool) \(command.name) \(command.usage)")
            }
            try await command.run(parsed.positional, parsed)
            Terminal.flushOutput()
            Terminal.exit(0)
        } catch let e as Arguments.UsageError {
            let hint = e.message.contains("--help") || e.message.hasPrefix("usage:") ? "" : "; \(tool) \(command.name) --help lists its options"
            Terminal.fail(tool, e.message + hint, status: Terminal.usageError)
        } catch {
            Terminal.flushOutput()
            Terminal.fail(tool, "\(error)")
        }
    }
}

extension String {
    func padding(to width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
