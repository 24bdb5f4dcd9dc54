# bash completion for seam-metrics(1), generated from its command spec by `seam-metrics --generate bash`
# (scripts/generate-docs): change the spec, not this file.
#
# Install: source this file from ~/.bashrc, or copy it to
# ~/.local/share/bash-completion/completions/seam-metrics (or /usr/share/bash-completion/completions/seam-metrics).

_seam_metrics_commands=''
_seam_metrics_groups=''
_seam_metrics_common=--help
_seam_metrics_root=1

_seam_metrics_subcommands() {
    case $1 in
    esac
}

# The options of each command besides the common ones.
_seam_metrics_options() {
    case $1 in
        '') echo '--port --socket' ;;
    esac
}

# Options that take a value (the next word, or after "=").
_seam_metrics_takes_value() {
    case $1 in
        --port | --socket) return 0 ;;
    esac
    return 1
}

# _seam_metrics_value COMMAND OPTION VALUE: completes the value of OPTION.
_seam_metrics_value() {
    local value
    value=$(_seam_metrics_dequote "$3")
    case "$1|$2" in
        '|--socket') _seam_metrics_files "$value" -f ;;
    esac
}

# _seam_metrics_operand COMMAND INDEX TYPED: completes the INDEXth operand (from 0).
_seam_metrics_operand() {
    case "$1|$2" in
    esac
}

