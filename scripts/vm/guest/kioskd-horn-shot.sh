# shellcheck shell=bash
# kioskd-horn-shot: the horn sounded by the shot clock running out, on snd-aloop. A counter
# scene with a 1:00 game clock and a 2-second shot clock plays on hw:Loopback,0,0 while
# kiosk-vmtool records hw:Loopback,1,0; the clock is started once the 12 s recording runs (so
# kioskctl may take up to 9 s on a loaded host), the shot clock runs out 2 s later while the
# game clock runs on. kioskd logs the frame that shows the shot clock at 0.0 ("game clock reached
# zero" [event=shot clock expired frame_ns=… zero_ns=…]) and, at --log-level debug, every frame
# that shows another face ("game clock shown" [frame_ns=… game=… shot=…]), all on this kernel's
# CLOCK_MONOTONIC, the recording's clock. Then the documented rule that the shot clock stops
# with the game clock: stopped, set to 0:01, shot reset to 2 s, started: the period ends after
# 1 s and the shot clock stops there with exactly 1 s left.
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
# shellcheck source=lib/aloop.sh
. "$REPO/scripts/vm/guest/lib/aloop.sh"
# shellcheck source=lib/clock.sh
. "$REPO/scripts/vm/guest/lib/clock.sh"

aloop_load

kioskd_start "$BOARD_SCENE
period_length = \"1:00\"
periods = 4
tenths_below = \"0:10\"
shot_clock = 2
$LOOPBACK_HORN"
mark ready-status "$(clock_status)"

ctl() { "$KIOSKCTL" clock --socket /tmp/k.sock --json "$@" 2>&1 | tr '\n' ' '; }
if capture_start 12; then
  answer=$(ctl start)
  capture_wait
  mark shot-start "$answer"
  mark shot-capture "$CAPTURE"
else
  mark shot-start "capture did not start: $(log_tail /tmp/cap.out)"
fi
mark shot-kept "$(kept_start)"
mark shot-zero "$(zero_lines)"
mark shot-status "$(clock_status)"
# The frame log from the start: the shot clock's faces down to 0.0, then the game clock's.
mark shot-shown "$(shown_lines /tmp/kioskd.log 60)"

# The shot clock stops with the game clock: stopped, the game clock set to 0:01, the shot clock
# reset to 2 s, started: the period ends 1 s later, the shot clock stops there.
mark stop1 "$(ctl stop)"
mark set1 "$(ctl set 0:01)"
mark shot-reset "$(ctl reset --shot)"
mark start2 "$(ctl start)"
wait_count /tmp/kioskd.log "period 1 ended" 1 30 "$KPID" > /dev/null
mark kept2 "$(kept_start)"
mark ended-status "$(clock_status)"
mark ended-zero "$(zero_lines)"
kioskd_term
