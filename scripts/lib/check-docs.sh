#!/usr/bin/env bash
# Checks that the man pages and shell completions keep up with the commands.
#
#   scripts/lib/check-docs.sh PATH-TO-SEAM
#
# For every command that `seam --help` lists: an entry `.TP` / `.B seam WORDS` in man/seam.1, its
# words offered by completions/seam.bash, and the options its own --help lists offered there
# too. For seamd (when it is beside seam): every flag of `seamd --help` in man/seamd.1 and
# completions/seamd.bash. Then: the completion files parse, the bash completion answers a few
# known cases, the zsh completion loads and offers the commands (zsh must be installed:
# scripts/test installs it), and the man pages render without a warning (when groff is
# installed).
#
# Prints one line per failure and exits 1 if there was any.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 PATH-TO-SEAM" >&2
    exit 64
fi
seam=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
man_seam=$root/man/seam.1
man_seamd=$root/man/seamd.1
bash_seam=$root/completions/seam.bash
bash_seamd=$root/completions/seamd.bash
zsh_seam=$root/completions/_seam

failures=0
fail() {
    echo "check-docs: $*"
    failures=$((failures + 1))
}

for f in "$man_seam" "$man_seamd" "$bash_seam" "$bash_seamd" "$zsh_seam"; do
    [[ -f $f ]] || fail "${f#"$root"/} is missing"
done
if [[ ! -x $seam ]]; then
    fail "$seam is not an executable"
    exit 1
fi

# complete_with FILE FUNCTION WORD…: what FUNCTION (sourced from FILE) offers for the command
# line `WORD…` (the last word is the one being completed), one a line. Runs in a bash of its
# own, not interactive; never fails (what goes wrong shows as what is not offered).
complete_with() {
    bash --norc --noprofile -c '
        source "$1" || exit 1
        function=$2
        shift 2
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"
        COMP_POINT=${#COMP_LINE}
        "$function" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}"
    ' check-docs "$@" 2>&1 || true
}

# offered WORD…: what the bash completion of seam offers; offered_seamd: the same for seamd.
offered() { complete_with "$bash_seam" _seam "$@"; }
offered_seamd() { complete_with "$bash_seamd" _seamd "$@"; }

# offers EXPECTED WORD…: whether the completion of `WORD…` includes EXPECTED. (The answer is
# read whole first: `grep -q` in a pipe could stop reading early, and pipefail then fail.)
offers() {
    local expected=$1 answer
    shift
    answer=$(offered "$@")
    grep -qxF -- "$expected" <<<"$answer"
}

# The completion files parse.
for f in "$bash_seam" "$bash_seamd"; do
    [[ -f $f ]] || continue
    bash -n "$f" 2>/dev/null || fail "${f#"$root"/} does not parse: $(bash -n "$f" 2>&1 | head -1)"
done
if ! command -v zsh >/dev/null; then
    fail "zsh is not installed: completions/_seam cannot be checked (scripts/test installs it)"
elif [[ -f $zsh_seam ]]; then
    zsh -n "$zsh_seam" 2>/dev/null || fail "completions/_seam does not parse: $(zsh -n "$zsh_seam" 2>&1 | head -1)"
fi

# The commands of seam: in `seam --help`, the lines that start with two spaces and a lowercase
# word; a command's words are the lowercase words that start its line, before the usage
# (words in capitals, options) and before the summary (after a run of spaces).
help=$("$seam" --help 2>&1) || fail "$seam --help failed"
commands=()
while IFS= read -r line; do
    line=${line:2}
    line=${line%%"  "*}
    words=""
    read -r -a items <<<"$line"
    for w in "${items[@]}"; do
        [[ $w =~ ^[a-z][a-z0-9-]*$ ]] || break
        words+="${words:+ }$w"
    done
    [[ -n $words ]] && commands+=("$words")
