# shellcheck shell=bash
# kioskd-clock-kill: a running game clock survives SIGKILL on a real display (DRM). kioskd
# shows a counter scene with a 1:00 game clock in tenths; its frame log ("game clock shown",
# --log-level debug: the instant of every frame that shows another face, on CLOCK_MONOTONIC)
# says what was shown when. The clock is started, then kioskd is killed with SIGKILL at two
# instants while it runs and started again each time (the first frame and the next faces of
# each start are marked as restart-N); then it is stopped and set to 0:20, killed and started
# again (stopped: restart-stopped with status); started again, killed once more, and left to
# run out (final: the frame log's last lines and the "reached zero" line). uptime_ms brackets
# each kioskctl call, so the host can check the kept instants against the guest's clock.
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
# shellcheck source=lib/clock.sh
. "$REPO/scripts/vm/guest/lib/clock.sh"

CONFIG='[display]
backend = "drm"
[scenes]
order = ["board"]
[scene.board]
kind = "counter"
shading = false
[[scene.board.counter]]
name = "home"
[scene.board.clock]
period_length = "1:00"
periods = 2
tenths_below = "1:00"'

# ctl WORDS…: kioskctl clock --json WORDS, bracketed by uptime_ms: "BEFORE AFTER ANSWER".
ctl() {
  local a b out
  a=$(uptime_ms)
  out=$("$KIOSKCTL" clock --socket /tmp/k.sock --json "$@" 2>&1 | tr '\n' ' ')
  b=$(uptime_ms)
  echo "$a $b $out"
}
# restart NAME: SIGKILL, start again, wait for 6 frame-log lines; marks NAME with the first 8.
restart() {
  kill -KILL "$KPID"; wait "$KPID" 2>/dev/null
  cp /tmp/kioskd.log "/tmp/kioskd-before-$1.log"
  kioskd_start "$CONFIG"
  wait_count /tmp/kioskd.log "game clock shown" "${2:-6}" 30 "$KPID" > /dev/null
  mark "$1" "$(shown_lines /tmp/kioskd.log 8)"
}

kioskd_start "$CONFIG"
mark start "$(ctl start)"
mark kept "$(kept_start)"
mark before-kill "$(shown_lines /tmp/kioskd.log 0 3)"
n=0
for pause in 1.3 0.4; do
  sleep "$pause"  # the kill's instant within the period
  restart "restart-$n"
  n=$((n + 1))
done

mark stop "$(ctl stop)"
mark set "$(ctl set 0:20)"
sleep 0.7
restart restart-stopped 1
kioskd_status_at stopped-status

mark start2 "$(ctl start)"
mark kept2 "$(kept_start)"
sleep 1.1
restart restart-last
wait_count /tmp/kioskd.log "game=0.0 " 1 40 "$KPID" > /dev/null
mark final "$(shown_lines /tmp/kioskd.log 0 3)"
mark final-zero "$(zero_lines)"
kioskd_term
