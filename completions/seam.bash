# bash completion for seam(1), generated from its command spec by `seam --generate bash`
# (scripts/generate-docs): change the spec, not this file.
#
# Install: source this file from ~/.bashrc, or copy it to
# ~/.local/share/bash-completion/completions/seam (or /usr/share/bash-completion/completions/seam).
#
# Names of timers, groups and sessions are asked of seamd as you type (`seam … --json`);
# when seamd is not running they are simply not offered.

_seam_commands='timer group start flash pause resume reset stop skip clear ls watch status metrics schema store migrate query subscribe call backup check restore sync up down install-units doctor web'
_seam_groups='timer group store sync'
_seam_common='--socket --verbose --help'
_seam_root=0

_seam_subcommands() {
    case $1 in
        timer) echo 'add ls show edit rm' ;;
        group) echo 'add ls rename rm' ;;
        store) echo info ;;
        sync) echo 'setup status off now phrase rotate-key' ;;
    esac
}

# The options of each command besides the common ones.
_seam_options() {
    case $1 in
        'timer add') echo '--step --repeat --icon --colour --sound --group --json' ;;
        'timer ls') echo --json ;;
        'timer show') echo --json ;;
        'timer edit') echo '--name --step --repeat --icon --colour --sound --group --no-group --json' ;;
        'group add') echo --json ;;
        'group ls') echo --json ;;
        start) echo --note ;;
        flash) echo '--name --note' ;;
        ls) echo --json ;;
        watch) echo '--plain --bell' ;;
        status) echo --json ;;
        metrics) echo --json ;;
        schema) echo --json ;;
        'store info') echo --json ;;
        migrate) echo '--dry-run --json' ;;
        query) echo '--where --sort --limit --fields --json' ;;
        subscribe) echo '--where --sort --limit --fields --json --pretty' ;;
        backup) echo '--data-dir --json' ;;
        check) echo '--data-dir --json' ;;
        restore) echo '--from-elsewhere --data-dir --json' ;;
        'sync setup') echo '--password-stdin --no-password --key-stdin --config-dir' ;;
        'sync status') echo --json ;;
        'sync off') echo --config-dir ;;
        'sync phrase') echo --config-dir ;;
        'sync rotate-key') echo --config-dir ;;
        up) echo --data-dir ;;
        install-units) echo '--dir --force' ;;
        doctor) echo '--data-dir --config-dir --json' ;;
        web) echo '--config-dir --json' ;;
    esac
}

# Options that take a value (the next word, or after "=").
_seam_takes_value() {
    case $1 in
        --socket | --step | --repeat | --icon | --colour | --sound | --group | --name | --note | --bell | --where | --sort | --limit | --fields | --data-dir | --config-dir | --dir) return 0 ;;
    esac
    return 1
}

# _seam_value COMMAND OPTION VALUE: completes the value of OPTION.
_seam_value() {
    local value
    value=$(_seam_dequote "$3")
    case "$1|$2" in
        *'|--socket') _seam_files "$value" -f ;;
        'timer add|--group') _seam_reply "$value" < <(_seam_names group ls) ;;
        'timer edit|--group') _seam_reply "$value" < <(_seam_names group ls) ;;
        'watch|--bell') _seam_reply "$value" < <(printf '%s\n' steps end off) ;;
        'backup|--data-dir') _seam_files "$value" -d ;;
        'check|--data-dir') _seam_files "$value" -d ;;
        'restore|--data-dir') _seam_files "$value" -d ;;
        'sync setup|--config-dir') _seam_files "$value" -d ;;
        'sync off|--config-dir') _seam_files "$value" -d ;;
        'sync phrase|--config-dir') _seam_files "$value" -d ;;
        'sync rotate-key|--config-dir') _seam_files "$value" -d ;;
        'up|--data-dir') _seam_files "$value" -d ;;
        'install-units|--dir') _seam_files "$value" -d ;;
        'doctor|--data-dir') _seam_files "$value" -d ;;
        'doctor|--config-dir') _seam_files "$value" -d ;;
        'web|--config-dir') _seam_files "$value" -d ;;
    esac
}

