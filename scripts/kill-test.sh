#!/bin/bash
# Kill test: kioskd (headless, a scoreboard) is SIGKILLed at random moments while kioskctl
# increments a counter, then restarted; after every restart the counter must equal the number of
# acknowledged increments (or one more: the last one was applied but its answer was lost).
# Also checks that no state file was ever found damaged.
#
#   scripts/kill-test.sh [KILLS] [SECONDS]     defaults: 200 kills, at most 170 s
# Binaries: $KIOSKD_BIN_DIR (default .build/debug) must hold kioskd and kioskctl.
set -u
cd "$(dirname "$0")/.."
kills=${1:-200}
limit=${2:-170}
bindir=${KIOSKD_BIN_DIR:-.build/debug}
kioskd=$bindir/kioskd
kioskctl=$bindir/kioskctl
for b in "$kioskd" "$kioskctl"; do
    [ -x "$b" ] || { echo "kill-test: no $b (build first, or set KIOSKD_BIN_DIR)" >&2; exit 2; }
done

# bash reports every SIGKILLed background job on stderr; keep the real stderr on fd 3.
exec 3>&3 2>/dev/null
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
    for _ in $(seq 1 100); do
        if "$kioskctl" counter HOME get --socket "$sock" --timeout 2 >"$dir/value" 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "kill-test: kioskd did not come up; log:" >&3
    tail -n 20 "$dir/kioskd.log" >&3
    exit 1
}

acked=0
maybe=0         # restarts where the value was one more than acknowledged
incs=0
start=$(date +%s)
done_kills=0
start_daemon
for i in $(seq 1 "$kills"); do
    if [ $(( $(date +%s) - start )) -ge "$limit" ]; then
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
        echo "kill-test: FAIL after kill $done_kills: counter is $value, acknowledged increments $acked" >&3
        exit 1
    fi
    if grep -q "damaged" "$dir/kioskd.log"; then
        echo "kill-test: FAIL after kill $done_kills: a state file was damaged:" >&3
        grep "damaged" "$dir/kioskd.log" >&3
        exit 1
    fi
done
elapsed=$(( $(date +%s) - start ))
echo "kill-test: OK: $done_kills SIGKILLs in ${elapsed}s, $incs acknowledged increments, final value $acked ($maybe restarts found one unacknowledged increment applied)"
