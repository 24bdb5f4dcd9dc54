extension CommandSet {
    /// `_seam`, `_seam_migrate`: the prefix of a completion script's functions and variables.
    var completionPrefix: String { "_" + tool.map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined() }

    /// The commands' first words, each once, in order (`timer`, `group`, `start`, …).
    var firstWords: [String] { Self.unique(commands.compactMap(\.words.first)) }

    /// The first words that take a second (`timer add`): the groups.
    var groups: [String] { Self.unique(commands.filter { $0.words.count == 2 }.map { $0.words[0] }) }

    static func unique(_ words: [String]) -> [String] {
        var seen = Set<String>()
        return words.filter { seen.insert($0).inserted }
    }
}

/// A bash completion script written from a tool's spec: tables of its commands, options and what
/// completes each value and operand, over a fixed engine (the functions in `engine`), which
/// needs nothing but bash (not the bash-completion package).
struct BashCompletion {
    let set: CommandSet
    /// `_seam`, `_seam_migrate`: the prefix of every function and variable.
    let p: String

    init(_ set: CommandSet) {
        self.set = set
        p = set.completionPrefix
        precondition(set.commands.allSatisfy { $0.words.count <= 2 }, "bash completion: commands of at most two words")
    }

    var script: String {
        var out = [
            "# bash completion for \(set.tool)(1), generated from its command spec by `\(set.tool) --generate bash`",
            "# (scripts/generate-docs): change the spec, not this file.",
            "#",
            "# Install: source this file from ~/.bashrc, or copy it to",
            "# ~/.local/share/bash-completion/completions/\(set.tool) (or /usr/share/bash-completion/completions/\(set.tool)).",
        ]
        if hasNames {
            out += ["#", "# Names of timers, groups and sessions are asked of seamd as you type (`\(set.tool) … --json`);",
                    "# when seamd is not running they are simply not offered."]
        }
        out.append("")
        let firsts = set.firstWords, groups = set.groups
        out += ["\(p)_commands=\(Self.quote(firsts.joined(separator: " ")))",
                "\(p)_groups=\(Self.quote(groups.joined(separator: " ")))",
                "\(p)_common=\(Self.quote((set.commonOptions.map { "--" + $0.name } + ["--help"]).joined(separator: " ")))",
                "\(p)_root=\(set.root == nil ? 0 : 1)", ""]
        out += ["\(p)_subcommands() {", "    case $1 in"]
        for g in groups {
            let next = set.commands.filter { $0.words.count == 2 && $0.words[0] == g }.map { $0.words[1] }
            out.append("        \(Self.quote(g))) echo \(Self.quote(next.joined(separator: " "))) ;;")
        }
        out += ["    esac", "}", ""]
        out += ["# The options of each command besides the common ones.", "\(p)_options() {", "    case $1 in"]
        for c in set.commands where !c.options.isEmpty {
            out.append("        \(Self.quote(c.name))) echo \(Self.quote(c.options.map { "--" + $0.name }.joined(separator: " "))) ;;")
        }
        out += ["    esac", "}", ""]
        let valued = CommandSet.unique((set.commonOptions + set.commands.flatMap(\.options)).filter { !$0.isFlag }.map { "--" + $0.name })
        out += ["# Options that take a value (the next word, or after \"=\").", "\(p)_takes_value() {"]
        if !valued.isEmpty { out += ["    case $1 in", "        \(valued.joined(separator: " | "))) return 0 ;;", "    esac"] }
        out += ["    return 1", "}", ""]
        out += ["# \(p)_value COMMAND OPTION VALUE: completes the value of OPTION.", "\(p)_value() {", "    local value",
                "    value=$(\(p)_dequote \"$3\")", "    case \"$1|$2\" in"]
        for o in set.commonOptions where o.completion != .none {
            out.append("        *\(Self.quote("|--" + o.name))) \(action(o.completion, "$value")) ;;")
        }
        for c in set.commands {
            for o in c.options where o.completion != .none {
                out.append("        \(Self.quote(c.name + "|--" + o.name))) \(action(o.completion, "$value")) ;;")
            }
        }
        out += ["    esac", "}", ""]
        out += ["# \(p)_operand COMMAND INDEX TYPED: completes the INDEXth operand (from 0).", "\(p)_operand() {", "    case \"$1|$2\" in"]
        for c in set.commands {
            for (i, o) in c.operands.enumerated() where o.completion != .none {
                out.append("        \(Self.quote(c.name + "|" + (o.repeats ? "" : String(i))))\(o.repeats ? "*" : "")) \(action(o.completion, "$3")) ;;")
            }
        }
        out += ["    esac", "}", ""]
        out.append(Self.engine.replacing("@P@", with: p).replacing("@TOOL@", with: set.tool)
                   .replacing("@NAMES_AWK@", with: Self.namesAwk(indent: "        ")))
        return out.joined(separator: "\n")
    }

    var hasNames: Bool {
        (set.commonOptions + set.commands.flatMap(\.options)).contains { if case .names = $0.completion { true } else { false } }
            || set.commands.flatMap(\.operands).contains { if case .names = $0.completion { true } else { false } }
    }

