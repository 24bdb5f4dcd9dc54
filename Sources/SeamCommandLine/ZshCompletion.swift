/// A zsh completion function written from a tool's spec: `_arguments` specifications for each
/// command's options and operands, and `_describe` for its command words.
struct ZshCompletion {
    let set: CommandSet
    let p: String

    init(_ set: CommandSet) {
        self.set = set
        p = set.completionPrefix
    }

    var script: String {
        var out = [
            "#compdef \(set.tool)",
            "# zsh completion for \(set.tool)(1), generated from its command spec by `\(set.tool) --generate zsh`",
            "# (scripts/generate-docs): change the spec, not this file.",
            "#",
            "# Install: copy this file into a directory on $fpath (say ~/.zsh/completions, with",
            "# `fpath=(~/.zsh/completions $fpath)` before `compinit` in ~/.zshrc).",
            "",
        ]
        let lists = namesLists
        if !lists.isEmpty {
            out += Self.jsonNames.replacing("@P@", with: p).replacing("@NAMES_AWK@", with: BashCompletion.namesAwk(indent: "    ")).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for words in lists {
                out += ["(( $+functions[\(namesFunction(words))] )) ||", "\(namesFunction(words))() {", "  local -a names expl",
                        "  names=(${(f)\"$(\(p)_json_names \(words.joined(separator: " ")))\"})",
                        "  _wanted values expl \(Self.single(words.first ?? "name")) compadd -a names", "}", ""]
            }
        }
        let common = set.commonOptions.map(spec) + ["'(- *)'{-h,--help}'[show the usage]'"]
        if let root = set.root {
            var specs = common + root.options.map(spec) + operandSpecs(root)
            if set.answersVersion { specs.append("'(- *)--version[print the version]'") }
            out += ["_arguments -s -S \\"] + specs.map { "  " + $0 + " \\" } + [""]
            if let last = out.indices.dropLast().last { out[last] = String(out[last].dropLast(2)) }
            return out.joined(separator: "\n")
        }
        out += ["# \(p)_command NAME: the operands and options of one command (after its words).",
                "(( $+functions[\(p)_command] )) ||", "\(p)_command() {", "  local -a common", "  common=("]
            + common.map { "    " + $0 } + ["  )", "  case $1 in"]
        for c in set.commands {
            let specs = c.options.map(spec) + operandSpecs(c)
            out.append("    \(Self.single(c.name)))")
            out.append("      _arguments -s -S $common" + specs.map { " \\\n        " + $0 }.joined() + " ;;")
        }
        out += ["    *)", "      _arguments -s -S $common ;;", "  esac", "}", ""]
        let firsts = set.firstWords, groups = set.groups
        out += ["(( $+functions[\(p)_main] )) ||", "\(p)_main() {", "  local curcontext=$curcontext state state_descr line ret=1",
                "  typeset -A opt_args", "  local -a commands subcommands", "  commands=("]
        for first in firsts {
            let summary = groups.contains(first)
                ? (set.groupSummaries[first] ?? set.commands.filter { $0.words.first == first }.map { $0.words[1] }.joined(separator: ", "))
                : set.commands.first { $0.words == [first] }?.summary ?? ""
            out.append("    " + Self.single(Self.describeEscaped(first) + ":" + summary.withoutMarks))
        }
        out += ["  )", "  _arguments -C \\"] + set.commonOptions.map { "    \(spec($0)) \\" }
        if set.answersVersion { out.append("    '(- *)--version[print the version]' \\") }
        out += ["    '(- *)'{-h,--help}'[list the commands]' \\", "    '1: :->command' \\", "    '*:: :->arguments' && ret=0",
                "  case $state in", "    command)", "      _describe -t commands \(Self.single(set.tool + " command")) commands && ret=0 ;;",
                "    arguments)", "      case $words[1] in"]
        if !groups.isEmpty {
            out += ["        \(groups.map(Self.single).joined(separator: " | ")))", "          if (( CURRENT == 2 )); then", "            case $words[1] in"]
            for g in groups {
                let subs = set.commands.filter { $0.words.count == 2 && $0.words[0] == g }
                    .map { Self.single(Self.describeEscaped($0.words[1]) + ":" + $0.summary.withoutMarks) }
                out.append("              \(Self.single(g))) subcommands=(\(subs.joined(separator: " "))) ;;")
            }
            out += ["            esac", "            _describe -t subcommands \"\(set.tool) $words[1] command\" subcommands && ret=0",
                    "          else",
                    "            # Drop the first word, so that _arguments takes the second for the command's name.",
                    "            local command=\"$words[1] $words[2]\"", "            shift words", "            (( CURRENT-- ))",
                    "            curcontext=\"${curcontext%:*:*}:\(set.tool)-${command// /-}:\"",
                    "            \(p)_command $command && ret=0", "          fi ;;"]
        }
        out += ["        *)", "          curcontext=\"${curcontext%:*:*}:\(set.tool)-$words[1]:\"", "          \(p)_command $words[1] && ret=0 ;;",
                "      esac ;;", "  esac", "  return ret", "}", "", "local \(p)_program=${words[1]}", "\(p)_main \"$@\"", ""]
        return out.joined(separator: "\n")
    }

