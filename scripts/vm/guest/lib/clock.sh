# shellcheck shell=bash
# The game clock as the guest reads it: status, the kept record, kioskd's "reached zero" lines
# and its frame log ("game clock shown", at --log-level debug). Needs lib/kioskd.sh.

# A headless counter scene "board" with one counter, up to its clock table's header (the
# scenario adds the clock's keys), and the built-in horn on the loopback card at volume 80.
# shellcheck disable=SC2034 # used by the scripts that source this
BOARD_SCENE='[display]
backend = "headless"
headless_size = "640x360"
[scenes]
order = ["board"]
[scene.board]
kind = "counter"
[[scene.board.counter]]
name = "home"
[scene.board.clock]'
# shellcheck disable=SC2034
LOOPBACK_HORN='[audio]
device = "hw:Loopback,0,0"
horn = "builtin"
horn_seconds = 1.0
volume = 80'

# clock_status: status's audio and clocks objects as one JSON line.
clock_status() {
  "$KIOSKCTL" status --socket /tmp/k.sock --json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(json.dumps({"audio": s.get("audio"), "clocks": s.get("clocks")}, sort_keys=True))'
}
# kept_start: the latest start instant the kept game clock records (its "game" run), as JSON.
kept_start() {
  python3 - /tmp/kstate <<'PY'
import json, os, re, sys
best = None
for name in os.listdir(sys.argv[1]):
    text = open(os.path.join(sys.argv[1], name), "rb").read().decode("utf-8", "replace")
    for m in re.finditer(r'"game":(\{[^{}]*\})', text):
        run = json.loads(m.group(1))
        if run.get("sinceMonotonicNs") is not None and (best is None or run["sinceMonotonicNs"] > best["sinceMonotonicNs"]):
            best = run
print(json.dumps(best))
PY
}
# zero_lines: the daemon's "reached zero" lines so far, joined by " | ".
zero_lines() { grep 'game clock reached zero' /tmp/kioskd.log | sed 's/@@//g' | awk '{ printf "%s%s", (n++ ? " | " : ""), $0 }' | cut -c1-900; }
# shown_lines LOG [FIRST] [LAST]: the frame log of LOG, the first FIRST lines and the last LAST
# ones, compacted to "FRAME_NS GAME RUNNING [SHOT]" joined by ",".
shown_lines() {
  grep 'game clock shown' "$1" | { if [ -n "${3:-}" ]; then tail -n "$3"; else head -n "${2:-8}"; fi; } |
    sed -E 's/.*frame_ns=([0-9]+) game=([^ ]+) game_ns=[0-9]+ running=([a-z]+)( scene=[^ ]+)?( shot=([^ ]+))?.*/\1 \2 \3 \6/' |
    sed 's/ *$//' | paste -sd, -
}
# uptime_ms: CLOCK_BOOTTIME (the same as CLOCK_MONOTONIC in a guest that never suspends) in
# milliseconds, to 10 ms (/proc/uptime), without starting a process.
uptime_ms() { local up _; read -r up _ < /proc/uptime; echo "${up/./}0"; }
