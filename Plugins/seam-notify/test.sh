#!/usr/bin/env bash
# End-to-end check of seam-notify against a real broker.
#
#   Plugins/seam-notify/test.sh SEAMD SEAM SEAM-TICKER
#
# Builds seam-notify with make unless $SEAM_NOTIFY names a binary. Exits 0 when every check
# passes. What it checks:
#   1. seamd --no-roles, seam-ticker and seam-notify beside it (socket by path): a session
#      that finished before seam-notify started is not announced; `seam flash 1s --name Tea`
#      is, once, through --run with $1, $SEAM_SESSION_NAME and $SEAM_SESSION_UUID; a session
#      deleted while it runs (with its timer) is not.
#   2. SIGTERM: seam-notify exits 0; and it stops, too, while a broker never answers its Hello.
#   3. Without --run, with notify-send on PATH (a fake that records how it was run): it runs
#      once as `notify-send Seam "NAME finished"`, with $SEAM_SESSION_UUID; nothing on stdout.
#   3b. A burst of 20 sessions finishing together: every one announced, at most 8 commands
#      running at once.
#   4. Without --run and without notify-send on PATH: "finished: NAME (UUID)" on stdout;
#      when seamd stops, seam-notify exits 1.
#   5. seamd supervising seam-notify as a plugin (seamd.json): the socket handed over in
#      SEAM_FD works, and seamd's SIGTERM stops it.
set -euo pipefail

