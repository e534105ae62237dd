# shellcheck shell=bash
# The real kioskd on DRM: start with a config body, status over kioskctl, SIGTERM.

KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
# The counter scene in the default theme, flat (no shading): white background, cyan windows.
# shellcheck disable=SC2034 # used by the scripts that source this
COUNTER_SCENE='[scenes]
order = ["counter"]
[scene.counter]
kind = "counter"
shading = false'
# kioskd_start CONFIG-BODY: writes /tmp/k.toml (state and socket in /tmp), starts kioskd in UTC and
# waits (bounded) for "first frame on screen" in its log; marks kioskd-up TIME (or "failed" and exits).
kioskd_start() {
  mkdir -p /tmp/kstate
  { echo 'state_dir = "/tmp/kstate"'; echo "$1"; printf '[control]\nsocket = "/tmp/k.sock"\n'; } > /tmp/k.toml
  : > /tmp/kioskd.log
  TZ=UTC "$KIOSKD" --config /tmp/k.toml --log-level debug > /tmp/kioskd.log 2>&1 &
  KPID=$!
  if wait_count /tmp/kioskd.log "first frame on screen" 1 60 "$KPID" > /dev/null; then mark kioskd-up "$EPOCHREALTIME"; return 0; fi
  kioskd_log 40; mark kioskd-up "failed"; kill -9 "$KPID" 2>/dev/null; exit 1
}
kioskd_log() { sed 's/@@//g' /tmp/kioskd.log | tail -n "${1:-40}" > /dev/console; }
# kioskd_status NAME: marks NAME with `kioskctl status --json`.
kioskd_status() { mark "$1" "$("$KIOSKCTL" status --socket /tmp/k.sock --json 2>&1 | tr '\n' ' ' | sed 's/@@//g')"; }
# kioskd_has_frames N: true once kioskctl status reports at least N frames presented.
kioskd_has_frames() {
  local n
  n=$("$KIOSKCTL" status --socket /tmp/k.sock --json 2>/dev/null | grep -o '"frames":[0-9]*' | head -n 1 | cut -d: -f2)
  [ -n "$n" ] && [ "$n" -ge "$1" ]
}
# kioskd_term: SIGTERM, bounded wait, marks kioskd-exit STATUS.
kioskd_term() {
  kill -TERM "$KPID"; local i=0
  while kill -0 "$KPID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
  wait "$KPID"; mark kioskd-exit "$?"
}
