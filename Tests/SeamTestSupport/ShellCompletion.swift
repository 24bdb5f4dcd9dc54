/// A bash completion function run as bash runs it at a prompt: the script sourced in a bash of
/// its own, `COMP_WORDS`, `COMP_CWORD` and `COMP_LINE` set from a typed line (a trailing space
/// starts a new, empty word), and what it put in `COMPREPLY`.
public enum ShellCompletion {
    public static func bash(script: String, function: String, line: String) throws -> (offered: [String], errors: String) {
        let r = try Executables.runTool("/bin/bash", ["--norc", "--noprofile", "-c", """
            source "$1" || exit 1
            read -r -a COMP_WORDS <<<"$3"
            [[ $3 == *" " ]] && COMP_WORDS+=("")
            COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
            COMP_LINE=$3
            COMP_POINT=${#COMP_LINE}
            "$2" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" ""
            printf '%s\\n' "${COMPREPLY[@]}"
            """, "complete", script, function, line])
        return (r.stdout.split(separator: "\n").map(String.init), r.stderr)
    }
}
