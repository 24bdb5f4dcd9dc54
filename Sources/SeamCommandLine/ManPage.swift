/// A tool's man page in roff (`man(7)`), written from its spec: NAME, SYNOPSIS, DESCRIPTION,
/// COMMANDS (a tool of many), OPTIONS, then the manual's own sections.
struct ManPage {
    let set: CommandSet
    init(_ set: CommandSet) { self.set = set }

    var roff: String {
        let manual = set.manual ?? Manual(headline: set.about.withoutMarks.split(separator: "\n").first.map(String.init) ?? "", date: "")
        var out = [
            #".\" \#(set.tool)(1), generated from its command spec by `\#(set.tool) --generate man` (scripts/generate-docs):"#,
            #".\" change the spec, not this file."#,
            ".TH \(set.tool.uppercased()) 1 \"\(manual.date)\" \"Seam \(set.version ?? "")\" \"User Commands\"",
            #".\" Paths and option names read badly when hyphenated or stretched."#,
            ".nh", ".ad l",
            ".SH NAME", Self.text("\(set.tool) - \(manual.headline)"),
            ".SH SYNOPSIS",
        ]
        if let root = set.root {
            out += synopsis(root)
            if set.answersVersion { out += [".br", ".B \(Self.text(set.tool)) \\-\\-version"] }
            out += [".br", ".B \(Self.text(set.tool)) \\-\\-help"]
        } else {
            out += [".B \(Self.text(set.tool))", ".I command", ".RI [ operands ]", ".RI [ options ]", ".br",
                    ".B \(Self.text(set.tool))", ".I command", ".B \\-\\-help", ".br", ".B \(Self.text(set.tool)) \\-\\-help"]
            if set.answersVersion { out += [".br", ".B \(Self.text(set.tool)) \\-\\-version"] }
        }
        out += [".SH DESCRIPTION"] + Self.blocks(Self.paragraphs(set.about)) + Self.blocks(manual.description, continued: true)
        if let root = set.root {
            if !root.discussion.isEmpty { out += Self.blocks(Self.paragraphs(root.discussion), continued: true) }
            if !root.operands.isEmpty { out += [".SH OPERANDS"] + root.operands.flatMap(Self.operand) }
            out += [".SH OPTIONS"] + (root.options + set.commonOptions).flatMap(Self.option)
        } else {
            out += [".SH COMMANDS"] + commands(manual)
            if !set.commonOptions.isEmpty {
                out += [".SH OPTIONS", "Every command takes these, before or after its words:"] + set.commonOptions.flatMap(Self.option)
            }
        }
        if set.answersVersion { out += [".TP", ".B \\-\\-version", "Prints the version."] }
        out += [".TP", ".BR \\-h \", \" \\-\\-help", "Prints the usage and exits."]
        for section in manual.sections { out += [".SH " + Self.text(section.title.uppercased())] + Self.blocks(section.blocks) }
        return out.joined(separator: "\n") + "\n"
    }

    /// COMMANDS: each subsection's commands, each with its usage, summary, prose and options.
    func commands(_ manual: Manual) -> [String] {
        var placed = Set<String>()
        var out: [String] = []
        var groups = manual.commandSections.map { section in
            (title: section.title, commands: set.commands.filter { section.firstWords.contains($0.words.first ?? "") })
        }
        for g in groups { g.commands.forEach { placed.insert($0.name) } }
        let rest = set.commands.filter { !placed.contains($0.name) }
        if !rest.isEmpty { groups.append((title: groups.isEmpty ? "" : "Other commands", commands: rest)) }
        for g in groups {
            if !g.title.isEmpty { out.append(".SS " + Self.text(g.title)) }
            for c in g.commands {
                out += [".TP"] + synopsis(c)
                out.append(Self.escapeLine(Self.inline(Self.sentence(c.summary))))
                for block in Self.paragraphs(c.discussion) { out += [".IP"] + Self.blocks([block], continued: true).dropFirst() }
                let items = c.operands.flatMap(Self.operand) + c.options.flatMap(Self.option)
                if !items.isEmpty { out += [".RS"] + items + [".RE"] }
            }
        }
        return out
    }