# _seam_metrics_reassemble: puts back together the words that readline split at "=" or ":" (which are in
# COMP_WORDBREAKS), so that `--socket=/tmp/s` and `--step Boil=1:30` are one word each. Sets
# _seam_metrics_words (the words), _seam_metrics_cword (the index of the word under the cursor) and _seam_metrics_cur (that
# word, up to its end).
_seam_metrics_reassemble() {
    _seam_metrics_words=()
    _seam_metrics_cword=0
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
            _seam_metrics_words[n]+=$word
        else
            ((n++))
            _seam_metrics_words[n]=$word
        fi
        [[ $i -eq $COMP_CWORD ]] && _seam_metrics_cword=$n
    done
    # The cursor after a space at the end of the line: a new, empty word.
    if [[ $COMP_CWORD -ge ${#COMP_WORDS[@]} ]]; then
        ((n++))
        _seam_metrics_words[n]=""
        _seam_metrics_cword=$n
    fi
    _seam_metrics_cur=${_seam_metrics_words[_seam_metrics_cword]}
}

# _seam_metrics_dequote TEXT: TEXT as the shell will pass it, roughly (what a person has typed so far).
_seam_metrics_dequote() {
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

# _seam_metrics_names WORDS…: the "name" values in the JSON that `seam-metrics WORDS… --json` prints, one a
# line, each once; nothing at all when seamd does not answer (within two seconds).
_seam_metrics_names() {
    local tool=${_seam_metrics_words[0]/#\~/$HOME} socket="" i w
    for ((i = 1; i < ${#_seam_metrics_words[@]}; i++)); do
        w=${_seam_metrics_words[i]}
        case $w in
            --socket=*) socket=${w#--socket=} ;;
            --socket) [[ $((i + 1)) -lt $_seam_metrics_cword ]] && socket=${_seam_metrics_words[i + 1]} ;;
        esac
    done
    socket=${socket/#\~/$HOME}
    local -a run=("$tool" "$@" --json)
    [[ -n $socket ]] && run+=(--socket "$socket")
    command -v timeout >/dev/null 2>&1 && run=(timeout 2 "${run[@]}")
    "${run[@]}" 2>/dev/null </dev/null | awk '
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
        }'
}

# _seam_metrics_reply PREFIX: adds to COMPREPLY the lines of standard input that start with PREFIX,
# quoted for the shell unless the word being completed opened a quote (readline closes it).
_seam_metrics_reply() {
    local prefix=$1 quoted=0 item
    [[ $_seam_metrics_cur == [\'\"]* ]] && quoted=1
    while IFS= read -r item; do
        [[ -n $item && $item == "$prefix"* ]] || continue
        if [[ $quoted -eq 1 ]]; then
            COMPREPLY+=("$item")
        else
            COMPREPLY+=("$(printf '%q' "$item")")
        fi
    done
}

# _seam_metrics_words_reply WORDS: COMPREPLY gets those of the (plain) WORDS that start with the current word.
_seam_metrics_words_reply() {
    local w
    for w in $1; do
        [[ $w == "$_seam_metrics_cur"* ]] && COMPREPLY+=("$w")
    done
}

# _seam_metrics_files VALUE [-d]: file (or, with -d, directory) names completing VALUE. Readline quotes
# them and gives directories a "/" (compopt -o filenames).
_seam_metrics_files() {
    local value=$1 kind=${2:--f} item
    local IFS=$'\n'
    for item in $(compgen "$kind" -- "$value"); do
        COMPREPLY+=("$item")
    done
    compopt -o filenames 2>/dev/null
    return 0
}

_seam_metrics() {
    COMPREPLY=()
    local _seam_metrics_words _seam_metrics_cword _seam_metrics_cur
    _seam_metrics_reassemble

    # The command: the leading words that are not options (options and their values may come
    # first, as seam-metrics itself reads them), and where its words end.
    local i w command="" start=1 operands=0 prev_option=""
    local -a leading=()
    if [[ $_seam_metrics_root -eq 0 ]]; then
        for ((i = 1; i < _seam_metrics_cword; i++)); do
            w=${_seam_metrics_words[i]}
            if [[ $w == -* ]]; then
                [[ ${#leading[@]} -gt 0 ]] && break
                [[ $w != *=* ]] && _seam_metrics_takes_value "$w" && ((i++))
                continue
            fi
            leading+=("$w")
            [[ ${#leading[@]} -eq 1 ]] && start=$i
        done
        if [[ -n ${leading[0]-} && " $_seam_metrics_groups " == *" ${leading[0]} "* ]]; then
            [[ ${#leading[@]} -ge 2 ]] && command="${leading[0]} ${leading[1]}" && ((start += 2))
        elif [[ -n ${leading[0]-} ]]; then
            command=${leading[0]}
            ((start += 1))
        fi
    fi

    # After the command words: the operands so far, and whether the word before the cursor is
    # an option that wants a value.
    local after_options=0
    if [[ -n $command || $_seam_metrics_root -eq 1 ]]; then
        for ((i = start; i < _seam_metrics_cword; i++)); do
            w=${_seam_metrics_words[i]}
            if [[ $after_options -eq 0 && $w == -- ]]; then
                after_options=1
            elif [[ $after_options -eq 0 && $w == --*=* ]]; then
                :
            elif [[ $after_options -eq 0 && $w == -* ]]; then
                if _seam_metrics_takes_value "$w"; then
                    if [[ $((i + 1)) -eq $_seam_metrics_cword ]]; then
                        prev_option=$w
                    else
                        ((i++))
                    fi
                fi
            else
                ((operands++))
            fi
        done
    elif [[ $((_seam_metrics_cword - 1)) -ge 1 ]] && w=${_seam_metrics_words[_seam_metrics_cword - 1]} && [[ $w == --* && $w != *=* ]] && _seam_metrics_takes_value "$w"; then
        prev_option=$w # an option before the command
    fi

    # An option's value.
    if [[ -n $prev_option ]]; then
        _seam_metrics_value "$command" "$prev_option" "$_seam_metrics_cur"
        return 0
    fi
    if [[ $after_options -eq 0 && $_seam_metrics_cur == --*=* ]]; then
        _seam_metrics_value "$command" "${_seam_metrics_cur%%=*}" "${_seam_metrics_cur#*=}"
        return 0
    fi

    # The command words.
    if [[ -z $command && $_seam_metrics_root -eq 0 ]]; then
        if [[ $_seam_metrics_cur == -* ]]; then
            _seam_metrics_words_reply "$_seam_metrics_common --version"
        elif [[ ${#leading[@]} -eq 0 ]]; then
            _seam_metrics_words_reply "$_seam_metrics_commands"
        elif [[ ${#leading[@]} -eq 1 ]]; then
            _seam_metrics_words_reply "$(_seam_metrics_subcommands "${leading[0]}")"
        fi
        return 0
    fi

    # Options.
    if [[ $after_options -eq 0 && $_seam_metrics_cur == -* ]]; then
        _seam_metrics_words_reply "$(_seam_metrics_options "$command") $_seam_metrics_common"
        return 0
    fi

    # Operands.
    local typed
    typed=$(_seam_metrics_dequote "$_seam_metrics_cur")
    _seam_metrics_operand "$command" "$operands" "$typed"

    # Readline completes only the text after the last "=" or ":" of a word (they break words):
    # leave that much out of names that contain one.
    if [[ $_seam_metrics_cur == *[:=]* && $_seam_metrics_cur != [\'\"]* ]]; then
        local strip=${_seam_metrics_cur%"${_seam_metrics_cur##*[:=]}"}
        for i in "${!COMPREPLY[@]}"; do
            COMPREPLY[i]=${COMPREPLY[i]#"$strip"}
        done
    fi
    return 0
}

complete -F _seam_metrics seam-metrics