    /// `'*--step=[a step]:LABEL=DURATION: '`: one `_arguments` specification.
    func spec(_ o: Option) -> String {
        let exclusion = o.excludes.isEmpty ? "" : "(" + o.excludes.map { "--" + $0 }.joined(separator: " ") + ")"
        let head = (o.repeatable ? "*" : "") + exclusion + "--" + o.name + (o.isFlag ? "" : "=")
        var text = head + "[" + Self.bracketEscaped(o.help.withoutMarks) + "]"
        if let value = o.valueName { text += ":" + Self.colonEscaped(value) + ":" + action(o.completion) }
        return Self.single(text)
    }

    func operandSpecs(_ c: Command) -> [String] {
        c.operands.enumerated().map { i, o in
            Self.single((o.repeats ? "*" : "\(i + 1)") + ":" + Self.colonEscaped(o.name.lowercased() + " (" + o.help.withoutMarks + ")")
                        + ":" + action(o.completion))
        }
    }

    func action(_ what: Completion) -> String {
        switch what {
        case .none: " "
        case .file: "_files"
        case .directory: "_directories"
        case .words(let words): "(" + words.map { Self.colonEscaped($0).replacing(" ", with: "\\ ") }.joined(separator: " ") + ")"
        case .names(let words): namesFunction(words)
        }
    }

    var namesLists: [[String]] {
        var lists: [[String]] = []
        let all = (set.commonOptions + set.commands.flatMap(\.options)).map(\.completion) + set.commands.flatMap(\.operands).map(\.completion)
        for case .names(let words) in all where !lists.contains(words) { lists.append(words) }
        return lists
    }

    func namesFunction(_ words: [String]) -> String { "\(p)_names_" + words.joined(separator: "_").replacing("-", with: "_") }

    /// In single quotes for zsh.
    static func single(_ s: String) -> String { "'" + s.replacing("'", with: "'\\''") + "'" }
    static func bracketEscaped(_ s: String) -> String {
        s.replacing("\\", with: "\\\\").replacing("[", with: "\\[").replacing("]", with: "\\]")
    }
    static func colonEscaped(_ s: String) -> String { s.replacing("\\", with: "\\\\").replacing(":", with: "\\:") }
    static func describeEscaped(_ s: String) -> String { s.replacing(":", with: "\\:") }

    /// `@P@_json_names WORDS…`: the "name" values in the JSON that `TOOL WORDS… --json` prints.
    static let jsonNames = #"""
    # @P@_json_names WORDS…: the "name" values in the JSON that `TOOL WORDS… --json` prints, one a
    # line, each once. Uses the program being completed and its --socket, if one was given.
    (( $+functions[@P@_json_names] )) ||
    @P@_json_names() {
      local socket i
      i=${words[(I)--socket]}
      (( i > 0 && i < CURRENT - 1 )) && socket=${(Q)words[i+1]}
      [[ -z $socket && -n ${words[(r)--socket=*]} ]] && socket=${(Q)${words[(r)--socket=*]}#--socket=}
      socket=${socket/#\~/$HOME}
      local -a run
      run=(${~@P@_program} "$@" --json)
      [[ -n $socket ]] && run+=(--socket $socket)
      (( $+commands[timeout] )) && run=(timeout 2 $run)
      $run 2>/dev/null </dev/null | awk '@NAMES_AWK@'
    }

    """#
}
