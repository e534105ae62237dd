#!/bin/bash
# Kill test: kioskd (headless, a scoreboard with HOME and AWAY) is SIGKILLed at random moments
# while concurrent kioskctl clients increment both counters (CLIENTS of them, even ones HOME, odd
# ones AWAY, each one increment after the other), then restarted. The clients overlap, so the
# command pipeline commits their changes in batches of several (group commit) and the kill lands
# in the middle of batches. After every restart, for each counter:
#   value before the kill round + increments acknowledged in it
#     <= value after the restart <=
#   that + the counter's clients (each had at most one request unanswered when the kill came)
# i.e. every acknowledged increment is there and none was applied twice. Also checks that no
# state file was ever found damaged.
#
#   scripts/kill-test.sh                 CI size: 120 kills, stops early after 170 s (a kill
#                                        round costs 1.35-1.65 times one of the sequential test,
#                                        which ran 200: about 90 s on a quiet 2-core machine, as
#                                        before)
#   scripts/kill-test.sh KILLS [SECONDS] KILLS kills; no time limit unless SECONDS is given
#                                        (e.g. `scripts/kill-test.sh 1000`, about 10-20 min)
#   KILL_TEST_CLIENTS=N                  concurrent clients (default 8, at least 1; 1 = the
#                                        sequential test: batches of one)
# Prints the figures (kills, acknowledged increments per counter, values against them, the
# largest batch the pipeline committed before a kill, from `kioskctl status`, time) and exits 1
# when an acknowledged increment was lost, one was applied twice, a state file was damaged, or
# fewer kills than asked for were done when no time limit applied; 2 for usage errors.
# Binaries: $KIOSKD_BIN_DIR (default .build/debug) must hold kioskd and kioskctl.
set -u
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    kills=120 limit=170
else
    kills=$1 limit=${2:-0}
fi
clients=${KILL_TEST_CLIENTS:-8}
case "$kills:$limit:$clients" in
    *[!0-9:]*|:*|*::*|*:) echo "usage: [KILL_TEST_CLIENTS=N] scripts/kill-test.sh [KILLS [SECONDS]] (whole numbers; SECONDS 0 = no limit)" >&2; exit 2 ;;
esac
[ "$kills" -ge 1 ] || { echo "kill-test: KILLS must be at least 1" >&2; exit 2; }
[ "$clients" -ge 1 ] || { echo "kill-test: KILL_TEST_CLIENTS must be at least 1" >&2; exit 2; }
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
[[scene.score.counter]]
name = "AWAY"
[control]
socket = "$sock"
CONF

counters=(HOME AWAY)
# Client c increments counter c % 2; the number of clients on each counter.
per_counter=("$(( (clients + 1) / 2 ))" "$(( clients / 2 ))")

pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; { wait "$pid"; } 2>/dev/null
    wait 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

