/// `--help`, written from the spec: the tool's commands, or one command's usage, prose, operands
/// and options.
extension CommandSet {
    public var help: String {
        if let root { return help(for: root) }
        let width = min(44, (commands.map { ($0.name + " " + $0.usage).count }.max() ?? 0) + 2)
        var lines = ["usage: \(tool) COMMAND [OPTIONS]", "", about.withoutMarks, ""]
        for c in commands {
            let left = "  " + [c.name, c.usage].filter { !$0.isEmpty }.joined(separator: " ")
            lines.append(left.count <= width ? left.padding(to: width + 2) + c.summary
                         : left + "\n" + String(repeating: " ", count: width + 2) + c.summary)
        }
        if !commonOptions.isEmpty {
            lines += ["", "Every command takes:"] + Self.list(commonOptions.map { ($0.label, $0.help) })
        }
        lines += ["", "\(tool) COMMAND --help says more about one command."]
        return lines.joined(separator: "\n")
    }

    /// The commands that begin with `words` (`seam sync --help`).
    func help(forGroup words: [String], _ group: [Command]) -> String {
        let name = ([tool] + words).joined(separator: " ")
        var lines = ["usage: \(name) COMMAND [OPTIONS]", ""]
        if let summary = groupSummaries[words.joined(separator: " ")] { lines += [summary, ""] }
        lines += Self.list(group.map { ($0.words.dropFirst(words.count).joined(separator: " "), $0.summary) })
        lines += ["", "\(name) COMMAND --help says more about one."]
        return lines.joined(separator: "\n")
    }

    public func help(for c: Command) -> String {
        var lines = ["usage: " + usageLine(c), "", c.summary]
        if c.words.isEmpty { lines += ["", about.withoutMarks] }
        if !c.discussion.isEmpty { lines += ["", c.discussion.withoutMarks] }
        if !c.operands.isEmpty {
            lines += ["", "operands:"] + Self.list(c.operands.map { ($0.name + ($0.repeats ? " …" : ""), $0.help) })
        }
        var options = (c.options + commonOptions).map { ($0.label, $0.help + ($0.repeatable ? " (may be given more than once)" : "")) }
        if c.words.isEmpty, answersVersion { options.append(("--version", "print the version")) }
        options.append(("-h, --help", helpOption.help))
        lines += ["", "options:"] + Self.list(options)
        return lines.joined(separator: "\n")
    }

    /// Two columns: terms padded to the widest (up to 26 columns), longer ones on a line of their
    /// own; the text wrapped at 100 columns.
    static func list(_ items: [(String, String)]) -> [String] {
        let width = min(26, items.map(\.0.count).max() ?? 0)
        let indent = String(repeating: " ", count: width + 4)
        return items.map { term, text in
            let left = "  " + term
            let wrapped = wrap(text.withoutMarks, width: 100 - indent.count).joined(separator: "\n" + indent)
            return term.count <= width ? left.padding(to: width + 4) + wrapped : left + "\n" + indent + wrapped
        }
    }

    /// `text` in lines of at most `width` characters, broken at spaces (a longer word stays whole).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return lines
    }
}

extension String {
    func padding(to width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