    /// The shell that completes `what` from `value`, the text typed so far.
    func action(_ what: Completion, _ value: String) -> String {
        switch what {
        case .none: ":"
        case .file: "\(p)_files \"\(value)\" -f"
        case .directory: "\(p)_files \"\(value)\" -d"
        case .words(let words): "\(p)_reply \"\(value)\" < <(printf '%s\\n' \(words.map(Self.quote).joined(separator: " ")))"
        case .names(let words): "\(p)_reply \"\(value)\" < <(\(p)_names \(words.map(Self.quote).joined(separator: " ")))"
        }
    }

    /// A word for bash: as is when it holds only safe characters, else in single quotes.
    static func quote(_ s: String) -> String {
        let safe = !s.isEmpty && s.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_./=:@%+,".unicodeScalars.contains($0)) }
        return safe ? s : "'" + s.replacing("'", with: "'\\''") + "'"
    }

    /// An awk program that prints the `"name"` values of JSON on standard input, unescaped, one a
    /// line, each once (what `.names` completions offer; the zsh completion runs it too).
    static func namesAwk(indent: String) -> String {
        let program = #"""

            BEGIN { FS = "\"name\":\"" }
            {
                for (i = 2; i <= NF; i++) {
                    s = $i; out = ""
                    while (s != "") {
                        c = substr(s, 1, 1)
                        if (c == "\"") break
                        if (c == "\\") {
                            c = substr(s, 2, 1)
                            if (c == "n" || c == "t" || c == "r") c = " "
                            s = substr(s, 3)
                        } else {
                            s = substr(s, 2)
                        }
                        out = out c
                    }
                    if (out != "" && !(out in seen)) { seen[out] = 1; print out }
                }
            }
            """#
        return program.split(separator: "\n", omittingEmptySubsequences: false).map { $0.isEmpty ? "" : indent + $0 }.joined(separator: "\n")
    }

    /// The functions every generated script shares; `@P@` is the prefix, `@TOOL@` the tool.
    static let engine = #"""
    # @P@_reassemble: puts back together the words that readline split at "=" or ":" (which are in
    # COMP_WORDBREAKS), so that `--socket=/tmp/s` and `--step Boil=1:30` are one word each. Sets
    # @P@_words (the words), @P@_cword (the index of the word under the cursor) and @P@_cur (that
    # word, up to its end).
    @P@_reassemble() {
        @P@_words=()
        @P@_cword=0
        local line=${COMP_LINE-} pos=0 i word glued n=-1
        [[ -z $line ]] && line="${COMP_WORDS[*]}"
        for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
            word=${COMP_WORDS[i]}
            glued=1
            while [[ $pos -lt ${#line} && ${line:pos:1} == [[:space:]] ]]; do
                glued=0
                ((pos++))
            done
            if [[ ${line:pos:${#word}} != "$word" ]]; then
                glued=0 # the line and the words disagree (an expansion, say): do not join
            else
                ((pos += ${#word}))
            fi
            if [[ $i -gt 0 && $glued -eq 1 && $n -ge 0 ]]; then
                @P@_words[n]+=$word
            else
                ((n++))
                @P@_words[n]=$word
            fi
            [[ $i -eq $COMP_CWORD ]] && @P@_cword=$n
        done
        # The cursor after a space at the end of the line: a new, empty word.
        if [[ $COMP_CWORD -ge ${#COMP_WORDS[@]} ]]; then
            ((n++))
            @P@_words[n]=""
            @P@_cword=$n
        fi
        @P@_cur=${@P@_words[@P@_cword]}
    }

    # @P@_dequote TEXT: TEXT as the shell will pass it, roughly (what a person has typed so far).
    @P@_dequote() {
        local s=$1 out="" c
        case $s in
            \'*) printf '%s' "${s#\'}"; return ;;
            \"*) s=${s#\"} ;;
        esac
        while [[ -n $s ]]; do
            c=${s:0:1}
            if [[ $c == \\ && ${#s} -gt 1 ]]; then
                out+=${s:1:1}
                s=${s:2}
            else
                out+=$c
                s=${s:1}
            fi
        done
        printf '%s' "$out"
    }

    # @P@_names WORDS…: the "name" values in the JSON that `@TOOL@ WORDS… --json` prints, one a
    # line, each once; nothing at all when seamd does not answer (within two seconds).
    @P@_names() {
        local tool=${@P@_words[0]/#\~/$HOME} socket="" i w
        for ((i = 1; i < ${#@P@_words[@]}; i++)); do
            w=${@P@_words[i]}
            case $w in
                --socket=*) socket=${w#--socket=} ;;
                --socket) [[ $((i + 1)) -lt $@P@_cword ]] && socket=${@P@_words[i + 1]} ;;
            esac
        done
        socket=${socket/#\~/$HOME}
        local -a run=("$tool" "$@" --json)
        [[ -n $socket ]] && run+=(--socket "$socket")
        command -v timeout >/dev/null 2>&1 && run=(timeout 2 "${run[@]}")
        "${run[@]}" 2>/dev/null </dev/null | awk '@NAMES_AWK@'
    }

    # @P@_reply PREFIX: adds to COMPREPLY the lines of standard input that start with PREFIX,
    # quoted for the shell unless the word being completed opened a quote (readline closes it).
    @P@_reply() {
        local prefix=$1 quoted=0 item
        [[ $@P@_cur == [\'\"]* ]] && quoted=1
        while IFS= read -r item; do
            [[ -n $item && $item == "$prefix"* ]] || continue
            if [[ $quoted -eq 1 ]]; then
                COMPREPLY+=("$item")
            else
                COMPREPLY+=("$(printf '%q' "$item")")
            fi
        done
    }

    # @P@_words_reply WORDS: COMPREPLY gets those of the (plain) WORDS that start with the current word.
    @P@_words_reply() {
        local w
        for w in $1; do
            [[ $w == "$@P@_cur"* ]] && COMPREPLY+=("$w")
        done
    }

    # @P@_files VALUE [-d]: file (or, with -d, directory) names completing VALUE. Readline quotes
    # them and gives directories a "/" (compopt -o filenames).
    @P@_files() {
        local value=$1 kind=${2:--f} item
        local IFS=$'\n'
        for item in $(compgen "$kind" -- "$value"); do
            COMPREPLY+=("$item")
        done
        compopt -o filenames 2>/dev/null
        return 0
    }

    @P@() {
        COMPREPLY=()
        local @P@_words @P@_cword @P@_cur
        @P@_reassemble

        # The command: the leading words that are not options (options and their values may come
        # first, as @TOOL@ itself reads them), and where its words end.
        local i w command="" start=1 operands=0 prev_option=""
        local -a leading=()
        if [[ $@P@_root -eq 0 ]]; then
            for ((i = 1; i < @P@_cword; i++)); do
                w=${@P@_words[i]}
                if [[ $w == -* ]]; then
                    [[ ${#leading[@]} -gt 0 ]] && break
                    [[ $w != *=* ]] && @P@_takes_value "$w" && ((i++))
                    continue
                fi
                leading+=("$w")
                [[ ${#leading[@]} -eq 1 ]] && start=$i
            done
            if [[ -n ${leading[0]-} && " $@P@_groups " == *" ${leading[0]} "* ]]; then
                [[ ${#leading[@]} -ge 2 ]] && command="${leading[0]} ${leading[1]}" && ((start += 2))
            elif [[ -n ${leading[0]-} ]]; then
                command=${leading[0]}
                ((start += 1))
            fi
        fi

        # After the command words: the operands so far, and whether the word before the cursor is
        # an option that wants a value.
        local after_options=0
        if [[ -n $command || $@P@_root -eq 1 ]]; then
            for ((i = start; i < @P@_cword; i++)); do
                w=${@P@_words[i]}
                if [[ $after_options -eq 0 && $w == -- ]]; then
                    after_options=1
                elif [[ $after_options -eq 0 && $w == --*=* ]]; then
                    :
                elif [[ $after_options -eq 0 && $w == -* ]]; then
                    if @P@_takes_value "$w"; then
                        if [[ $((i + 1)) -eq $@P@_cword ]]; then
                            prev_option=$w
                        else
                            ((i++))
                        fi
                    fi
                else
                    ((operands++))
                fi
            done
        elif [[ $((@P@_cword - 1)) -ge 1 ]] && w=${@P@_words[@P@_cword - 1]} && [[ $w == --* && $w != *=* ]] && @P@_takes_value "$w"; then
            prev_option=$w # an option before the command
        fi

        # An option's value.
        if [[ -n $prev_option ]]; then
            @P@_value "$command" "$prev_option" "$@P@_cur"
            return 0
        fi
        if [[ $after_options -eq 0 && $@P@_cur == --*=* ]]; then
            @P@_value "$command" "${@P@_cur%%=*}" "${@P@_cur#*=}"
            return 0
        fi

        # The command words.
        if [[ -z $command && $@P@_root -eq 0 ]]; then
            if [[ $@P@_cur == -* ]]; then
                @P@_words_reply "$@P@_common --version"
            elif [[ ${#leading[@]} -eq 0 ]]; then
                @P@_words_reply "$@P@_commands"
            elif [[ ${#leading[@]} -eq 1 ]]; then
                @P@_words_reply "$(@P@_subcommands "${leading[0]}")"
            fi
            return 0
        fi

        # Options.
        if [[ $after_options -eq 0 && $@P@_cur == -* ]]; then
            @P@_words_reply "$(@P@_options "$command") $@P@_common"
            return 0
        fi

        # Operands.
        local typed
        typed=$(@P@_dequote "$@P@_cur")
        @P@_operand "$command" "$operands" "$typed"

        # Readline completes only the text after the last "=" or ":" of a word (they break words):
        # leave that much out of names that contain one.
        if [[ $@P@_cur == *[:=]* && $@P@_cur != [\'\"]* ]]; then
            local strip=${@P@_cur%"${@P@_cur##*[:=]}"}
            for i in "${!COMPREPLY[@]}"; do
                COMPREPLY[i]=${COMPREPLY[i]#"$strip"}
            done
        fi
        return 0
    }

    complete -F @P@ @TOOL@

    """#
}
