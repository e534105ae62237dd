#!/bin/bash
# Kill test: kioskd (headless, a scoreboard) is SIGKILLed at random moments while kioskctl
# increments a counter, then restarted; after every restart the counter must equal the number of
# acknowledged increments (or one more: the last one was applied but its answer was lost).
# Also checks that no state file was ever found damaged.
#
#   scripts/kill-test.sh                 CI size: 200 kills, stops early after 170 s
#   scripts/kill-test.sh KILLS [SECONDS] KILLS kills; no time limit unless SECONDS is given
#                                        (e.g. `scripts/kill-test.sh 1000`, about 15-30 min)
# Prints the figures (kills, acknowledged increments, final value against them, time) and exits
# 1 when an acknowledged increment was lost, a state file was damaged, or fewer kills than asked
# for were done when no time limit applied; 2 for usage errors.
# Binaries: $KIOSKD_BIN_DIR (default .build/debug) must hold kioskd and kioskctl.
set -u
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    kills=200 limit=170
else
    kills=$1 limit=${2:-0}
fi
case "$kills:$limit" in
    *[!0-9:]*|:*|*:) echo "usage: scripts/kill-test.sh [KILLS [SECONDS]] (whole numbers; SECONDS 0 = no limit)" >&2; exit 2 ;;
esac
[ "$kills" -ge 1 ] || { echo "kill-test: KILLS must be at least 1" >&2; exit 2; }
bindir=${KIOSKD_BIN_DIR:-.build/debug}
kioskd=$bindir/kioskd
kioskctl=$bindir/kioskctl
for b in "$kioskd" "$kioskctl"; do
    [ -x "$b" ] || { echo "kill-test: no $b (build first, or set KIOSKD_BIN_DIR)" >&2; exit 2; }
done

# bash reports every SIGKILLed background job on stderr; keep the real stderr on fd 3.
exec 3>&2 2>/dev/null
dir=$(mktemp -d /tmp/kioskd-kill.XXXXXX)
sock=$dir/control.sock
cat > "$dir/kioskd.toml" <<CONF
state_dir = "$dir/state"
[display]
backend = "headless"
headless_size = "320x180"
[scene.score]
kind = "counter"
digits = 6
roll_ms = 0
[[scene.score.counter]]
name = "HOME"
[control]
socket = "$sock"
CONF

pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; { wait "$pid"; } 2>/dev/null
    wait 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

start_daemon() {
    "$kioskd" --config "$dir/kioskd.toml" --log-level warning 2>>"$dir/kioskd.log" &
    pid=$!
    for _ in $(seq 1 200); do
        if "$kioskctl" counter HOME get --socket "$sock" --timeout 2 >"$dir/value" 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "kill-test: kioskd did not come up; log:" >&3
    tail -n 20 "$dir/kioskd.log" >&3
    exit 1
}

fail() {
    echo "kill-test: FAIL after kill $done_kills of $kills: $*" >&3
    exit 1
}

acked=0         # the value every acknowledged increment so far adds up to (plus applied extras)
maybe=0         # restarts where the value was one more than acknowledged
incs=0          # acknowledged increments
start=$(date +%s)
done_kills=0
stopped_early=
start_daemon
for i in $(seq 1 "$kills"); do
    if [ "$limit" -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$limit" ]; then
        stopped_early=yes
        echo "kill-test: time limit ${limit}s reached after $done_kills kills"
        break
    fi
    # Kill at a random moment 0-600 ms from now, while increments are in flight.
    delay=$(printf "0.%03d" $(( RANDOM % 600 )))
    ( sleep "$delay"; kill -9 "$pid" 2>/dev/null ) &
    killer=$!
    while "$kioskctl" counter HOME inc --socket "$sock" --timeout 5 >/dev/null 2>&1; do
        acked=$((acked + 1))
        incs=$((incs + 1))
    done
    wait "$killer"
    { wait "$pid"; } 2>/dev/null
    done_kills=$((done_kills + 1))
    start_daemon
    value=$(cat "$dir/value")
    if [ "$value" = "$acked" ]; then
        :
    elif [ "$value" = "$((acked + 1))" ]; then
        maybe=$((maybe + 1))
        acked=$value
    else
        fail "counter is $value, acknowledged increments add up to $acked (lost $((acked - value)))"
    fi
    if grep -q "damaged" "$dir/kioskd.log"; then
        grep "damaged" "$dir/kioskd.log" >&3
        fail "a state file was damaged"
    fi
    if [ $((done_kills % 100)) -eq 0 ]; then
        echo "kill-test: $done_kills kills, $incs acknowledged increments, value $value, $(( $(date +%s) - start ))s"
    fi
done
elapsed=$(( $(date +%s) - start ))
final=$(cat "$dir/value")
echo "kill-test: kills: $done_kills of $kills"
echo "kill-test: acknowledged increments: $incs"
echo "kill-test: final value: $final = $incs acknowledged + $maybe applied whose answer was lost to the kill (lost: $((incs + maybe - final)))"
echo "kill-test: time: ${elapsed}s"
if [ "$final" -ne $((incs + maybe)) ]; then
    echo "kill-test: FAIL: final value $final, expected $((incs + maybe))" >&3
    exit 1
fi
if [ "$done_kills" -lt "$kills" ] && [ -z "$stopped_early" ]; then
    echo "kill-test: FAIL: only $done_kills of $kills kills" >&3
    exit 1
fi
echo "kill-test: OK: $done_kills SIGKILLs in ${elapsed}s, $incs acknowledged increments, final value $final ($maybe restarts found one unacknowledged increment applied)"
