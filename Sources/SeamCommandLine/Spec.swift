/// The pieces a command is declared from, once: its options and operands, with the value names,
/// help and completions that parsing, `--help`, the shell completions and the man page all read.

/// How a shell completes an option's value or an operand.
public enum Completion: Sendable, Equatable {
    case none
    case file
    case directory
    /// One of a fixed list.
    case words([String])
    /// The `"name"` values that `TOOL WORDS… --json` prints: asked of the running broker as the
    /// person types (`.names(["timer", "ls"])` offers the timers); nothing when none answers.
    case names([String])
}

/// An option: a flag (`--json`) or one that takes a value (`--step LABEL=DURATION`).
public struct Option: Sendable, Equatable {
    /// Without its dashes.
    public var name: String
    /// What the value is called in usage lines (`N`, `PATH`); nil for a flag.
    public var valueName: String?
    /// One line: what it does, and its default.
    public var help: String
    /// Given once per value (`--step a=1m --step b=2m`).
    public var repeatable: Bool
    /// Shown without brackets in the usage line; the command checks it (in its own words).
    public var required: Bool
    public var completion: Completion
    /// Options that make no sense beside this one (`--group` and `--no-group`); shells offer one.
    public var excludes: [String]

    public static func flag(_ name: String, _ help: String, excludes: [String] = []) -> Option {
        Option(name: name, valueName: nil, help: help, repeatable: false, required: false, completion: .none, excludes: excludes)
    }

    public static func value(_ name: String, _ valueName: String, _ help: String, repeatable: Bool = false, required: Bool = false,
                             complete completion: Completion = .none, excludes: [String] = []) -> Option {
        Option(name: name, valueName: valueName, help: help, repeatable: repeatable, required: required, completion: completion,
               excludes: excludes)
    }

    public var isFlag: Bool { valueName == nil }

    /// `--step LABEL=DURATION …` as a usage line shows it (brackets when optional).
    public var usage: String {
        var text = "--" + name + (valueName.map { " " + $0 } ?? "") + (repeatable ? " …" : "")
        if !required { text = "[" + text + "]" }
        return text
    }

    /// `--step LABEL=DURATION` as an option list shows it.
    public var label: String { "--" + name + (valueName.map { " " + $0 } ?? "") }
}

/// An operand: a word after the command that is not an option (`seam start TIMER`).
public struct Operand: Sendable, Equatable {
    public var name: String
    public var help: String
    public var optional: Bool
    /// Any number from here on (`NAME …`).
    public var repeats: Bool
    public var completion: Completion

    public init(_ name: String, _ help: String, optional: Bool = false, repeats: Bool = false, complete completion: Completion = .none) {
        self.name = name
        self.help = help
        self.optional = optional
        self.repeats = repeats
        self.completion = completion
    }

    public var usage: String {
        let text = name + (repeats ? " …" : "")
        return optional ? "[" + text + "]" : text
    }
}

/// The help option every command takes.
let helpOption = Option.flag("help", "show this help")

/// A tool's man page beyond what its commands say: the paragraphs of DESCRIPTION, how the
/// commands fall into sections, and the sections after OPTIONS (ENVIRONMENT, FILES, EXIT
/// STATUS, EXAMPLES, SEE ALSO).
///
/// Prose is plain text with two marks: `` `seam ls` `` is set in bold, `*PATH*` in italics; an
/// empty line starts a new paragraph. `--help` shows the same text without the marks.
public struct Manual: Sendable {
    public enum Block: Sendable {
        case paragraph(String)
        /// A term and what it means (an environment variable, a file).
        case item(String, String)
        /// Lines shown as typed.
        case example(String)
    }

    public struct Section: Sendable {
        public var title: String
        public var blocks: [Block]
        public init(_ title: String, _ blocks: [Block]) {
            self.title = title
            self.blocks = blocks
        }
    }

    /// The NAME line after the dash.
    public var headline: String
    /// The date and source in the page's header (fixed, so that the page is reproducible).
    public var date: String
    public var description: [Block]
    /// Titles of COMMANDS' subsections, each with the first words of the commands it holds, in
    /// the order given (`("Sync", ["sync"])`); commands no subsection names come last.
    public var commandSections: [(title: String, firstWords: [String])]
    public var sections: [Section]

    public init(headline: String, date: String, description: [Block] = [], commandSections: [(title: String, firstWords: [String])] = [],
                sections: [Section] = []) {
        self.headline = headline
        self.date = date
        self.description = description
        self.commandSections = commandSections
        self.sections = sections
    }
}

extension Manual {
    enum Style { case plain, bold, italic }

    /// `text` cut into runs of one style: `` `…` `` bold, `*…*` italic (a `*` opens when a
    /// non-space follows it and a `*` after a non-space closes it later in the text; any other
    /// `*` or an unclosed mark is itself).
    static func spans(_ text: String) -> [(text: String, style: Style)] {
        let chars = Array(text)
        var out: [(text: String, style: Style)] = []
        var plain = ""
        var i = 0
        func close(_ mark: Character, from start: Int) -> Int? {
            var j = start
            while j < chars.count {
                if chars[j] == mark, mark == "`" || (j > start && chars[j - 1] != " ") { return j }
                j += 1
            }
            return nil
        }
        while i < chars.count {
            let c = chars[i]
            let opens = (c == "`" || c == "*") && i + 1 < chars.count && chars[i + 1] != " " && chars[i + 1] != c
            if opens, let end = close(c, from: i + 1) {
                if !plain.isEmpty { out.append((plain, .plain)); plain = "" }
                out.append((String(chars[(i + 1)..<end]), c == "`" ? .bold : .italic))
                i = end + 1
            } else {
                plain.append(c)
                i += 1
            }
        }
        if !plain.isEmpty { out.append((plain, .plain)) }
        return out
    }
}

extension String {
    /// Prose without its marks, as `--help` shows it.
    var withoutMarks: String { Manual.spans(self).map(\.text).joined() }
}