# Starts kioskd and reads both counters into value[0] and value[1].
value=(0 0)
start_daemon() {
    "$kioskd" --config "$dir/kioskd.toml" --log-level warning 2>>"$dir/kioskd.log" &
    pid=$!
    local v
    for _ in $(seq 1 200); do
        if v=$("$kioskctl" counter HOME get --socket "$sock" --timeout 2 2>/dev/null); then
            value[0]=${v##* = }
            if v=$("$kioskctl" counter AWAY get --socket "$sock" --timeout 2 2>/dev/null); then
                value[1]=${v##* = }
                return 0
            fi
        fi
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

# One client: increments its counter until a request fails (the kill), then writes how many
# were acknowledged. Its last request may or may not have been applied; it is the only one.
client() {
    local name=$1 out=$2 n=0
    while "$kioskctl" counter "$name" inc --socket "$sock" --timeout 5 >/dev/null 2>&1; do
        n=$((n + 1))
    done
    echo "$n" > "$out"
}

base=(0 0)      # each counter's value after the last restart
incs=(0 0)      # acknowledged increments per counter, all rounds
extra=(0 0)     # increments applied whose answer was lost to a kill, all rounds
largest=0       # the largest batch the pipeline committed, over every life (from kioskctl status)
batched=0       # lives in which the pipeline had committed a batch of more than one change
statuses=0      # lives whose status was read before the kill
start=$(date +%s)
done_kills=0
stopped_early=
start_daemon
base=("${value[@]}")
for _ in $(seq 1 "$kills"); do
    if [ "$limit" -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$limit" ]; then
        stopped_early=yes
        echo "kill-test: time limit ${limit}s reached after $done_kills kills"
        break
    fi
    rm -f "$dir"/acked.* "$dir/status"
    cpids=()
    for c in $(seq 0 $((clients - 1))); do
        client "${counters[c % 2]}" "$dir/acked.$c" &
        cpids+=($!)
    done
    # Kill at a random moment 50-650 ms from now, while increments are in flight; just before,
    # read the pipeline's figures of this life (the largest batch it committed).
    delay=$(printf "0.%03d" $(( 50 + RANDOM % 600 )))
    ( sleep "$delay"; "$kioskctl" status --socket "$sock" --timeout 1 > "$dir/status" 2>/dev/null; kill -9 "$pid" 2>/dev/null ) &
    killer=$!
    wait "$killer"
    for c in "${cpids[@]}"; do wait "$c"; done
    { wait "$pid"; } 2>/dev/null
    done_kills=$((done_kills + 1))
    acked=(0 0)
    for c in $(seq 0 $((clients - 1))); do
        n=$(cat "$dir/acked.$c" 2>/dev/null) || fail "client $c left no count"
        acked[c % 2]=$(( acked[c % 2] + n ))
    done
    if b=$(sed -n 's/^commits: .*(largest \([0-9]*\)).*/\1/p' "$dir/status" 2>/dev/null) && [ -n "$b" ]; then
        statuses=$((statuses + 1))
        [ "$b" -gt "$largest" ] && largest=$b
        [ "$b" -gt 1 ] && batched=$((batched + 1))
    fi
    start_daemon
    for k in 0 1; do
        low=$(( base[k] + acked[k] )) high=$(( base[k] + acked[k] + per_counter[k] ))
        if [ "${value[k]}" -lt "$low" ]; then
            fail "${counters[k]} is ${value[k]}: it was ${base[k]} before the kill round and ${acked[k]} increments were acknowledged in it (lost $(( low - value[k] )))"
        fi
        if [ "${value[k]}" -gt "$high" ]; then
            fail "${counters[k]} is ${value[k]}: it was ${base[k]} before the kill round, ${acked[k]} increments were acknowledged and at most ${per_counter[k]} more were in flight (applied twice: $(( value[k] - high )))"
        fi
        incs[k]=$(( incs[k] + acked[k] ))
        extra[k]=$(( extra[k] + value[k] - low ))
    done
    base=("${value[@]}")
    if grep -q "damaged" "$dir/kioskd.log"; then
        grep "damaged" "$dir/kioskd.log" >&3
        fail "a state file was damaged"
    fi
    if [ $((done_kills % 100)) -eq 0 ]; then
        echo "kill-test: $done_kills kills, $(( incs[0] + incs[1] )) acknowledged increments, HOME ${value[0]} AWAY ${value[1]}, $(( $(date +%s) - start ))s"
    fi
done
elapsed=$(( $(date +%s) - start ))
echo "kill-test: kills: $done_kills of $kills, $clients concurrent clients (HOME ${per_counter[0]}, AWAY ${per_counter[1]})"
for k in 0 1; do
    echo "kill-test: ${counters[k]}: final value ${value[k]} = ${incs[k]} acknowledged + ${extra[k]} applied whose answer was lost to a kill (lost: none; applied twice: none)"
done
echo "kill-test: largest batch committed before a kill: $largest (batches of more than one change in $batched of $statuses lives whose status was read)"
echo "kill-test: time: ${elapsed}s"
if [ "$done_kills" -lt "$kills" ] && [ -z "$stopped_early" ]; then
    echo "kill-test: FAIL: only $done_kills of $kills kills" >&3
    exit 1
fi
echo "kill-test: OK: $done_kills SIGKILLs in ${elapsed}s, $(( incs[0] + incs[1] )) acknowledged increments from $clients clients, HOME ${value[0]} AWAY ${value[1]}, largest batch $largest"
