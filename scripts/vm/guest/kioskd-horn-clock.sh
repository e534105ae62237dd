# shellcheck shell=bash
# kioskd-horn-clock: the horn sounded by the game clock running out, on snd-aloop. A counter
# scene with a 3-second period plays on hw:Loopback,0,0 while kiosk-vmtool records
# hw:Loopback,1,0. kioskd logs the instant of the frame that shows 0.0 and the instant the clock
# reached zero ("game clock reached zero" [frame_ns=… zero_ns=…]), both on this kernel's
# CLOCK_MONOTONIC, the clock of the recording; the kept record gives the start instant
# (sinceMonotonicNs) for a cross-check. Rounds: sound, mute = true (silent), sound again, then a
# restart after that period ended (silent: a past event is not reported again).
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
# shellcheck source=lib/aloop.sh
. "$REPO/scripts/vm/guest/lib/aloop.sh"
# shellcheck source=lib/clock.sh
. "$REPO/scripts/vm/guest/lib/clock.sh"

aloop_load

# clock_config MUTE: a counter scene with a 3 s game clock (no shot clock), the horn on the loopback.
clock_config() {
  printf '%s\n' "$BOARD_SCENE" 'period_length = "0:03"
periods = 4
direction = "down"
tenths_below = "0:03"' "$LOOPBACK_HORN" "mute = $1"
}

# clock_run NAME: the clock back to a full first period, then a 9 s recording in which it is
# started 0.5 s in and runs out 3 s later (kioskctl takes a second or two under TCG); marks
# NAME-start (kioskctl clock start --json), NAME-capture, NAME-kept (the kept start),
# NAME-zero (the daemon's "reached zero" lines so far) and NAME-status.
clock_run() {
  "$KIOSKCTL" clock --socket /tmp/k.sock reset > /dev/null 2>&1
  if ! capture_start 9; then mark "$1-start" "capture did not start: $(log_tail /tmp/cap.out)"; return; fi
  sleep 0.5  # a stretch of silence in the recording before the horn
  local answer
  answer=$("$KIOSKCTL" clock --socket /tmp/k.sock --json start 2>&1)
  capture_wait
  mark "$1-start" "$(echo "$answer" | tr '\n' ' ')"
  mark "$1-capture" "$CAPTURE"
  mark "$1-kept" "$(kept_start)"
  mark "$1-zero" "$(zero_lines)"
  mark "$1-status" "$(clock_status)"
}
# reload_mute MUTE: the config with mute = MUTE, through kioskctl reload.
reload_mute() {
  kioskd_config /tmp/k.toml "$(clock_config "$1")"
  mark "reload-$1" "$("$KIOSKCTL" reload --socket /tmp/k.sock 2>&1 | tr '\n' ' ')"
}

kioskd_start "$(clock_config false)"
mark ready-status "$(clock_status)"
clock_run sound
reload_mute true
clock_run muted
reload_mute false
clock_run again

# A restart after the period ended: the record still says "running since T with 3 s left";
# the horn must not sound again. A 15 s recording covers the start (marks restart-up-ms: from
# the recording's start to kioskd's first frame) and what follows.
kill -TERM "$KPID"; wait "$KPID"; mark stop-exit "$?"
if capture_start 15; then
  t0=$(now_us)
  kioskd_start "$(clock_config false)"
  mark restart-up-ms "$(( ($(now_us) - t0) / 1000 ))"
  capture_wait
  mark restart-capture "$CAPTURE"
else
  mark restart-capture "capture did not start: $(log_tail /tmp/cap.out)"
fi
mark restart-zero "$(zero_lines)"
mark restart-status "$(clock_status)"
kioskd_term