    /// `.B seam timer add` then the usage: operands in italics, options in bold, values in italics.
    func synopsis(_ c: Command) -> [String] {
        var line = "\\fB" + Self.text(([set.tool] + c.words).joined(separator: " ")) + "\\fR"
        for o in c.operands {
            let name = "\\fI" + Self.text(o.name) + "\\fR" + (o.repeats ? " \\&.\\|.\\|." : "")
            line += " " + (o.optional ? "[" + name + "]" : name)
        }
        for o in c.options {
            var text = "\\fB\\-\\-" + Self.text(o.name) + "\\fR" + (o.valueName.map { " \\fI" + Self.text($0) + "\\fR" } ?? "")
            if o.repeatable { text += " \\&.\\|.\\|." }
            line += " " + (o.required ? text : "[" + text + "]")
        }
        return [line]
    }

    static func option(_ o: Option) -> [String] {
        let term = "\\fB\\-\\-" + text(o.name) + "\\fR" + (o.valueName.map { " \\fI" + text($0) + "\\fR" } ?? "")
        return [".TP", term, escapeLine(inline(sentence(o.help) + (o.repeatable ? " May be given more than once." : "")))]
    }

    static func operand(_ o: Operand) -> [String] {
        [".TP", "\\fI" + text(o.name) + "\\fR" + (o.repeats ? " \\&.\\|.\\|." : ""), escapeLine(inline(sentence(o.help)))]
    }

    /// `define a timer` → `Define a timer.`; a first word that is not plain lowercase letters
    /// (`seam`, `postgresql://…`, `--json`) is left as it is.
    static func sentence(_ s: String) -> String {
        guard let first = s.first else { return s }
        let word = s.prefix { $0 != " " }
        let plain = word.allSatisfy { $0.isLetter && $0.isLowercase } && !word.hasPrefix("seam")
        let capital = plain ? first.uppercased() + s.dropFirst() : s
        return capital.hasSuffix(".") || capital.hasSuffix("…") ? capital : capital + "."
    }

    /// Prose split at its empty lines.
    static func paragraphs(_ prose: String) -> [Manual.Block] {
        var out: [Manual.Block] = []
        var current: [Substring] = []
        for line in prose.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.allSatisfy(\.isWhitespace) {
                if !current.isEmpty { out.append(.paragraph(current.joined(separator: "\n"))) }
                current = []
            } else {
                current.append(line)
            }
        }
        if !current.isEmpty { out.append(.paragraph(current.joined(separator: "\n"))) }
        return out
    }

    /// Blocks as roff; `continued` when they follow text already in the section (each paragraph
    /// then starts with `.PP`, as does each after the first anyway).
    static func blocks(_ blocks: [Manual.Block], continued: Bool = false) -> [String] {
        var out: [String] = []
        var first = !continued
        for block in blocks {
            switch block {
            case .paragraph(let prose):
                if !first { out.append(".PP") }
                out += lines(prose)
            case .item(let term, let prose):
                let marked = Manual.spans(term).contains { $0.style != .plain }
                out += [".TP", marked ? inline(term) : "\\fB" + text(term) + "\\fR"] + lines(prose)
            case .example(let code):
                if !first { out.append(".PP") }
                out += [".RS", ".nf"] + code.split(separator: "\n", omittingEmptySubsequences: false).map { escapeLine(text(String($0))) }
                    + [".fi", ".RE"]
            }
            first = false
        }
        return out
    }

    /// Prose lines as roff text lines (leading spaces dropped: in roff they break the line).
    static func lines(_ prose: String) -> [String] {
        prose.split(separator: "\n").map { escapeLine(inline(String($0.drop { $0 == " " }))) }
    }

    /// Marked prose as roff: bold and italic runs, everything escaped.
    static func inline(_ prose: String) -> String {
        Manual.spans(prose).map { span in
            switch span.style {
            case .plain: text(span.text)
            case .bold: "\\fB" + text(span.text) + "\\fR"
            case .italic: "\\fI" + text(span.text) + "\\fR"
            }
        }.joined()
    }

    /// Text safe in roff: backslashes and hyphens escaped, "…" as three dots, other non-ASCII
    /// characters by code point (`\[u00D7]`).
    static func text(_ s: String) -> String {
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\\": out += "\\e"
            case "-": out += "\\-"
            case "…": out += ".\\|.\\|."
            case "\t": out += " "
            default:
                if scalar.isASCII { out.unicodeScalars.append(scalar) } else { out += "\\[u" + hex(scalar.value) + "]" }
            }
        }
        return out
    }

    /// A line that would read as a request (a leading `.` or `'`) made text.
    static func escapeLine(_ line: String) -> String { line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : line }

    static func hex(_ v: UInt32) -> String {
        let digits = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