# _seam_operand COMMAND INDEX TYPED: completes the INDEXth operand (from 0).
_seam_operand() {
    case "$1|$2" in
        'timer show|0') _seam_reply "$3" < <(_seam_names timer ls) ;;
        'timer edit|0') _seam_reply "$3" < <(_seam_names timer ls) ;;
        'timer rm|0') _seam_reply "$3" < <(_seam_names timer ls) ;;
        'group rename|0') _seam_reply "$3" < <(_seam_names group ls) ;;
        'group rm|0') _seam_reply "$3" < <(_seam_names group ls) ;;
        'start|0') _seam_reply "$3" < <(_seam_names timer ls) ;;
        'pause|0') _seam_reply "$3" < <(_seam_names ls) ;;
        'resume|0') _seam_reply "$3" < <(_seam_names ls) ;;
        'reset|0') _seam_reply "$3" < <(_seam_names ls) ;;
        'stop|0') _seam_reply "$3" < <(_seam_names ls) ;;
        'skip|0') _seam_reply "$3" < <(_seam_names ls) ;;
        'query|0') _seam_reply "$3" < <(printf '%s\n' Timer UserGroup Session SyncToken SyncRecord) ;;
        'subscribe|0') _seam_reply "$3" < <(printf '%s\n' Timer UserGroup Session SyncToken SyncRecord) ;;
        'call|0') _seam_reply "$3" < <(printf '%s\n' org.seam.Store.Hello org.seam.Store.Schema org.seam.Store.Fetch org.seam.Store.Count org.seam.Store.Save org.seam.Store.Status org.seam.Store.Subscribe org.seam.Store.Unsubscribe org.seam.Timers.Start org.seam.Timers.Flash org.seam.Timers.Pause org.seam.Timers.Resume org.seam.Timers.Reset org.seam.Timers.Skip org.seam.Timers.Stop org.seam.Timers.Clear org.seam.Timers.Advance org.seam.Timers.AdvanceMany org.seam.Sync.Status org.seam.Sync.Now org.seam.Sync.Reload org.seam.Migration.Plan org.seam.Migration.Migrate org.seam.Maintenance.Backup org.seam.Metrics.Get org.seam.Maintenance.Check org.seam.Maintenance.Restore org.varlink.service.GetInfo org.varlink.service.GetInterfaceDescription) ;;
        'backup|0') _seam_files "$3" -d ;;
        'restore|0') _seam_files "$3" -d ;;
    esac
}