done < <(grep -E '^  [a-z]' <<<"$help" || true)
[[ ${#commands[@]} -gt 0 ]] || fail "$seam --help lists no commands"

# The tag lines of man/seam.1 (the line after each .TP), with \- read as -.
man_tags=""
if [[ -f $man_seam ]]; then
    man_tags=$(awk 'tag { print; tag = 0 } /^\.TP/ { tag = 1 }' "$man_seam" | sed 's/\\-/-/g')
fi

for command in "${commands[@]}"; do
    read -r -a words <<<"$command"

    # The man page: `.B seam WORDS` then the end of the line, a space or a font change.
    if [[ -f $man_seam ]] && ! grep -qE "^\.B seam ${command}( |\\\\f|$)" <<<"$man_tags"; then
        fail "man/seam.1 has no '.TP' entry '.B seam $command'"
    fi

    [[ -f $bash_seam ]] || continue
    # The completion: each word, where it comes.
    offers "${words[0]}" seam "" || fail "completions/seam.bash does not offer '${words[0]}' after 'seam'"
    if [[ ${#words[@]} -gt 1 ]]; then
        offers "${words[1]}" seam "${words[0]}" "" ||
            fail "completions/seam.bash does not offer '${words[1]}' after 'seam ${words[0]}'"
    fi

    # Its options: those its --help lists, and --help.
    options_line=$("$seam" "${words[@]}" --help 2>/dev/null | grep -E '^options:' || true)
    wanted=(--help)
    if [[ -n $options_line ]]; then
        IFS=',' read -r -a items <<<"${options_line#options:}"
        for item in "${items[@]}"; do
            read -r option _ <<<"$item"
            [[ -n $option ]] && wanted+=("$option")
        done
    fi
    have=$(offered seam "${words[@]}" "--")
    for option in "${wanted[@]}"; do
        grep -qxF -- "$option" <<<"$have" ||
            fail "completions/seam.bash does not offer '$option' for 'seam $command'"
    done
done

# Known answers of the bash completion.
if [[ -f $bash_seam ]]; then
    offers timer seam ti || fail "completions/seam.bash does not offer 'timer' for 'seam ti'"
    offers add seam timer a || fail "completions/seam.bash does not offer 'add' for 'seam timer a'"
    offers --json seam ls --j || fail "completions/seam.bash does not offer '--json' for 'seam ls --j'"
    offers Timer seam query "" || fail "completions/seam.bash does not offer 'Timer' for 'seam query'"
fi

# The zsh completion, loaded by compinit in a zsh without start-up files: its #compdef line
# gives _seam to seam and seamd, and _seam, run with _arguments and _describe standing in for
# the completion system (which works only while a line is being completed), offers every first
# word the bash completion offers, and the second words of the commands of `seam --help`. Each
# word it offers comes as a line "offered: WORD…"; any other line is zsh complaining.
if command -v zsh >/dev/null && [[ -f $zsh_seam ]]; then
    groups=()  # the first words that take a second
    for command in "${commands[@]}"; do
        [[ $command == *" "* ]] || continue
        [[ " ${groups[*]} " == *" ${command%% *} "* ]] || groups+=("${command%% *}")
    done
    zsh_status=0
    zsh_output=$(zsh -f -c '
        fpath=("$1" $fpath)
        shift
        autoload -Uz compinit && compinit -u -D || exit 1
        if [[ $_comps[seam] != _seam || $_comps[seamd] != _seam ]]; then
            print -r -- "its #compdef line does not give _seam to seam and seamd"
            exit 1
        fi
        autoload +X _seam || exit 1
        _arguments() { state=$stub_state; return 0 }
        _describe() {
            local -a names
            names=(${${(P)${@[-1]}}%%:*})
            print -rl -- ${names/#/offered: $prefix}
        }
        service=seam
        stub_state=command prefix="" words=(seam "") CURRENT=2
        _seam
        for group in "$@"; do
            stub_state=arguments prefix="$group " words=($group "") CURRENT=2
            _seam
        done
    ' check-docs "$(dirname "$zsh_seam")" "${groups[@]}" 2>&1) || zsh_status=$?
    zsh_offered=$(sed -n 's/^offered: //p' <<<"$zsh_output")
    while IFS= read -r line; do
        [[ -n $line ]] && fail "completions/_seam in zsh: $line"
    done < <(grep -v '^offered: ' <<<"$zsh_output" | awk '!seen[$0]++' || true)
    if [[ $zsh_status -ne 0 ]]; then
        fail "completions/_seam does not load in zsh (exit $zsh_status)"
    else
        if [[ -f $bash_seam ]]; then
            while IFS= read -r word; do
                [[ -z $word ]] || grep -qxF -- "$word" <<<"$zsh_offered" ||
                    fail "completions/_seam does not offer '$word' after 'seam' (completions/seam.bash does)"
            done < <(offered seam "")
        fi
        for command in "${commands[@]}"; do
            [[ $command == *" "* ]] || continue
            read -r -a words <<<"$command"
            grep -qxF -- "${words[0]} ${words[1]}" <<<"$zsh_offered" ||
                fail "completions/_seam does not offer '${words[1]}' after 'seam ${words[0]}'"
        done
    fi
fi

# seamd, when it is beside seam: every flag of its --help in its man page and its completion.
seamd=$(dirname "$seam")/seamd
if [[ -x $seamd ]]; then
    flags=$("$seamd" --help 2>&1 | grep -oE -- '--[a-z][a-z-]*' | sort -u || true)
    [[ -n $flags ]] || fail "$seamd --help lists no flags"
    # The options man/seamd.1 describes: those on the tag lines (after .TP) of its OPTIONS.
    man_flags=""
    if [[ -f $man_seamd ]]; then
        man_flags=$(awk '/^\.SH/ { options = ($2 == "OPTIONS") } options && tag { print } { tag = /^\.TP/ }' "$man_seamd" |
            sed 's/\\-/-/g' | grep -oE -- '--[a-z][a-z-]*' || true)
    fi
    have=""
    [[ -f $bash_seamd ]] && have=$(offered_seamd seamd "--")
    for flag in $flags --help; do
        if [[ -f $man_seamd ]] && ! grep -qxF -- "$flag" <<<"$man_flags"; then
            fail "man/seamd.1 does not describe $flag"
        fi
        if [[ -f $bash_seamd ]] && ! grep -qxF -- "$flag" <<<"$have"; then
            fail "completions/seamd.bash does not offer $flag"
        fi
    done
fi

# The man pages render without a warning.
if command -v groff >/dev/null; then
    for page in "$man_seam" "$man_seamd"; do
        [[ -f $page ]] || continue
        warnings=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$page" 2>&1 || true)
        if [[ -n $warnings ]]; then
            while IFS= read -r w; do
                fail "${page#"$root"/}: $w"
            done <<<"$warnings"
        fi
    done
fi

if [[ $failures -gt 0 ]]; then
    exit 1
fi
