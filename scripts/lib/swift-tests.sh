# The Swift tests, run by scripts/test: sourced, then `seam_swift_tests XCTEST_BUNDLE`.
#
# Most of the suite's time is waiting — on seamd, its roles, PostgreSQL, a ticker's next step —
# so the test classes are run in lanes at once (SEAM_TEST_LANES, 3 by default; 1 runs them one
# after another). Each lane takes the next class from one queue, the slowest first (the list
# below: the rest follow by name), and runs it in a test process of its own; so a class that
# takes long never waits behind a lane that happened to get several.
#
# Classes that time something against the machine (a ticker's lateness and CPU, the broker's
# isolation of one client from another, the checkpointer's WAL bound) run afterwards, one after
# another, with nothing else running: their bounds are about seamd, not about a busy neighbour.
#
# Passed only when every class's process exits 0 and its XCTest summary says no failures (a
# crash part way leaves no summary), and the classes together ran every test the bundle lists.
# Each lane's output is in .build/test-output-N.txt, all of it in .build/test-output.txt; the
# last line, "N passed, 0 failed (…)", in .build/test-summary.txt too.

# Longest first, as measured in a whole run (seconds, optimised, here): the queue's head.
seam_slow_test_classes=(
    SyncTests                  # 64
    ConvergenceTests           # 34
    BrokerSimulationTests      # 23
    ServiceTests               # 21
    MigrationRoleTests         # 14
    ZoneTests                  # 11
    CLITests                   # 10
    FaultCampaignTests         # 9
    LargeResultTests           # 9
    MigrationRoleCrashTests    # 7
    EncryptionTests            # 6
    MetricsTests               # 5
    MigrationTests             # 5
    MigrationCrashTests        # 5
    SubscriptionBadInputTests  # 4
    BrokerTests                # 4
)
# Timed against the machine: run alone, after the lanes.
seam_quiet_test_classes=(IsolationTests TickerTests CheckpointerTests WatchTests)

seam_swift_tests() {
    local xctest=$1 lanes=${SEAM_TEST_LANES:-3}
    local listed classes queue quiet expected started
    listed=$("$xctest" --list-tests | grep -E '^[A-Za-z]+Tests\.[A-Za-z0-9_]+/' || true)
    expected=$(grep -c . <<<"$listed" || true)
    classes=$(cut -d/ -f1 <<<"$listed" | sort -u)
    [[ -n $classes ]] || { echo "the test bundle lists no tests" >&2; return 1; }
    queue=.build/test-queue.txt
    rm -f .build/test-output*.txt .build/test-results.txt .build/test-summary.txt "$queue" "$queue.lock"
    # The queue: the slow classes in their order, then the rest by name; the quiet ones apart.
    quiet=$(printf '%s\n' "${seam_quiet_test_classes[@]}" | sed 's/^/\\./; s/$/$/')
    {
        for c in "${seam_slow_test_classes[@]}"; do grep -E "\.$c\$" <<<"$classes" || true; done
        grep -vE "\.($(IFS='|'; echo "${seam_slow_test_classes[*]}"))\$" <<<"$classes" || true
    } | grep -vE "$(paste -sd'|' <<<"$quiet")" >"$queue" || true

    started=$(date +%s)
    local lane
    for ((lane = 1; lane <= lanes; lane++)); do
        seam_test_lane "$xctest" "$lane" "$queue" &
    done
    wait
    local lanes_took=$(( $(date +%s) - started ))
    printf '%s\n' "$classes" | grep -E "$(paste -sd'|' <<<"$quiet")" >"$queue" || true
    seam_test_lane "$xctest" quiet "$queue"
    cat .build/test-output-*.txt >.build/test-output.txt

    local total=0 failed=0 class ran failures status
    while read -r class ran failures status; do
        total=$((total + ran))
        if [[ $status != 0 || $failures != 0 ]]; then
            failed=$((failed + 1))
            echo "$class: $ran run, $failures failed (exit status $status)" >&2
        fi
    done <.build/test-results.txt
    if [[ $failed -gt 0 || $total -ne $expected ]]; then
        grep -E "error:|Fatal error|signal code" .build/test-output.txt | head -40 >&2 || true
        [[ $total -ne $expected ]] && echo "the classes ran $total tests of the $expected the bundle lists" >&2
        echo "$total run, not all passed"
        return 1
    fi
    echo "$total passed, 0 failed (in $(( $(date +%s) - started )) s: $lanes_took s in $lanes lanes, then the timed classes alone)" \
        | tee .build/test-summary.txt
}

# One lane: takes classes from QUEUE until it is empty, each in a test process of its own; a
# line "CLASS RAN FAILURES STATUS" per class in .build/test-results.txt; failures shown as they come.
seam_test_lane() {
    local xctest=$1 name=$2 queue=$3 class output status summary ran failures
    output=.build/test-output-$name.txt
    while true; do
        # A lock of its own: `sed -i` puts a new file in the queue's place.
        class=$(flock "$queue.lock" sh -c 'head -n 1 "$1"; sed -i 1d "$1"' - "$queue")
        [[ -n $class ]] || break
        set +e
        timeout 900 "$xctest" "$class" >.build/test-class-$name.txt 2>&1
        status=$?
        set -e
        cat .build/test-class-$name.txt >>"$output"
        grep -vE "^Test (Case|Suite) '.*' (started|passed)|^\s+Executed [0-9]+ tests?, with 0 failures|^\s*$" \
            .build/test-class-$name.txt | sed "s/^/[$name] /" || true
        summary=$(grep -A1 -E "^Test Suite 'Selected tests' (passed|failed)" .build/test-class-$name.txt \
                  | grep -E "^\s+Executed [0-9]+ tests?" || true)
        ran=$(sed -nE 's/.*Executed ([0-9]+) tests?.*/\1/p' <<<"$summary")
        failures=$(sed -nE 's/.* ([0-9]+) failures?.*/\1/p' <<<"$summary")
        flock .build/test-results.txt sh -c 'echo "$1 $2 $3 $4" >>.build/test-results.txt' - "$class" "${ran:-0}" "${failures:-1}" "$status"
    done
    rm -f .build/test-class-$name.txt
}
