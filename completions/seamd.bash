# bash completion for seamd(1), the Seam store broker.
#
# Install: source this file from ~/.bashrc, or copy it to
# ~/.local/share/bash-completion/completions/seamd (or /usr/share/bash-completion/completions/seamd).

_seamd() {
    COMPREPLY=()
    local cur=${COMP_WORDS[COMP_CWORD]} prev="" option="" value
    [[ $COMP_CWORD -gt 0 ]] && prev=${COMP_WORDS[COMP_CWORD - 1]}

    # The option whose value is being typed: `--opt VALUE`, or `--opt=VALUE`, which readline splits
    # into "--opt", "=", "VALUE" because "=" breaks words.
    value=$cur
    if [[ $cur == = ]]; then
        option=$prev
        value=""
    elif [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
        option=${COMP_WORDS[COMP_CWORD - 2]}
    elif [[ $cur == --*=* ]]; then
        option=${cur%%=*}
        value=${cur#*=}
    elif [[ $prev == --* ]]; then
        option=$prev
    fi

    local item IFS=$'\n'
    case $option in
        --data-dir)
            COMPREPLY=($(compgen -d -- "$value"))
            compopt -o filenames 2>/dev/null
            return 0 ;;
        --socket | --config)
            COMPREPLY=($(compgen -f -- "$value"))
            compopt -o filenames 2>/dev/null
            return 0 ;;
        --durability)
            COMPREPLY=($(compgen -W $'normal\nfull' -- "$value"))
            return 0 ;;
        --log-level)
            COMPREPLY=($(compgen -W $'debug\ninfo\nwarning\nerror' -- "$value"))
            return 0 ;;
        --handshake-timeout|--spin)
            return 0 ;;
    esac

    # seamd takes no operands: offer the options.
    for item in --data-dir --socket --config --no-roles --durability --log-level --handshake-timeout --spin --version --help; do
        [[ $item == "$cur"* ]] && COMPREPLY+=("$item")
    done
    return 0
}

complete -F _seamd seamd