# _seam_reassemble: puts back together the words that readline split at "=" or ":" (which are in
# COMP_WORDBREAKS), so that `--socket=/tmp/s` and `--step Boil=1:30` are one word each. Sets
# _seam_words (the words), _seam_cword (the index of the word under the cursor) and _seam_cur (that
# word, up to its end).
_seam_reassemble() {
    _seam_words=()
    _seam_cword=0
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
            _seam_words[n]+=$word
        else
            ((n++))
            _seam_words[n]=$word
        fi
        [[ $i -eq $COMP_CWORD ]] && _seam_cword=$n
    done
    # The cursor after a space at the end of the line: a new, empty word.
    if [[ $COMP_CWORD -ge ${#COMP_WORDS[@]} ]]; then
        ((n++))
        _seam_words[n]=""
        _seam_cword=$n
    fi
    _seam_cur=${_seam_words[_seam_cword]}
}

# _seam_dequote TEXT: TEXT as the shell will pass it, roughly (what a person has typed so far).
_seam_dequote() {
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

# _seam_names WORDS…: the "name" values in the JSON that `seam WORDS… --json` prints, one a
# line, each once; nothing at all when seamd does not answer (within two seconds).
_seam_names() {
    local tool=${_seam_words[0]/#\~/$HOME} socket="" i w
    for ((i = 1; i < ${#_seam_words[@]}; i++)); do
        w=${_seam_words[i]}
        case $w in
            --socket=*) socket=${w#--socket=} ;;
            --socket) [[ $((i + 1)) -lt $_seam_cword ]] && socket=${_seam_words[i + 1]} ;;
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

# _seam_reply PREFIX: adds to COMPREPLY the lines of standard input that start with PREFIX,
# quoted for the shell unless the word being completed opened a quote (readline closes it).
_seam_reply() {
    local prefix=$1 quoted=0 item
    [[ $_seam_cur == [\'\"]* ]] && quoted=1
    while IFS= read -r item; do
        [[ -n $item && $item == "$prefix"* ]] || continue
        if [[ $quoted -eq 1 ]]; then
            COMPREPLY+=("$item")
        else
            COMPREPLY+=("$(printf '%q' "$item")")
        fi
    done
}

# _seam_words_reply WORDS: COMPREPLY gets those of the (plain) WORDS that start with the current word.
_seam_words_reply() {
    local w
    for w in $1; do
        [[ $w == "$_seam_cur"* ]] && COMPREPLY+=("$w")
    done
}

# _seam_files VALUE [-d]: file (or, with -d, directory) names completing VALUE. Readline quotes
# them and gives directories a "/" (compopt -o filenames).
_seam_files() {
    local value=$1 kind=${2:--f} item
    local IFS=$'\n'
    for item in $(compgen "$kind" -- "$value"); do
        COMPREPLY+=("$item")
    done
    compopt -o filenames 2>/dev/null
    return 0
}

_seam() {
    COMPREPLY=()
    local _seam_words _seam_cword _seam_cur
    _seam_reassemble

    # The command: the leading words that are not options (options and their values may come
    # first, as seam itself reads them), and where its words end.
    local i w command="" start=1 operands=0 prev_option=""
    local -a leading=()
    if [[ $_seam_root -eq 0 ]]; then
        for ((i = 1; i < _seam_cword; i++)); do
            w=${_seam_words[i]}
            if [[ $w == -* ]]; then
                [[ ${#leading[@]} -gt 0 ]] && break
                [[ $w != *=* ]] && _seam_takes_value "$w" && ((i++))
                continue
            fi
            leading+=("$w")
            [[ ${#leading[@]} -eq 1 ]] && start=$i
        done
        if [[ -n ${leading[0]-} && " $_seam_groups " == *" ${leading[0]} "* ]]; then
            [[ ${#leading[@]} -ge 2 ]] && command="${leading[0]} ${leading[1]}" && ((start += 2))
        elif [[ -n ${leading[0]-} ]]; then
            command=${leading[0]}
            ((start += 1))
        fi
    fi

    # After the command words: the operands so far, and whether the word before the cursor is
    # an option that wants a value.
    local after_options=0
    if [[ -n $command || $_seam_root -eq 1 ]]; then
        for ((i = start; i < _seam_cword; i++)); do
            w=${_seam_words[i]}
            if [[ $after_options -eq 0 && $w == -- ]]; then
                after_options=1
            elif [[ $after_options -eq 0 && $w == --*=* ]]; then
                :
            elif [[ $after_options -eq 0 && $w == -* ]]; then
                if _seam_takes_value "$w"; then
                    if [[ $((i + 1)) -eq $_seam_cword ]]; then
                        prev_option=$w
                    else
                        ((i++))
                    fi
                fi
            else
                ((operands++))
            fi
        done
    elif [[ $((_seam_cword - 1)) -ge 1 ]] && w=${_seam_words[_seam_cword - 1]} && [[ $w == --* && $w != *=* ]] && _seam_takes_value "$w"; then
        prev_option=$w # an option before the command
    fi

    # An option's value.
    if [[ -n $prev_option ]]; then
        _seam_value "$command" "$prev_option" "$_seam_cur"
        return 0
    fi
    if [[ $after_options -eq 0 && $_seam_cur == --*=* ]]; then
        _seam_value "$command" "${_seam_cur%%=*}" "${_seam_cur#*=}"
        return 0
    fi

    # The command words.
    if [[ -z $command && $_seam_root -eq 0 ]]; then
        if [[ $_seam_cur == -* ]]; then
            _seam_words_reply "$_seam_common --version"
        elif [[ ${#leading[@]} -eq 0 ]]; then
            _seam_words_reply "$_seam_commands"
        elif [[ ${#leading[@]} -eq 1 ]]; then
            _seam_words_reply "$(_seam_subcommands "${leading[0]}")"
        fi
        return 0
    fi

    # Options.
    if [[ $after_options -eq 0 && $_seam_cur == -* ]]; then
        _seam_words_reply "$(_seam_options "$command") $_seam_common"
        return 0
    fi

    # Operands.
    local typed
    typed=$(_seam_dequote "$_seam_cur")
    _seam_operand "$command" "$operands" "$typed"

    # Readline completes only the text after the last "=" or ":" of a word (they break words):
    # leave that much out of names that contain one.
    if [[ $_seam_cur == *[:=]* && $_seam_cur != [\'\"]* ]]; then
        local strip=${_seam_cur%"${_seam_cur##*[:=]}"}
        for i in "${!COMPREPLY[@]}"; do
            COMPREPLY[i]=${COMPREPLY[i]#"$strip"}
        done
    fi
    return 0
}

complete -F _seam seam