if [[ $# -ne 3 ]]; then
    echo "usage: $0 SEAMD SEAM SEAM-TICKER" >&2
    exit 2
fi
seamd=$(realpath "$1")
seam=$(realpath "$2")
ticker=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
for program in "$seamd" "$seam" "$ticker"; do
    [[ -x $program ]] || { echo "not an executable: $program" >&2; exit 2; }
done
if [[ -n ${SEAM_NOTIFY:-} ]]; then
    notify=$(realpath "$SEAM_NOTIFY")
else
    make -s -C "$here" >/dev/null
    notify=$here/build/seam-notify
fi

tmp=$(mktemp -d /tmp/seam-notify-test.XXXXXX)
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if [[ -n ${SEAM_TEST_KEEP:-} ]]; then
        echo "kept $tmp"
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT

failed=0
fail() {
    echo "FAIL $*"
    failed=1
}
show_logs() {
    local f
    for f in "$tmp"/*.log "$tmp"/*.err "$tmp"/*.out; do
        [[ -s $f ]] && { echo "--- $f"; tail -20 "$f"; }
    done
    return 0
}

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
    local seconds=$1
    shift
    local i
    for ((i = 0; i < seconds * 10; i++)); do
        "$@" 2>/dev/null && return 0  # a file a background job redirects to may not exist yet
        sleep 0.1
    done
    return 1
}

socket=$tmp/s.sock
export SEAM_SOCKET=$socket
unset SEAM_FD XDG_RUNTIME_DIR

start_seamd() {  # extra arguments for seamd
    "$seamd" --data-dir "$tmp/data" --socket "$socket" "$@" >>"$tmp/seamd.log" 2>&1 &
    seamd_pid=$!
    pids+=("$seamd_pid")
    wait_for 15 "$seam" status >/dev/null 2>&1 || { fail "seamd did not answer"; show_logs; exit 1; }
}

finished_named() {  # is there a finished session named $1?
    "$seam" query Session --where "state == \"finished\" AND name == \"$1\"" 2>/dev/null | grep -q '"uuid"'
}

# expect_once FILE PREFIX SESSION WANT OK WHAT: waits for a line of FILE starting with PREFIX,
# then checks that FILE holds exactly WANT, where {uuid} stands for the uuid of the session
# named SESSION; says "ok OK" or fails, naming WHAT.
expect_once() {
    local file=$1 prefix=$2 session=$3 want=$4 ok=$5 what=$6
    if wait_for 15 grep -q "^$prefix" "$file" 2>/dev/null; then
        sleep 0.5  # anything run twice would be there by now
        local uuid
        uuid=$("$seam" query Session --where "name == \"$session\"" --fields name |
            sed -n 's/.*"uuid":"\([0-9a-f-]*\)".*/\1/p')
        want=${want//\{uuid\}/$uuid}
        if [[ $(cat "$file") == "$want" ]]; then
            echo "ok   $ok"
        else
            fail "$what: $(cat "$file") (want $want)"
        fi
    else
        fail "$what: nothing for $session (its runs: $(cat "$file" 2>/dev/null || echo none))"
    fi
}

# ---- 1. beside seamd --no-roles ----------------------------------------------------------
start_seamd --no-roles
"$ticker" --socket "$socket" >>"$tmp/ticker.log" 2>&1 &
ticker_pid=$!
pids+=("$ticker_pid")

"$seam" flash 1s --name Old >/dev/null
wait_for 15 finished_named Old || fail "the ticker did not finish Old"

announced=$tmp/announced
# shellcheck disable=SC2016  # expanded by seam-notify's shell, not this one
run_command='printf "%s|%s|%s\n" "$SEAM_SESSION_NAME" "$1" "$SEAM_SESSION_UUID" >> '"'$announced'"
"$notify" --socket "$socket" --run "$run_command" >"$tmp/notify1.out" 2>"$tmp/notify1.err" &
notify_pid=$!
pids+=("$notify_pid")
wait_for 15 grep -q "watching" "$tmp/notify1.err" || fail "seam-notify did not start watching"

"$seam" flash 1s --name Tea >/dev/null
expect_once "$announced" 'Tea|' Tea 'Tea|Tea|{uuid}' "a session that finishes runs --run once, with its name and uuid" announced
grep -q Old "$announced" 2>/dev/null && fail "Old, finished before seam-notify started, was announced"

# A running session that is deleted (with its timer) leaves what runs without finishing.
"$seam" timer add Gone --step go=1h >/dev/null
"$seam" start Gone >/dev/null
"$seam" timer rm Gone >/dev/null
"$seam" flash 1s --name After >/dev/null
if wait_for 15 grep -q '^After|' "$announced" && ! grep -q Gone "$announced"; then
    echo "ok   a session deleted while it runs is not announced"
else
    fail "a deleted session: $(cat "$announced")"
fi

# ---- 2. SIGTERM --------------------------------------------------------------------------
kill -TERM "$notify_pid"
status=0
wait "$notify_pid" || status=$?
if [[ $status -eq 0 ]]; then
    echo "ok   SIGTERM: exit 0"
else
    fail "SIGTERM: exit $status, want 0"
fi

# ---- 2b. SIGTERM while a broker that accepted never answers Hello --------------------------
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen()
c, _ = s.accept()
time.sleep(30)' "$tmp/silent.sock" &
pids+=($!)
wait_for 5 test -S "$tmp/silent.sock" || fail "the silent listener did not start"
"$notify" --socket "$tmp/silent.sock" >/dev/null 2>"$tmp/notify6.err" &
notify_pid=$!
pids+=("$notify_pid")
sleep 0.5
kill -TERM "$notify_pid"
gone() { ! kill -0 "$notify_pid" 2>/dev/null; }
if wait_for 3 gone; then
    echo "ok   SIGTERM before Hello is answered: it stops"
else
    fail "SIGTERM before Hello is answered: still running after 3 s"
    kill -KILL "$notify_pid" 2>/dev/null || true
fi
wait "$notify_pid" 2>/dev/null || true

# ---- 3. notify-send ----------------------------------------------------------------------
mkdir "$tmp/bin"
sent=$tmp/notify-send.calls
# The fake writes a line per run: its arguments and $SEAM_SESSION_UUID, each followed by a bar.
cat >"$tmp/bin/notify-send" <<EOF
#!/bin/sh
printf '%s|' "\$@" "\$SEAM_SESSION_UUID" >>'$sent'
echo >>'$sent'
EOF
chmod +x "$tmp/bin/notify-send"
env PATH="$tmp/bin:$PATH" "$notify" >"$tmp/notify3.out" 2>"$tmp/notify3.err" &
notify_pid=$!
pids+=("$notify_pid")
wait_for 15 grep -q "watching" "$tmp/notify3.err" || fail "seam-notify (notify-send) did not start watching"
"$seam" flash 1s --name Jam >/dev/null
expect_once "$sent" '--|Seam|Jam finished|' Jam '--|Seam|Jam finished|{uuid}|' \
    'with notify-send on PATH: notify-send -- Seam "Jam finished", once' "notify-send ran as"
[[ -s $tmp/notify3.out ]] && fail "with notify-send on PATH, seam-notify printed: $(cat "$tmp/notify3.out")"
kill -TERM "$notify_pid" 2>/dev/null || true
wait "$notify_pid" || true

# ---- 3b. a burst: at most 8 commands at once, and every session announced ------------------
burst=$tmp/burst
mkdir -p "$burst/running"
# Each run marks itself running, records how many run, takes a second, and says it is done.
# shellcheck disable=SC2016  # expanded by seam-notify's shell, not this one
burst_command='touch "$BURST/running/$SEAM_SESSION_UUID"; ls "$BURST/running" | wc -l >> "$BURST/peaks"; sleep 1
rm "$BURST/running/$SEAM_SESSION_UUID"; echo "$1" >> "$BURST/done"'
BURST=$burst "$notify" --socket "$socket" --run "$burst_command" >"$tmp/notify5.out" 2>"$tmp/notify5.err" &
notify_pid=$!
pids+=("$notify_pid")
wait_for 15 grep -q "watching" "$tmp/notify5.err" || fail "seam-notify (burst) did not start watching"
flashes=()
for i in $(seq 1 20); do
    "$seam" flash 1s --name "Burst$i" >/dev/null &
    flashes+=($!)
done
wait "${flashes[@]}"
all_done() { [[ $(wc -l <"$burst/done") -eq 20 ]]; }
if wait_for 20 all_done; then
    peak=$(sort -n "$burst/peaks" | tail -1)
    if [[ $peak -le 8 ]]; then
        echo "ok   a burst of 20: all announced, at most $peak commands at once"
    else
        fail "a burst of 20 ran $peak commands at once (at most 8)"
    fi
else
    fail "a burst of 20: $(wc -l < "$burst/done" 2>/dev/null || echo 0) announced"
fi
kill -TERM "$notify_pid" 2>/dev/null || true
wait "$notify_pid" || true

# ---- 4. printing, then the broker goes away -----------------------------------------------
env PATH=/nonexistent "$notify" >"$tmp/notify2.out" 2>"$tmp/notify2.err" &
notify_pid=$!
pids+=("$notify_pid")
wait_for 15 grep -q "watching" "$tmp/notify2.err" || fail "seam-notify (printing) did not start watching"
"$seam" flash 1s --name Bread >/dev/null
if wait_for 15 grep -qE '^finished: Bread \([0-9a-f-]{36}\)$' "$tmp/notify2.out"; then
    echo "ok   without --run or notify-send: a line on stdout"
else
    fail "no 'finished: Bread (UUID)' line: $(cat "$tmp/notify2.out")"
fi
# A name holding a newline and an escape stays on its line: no forged "finished:" line.
"$seam" flash 1s --name $'Rye\nfinished: FAKE (x)\e[31m' >/dev/null
if wait_for 15 grep -qE '^finished: Rye\\x0afinished: FAKE \(x\)\\x1b\[31m \([0-9a-f-]{36}\)$' "$tmp/notify2.out" \
    && ! grep -q '^finished: FAKE' "$tmp/notify2.out"; then
    echo "ok   a name's control characters are written as \\xHH"
else
    fail "a name with a newline and an escape: $(cat -v "$tmp/notify2.out")"
fi
kill -TERM "$seamd_pid"
wait "$seamd_pid" || true
status=0
wait "$notify_pid" || status=$?
if [[ $status -eq 1 ]] && grep -q "ShuttingDown\|lost the broker" "$tmp/notify2.err"; then
    echo "ok   the broker stops: exit 1"
else
    fail "after seamd stopped: exit $status, want 1; $(cat "$tmp/notify2.err")"
fi

# ---- 5. supervised by seamd (SEAM_FD) --------------------------------------------------------
kill -TERM "$ticker_pid" 2>/dev/null || true  # seamd starts its own now
wait "$ticker_pid" 2>/dev/null || true
supervised=$tmp/supervised
# shellcheck disable=SC2016
supervised_command='echo "$SEAM_SESSION_NAME" >> '"'$supervised'"
python3 - "$tmp/seamd.json" "$ticker" "$notify" "$supervised_command" <<'EOF'
import json, sys
path, ticker, notify, command = sys.argv[1:]
json.dump({"roles": {"ticker": {"command": [ticker]}},
           "plugins": [{"name": "seam-notify", "command": [notify, "--run", command]}]},
          open(path, "w"))
EOF
start_seamd --config "$tmp/seamd.json"
wait_for 15 grep -q "watching" "$tmp/seamd.log" || fail "the supervised seam-notify did not start watching"
"$seam" flash 1s --name Soup >/dev/null
if wait_for 15 grep -qx Soup "$supervised" 2>/dev/null; then
    echo "ok   supervised by seamd, through SEAM_FD"
else
    fail "the supervised seam-notify did not announce Soup"
fi
kill -TERM "$seamd_pid"
wait "$seamd_pid" || true

if [[ $failed -ne 0 ]]; then
    show_logs
    exit 1
fi
echo "seam-notify: all checks passed"
