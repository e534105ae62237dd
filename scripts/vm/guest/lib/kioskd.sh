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
# kioskd_config FILE CONFIG-BODY [SOCKET]: writes a kioskd config (state in /tmp/kstate, the
# control socket SOCKET, default /tmp/k.sock) around CONFIG-BODY.
kioskd_config() {
  mkdir -p /tmp/kstate
  { echo 'state_dir = "/tmp/kstate"'; echo "$2"; printf '[control]\nsocket = "%s"\n' "${3:-/tmp/k.sock}"; } > "$1"
}
# kioskd_start CONFIG-BODY: writes /tmp/k.toml, starts kioskd in UTC and waits (bounded) for
# "first frame on screen" in its log; marks kioskd-up TIME (or kioskd-log with the log's last
# lines, then kioskd-up "failed", and exits).
kioskd_start() {
  kioskd_config /tmp/k.toml "$1"
  : > /tmp/kioskd.log
  TZ=UTC "$KIOSKD" --config /tmp/k.toml --log-level debug > /tmp/kioskd.log 2>&1 &
  KPID=$!
  if wait_count /tmp/kioskd.log "first frame on screen" 1 60 "$KPID" > /dev/null; then mark kioskd-up "$EPOCHREALTIME"; return 0; fi
  kioskd_log 40; mark kioskd-log "$(log_tail /tmp/kioskd.log 6)"; mark kioskd-up "failed"; kill -9 "$KPID" 2>/dev/null; exit 1
}
kioskd_log() { sed 's/@@//g' /tmp/kioskd.log | tail -n "${1:-40}" > /dev/console; }
# log_tail FILE [LINES]: the last lines of FILE as one marker payload (lines joined by " | ").
log_tail() { tail -n "${2:-6}" "$1" | sed 's/@@//g' | awk 'NF { printf "%s%s", (n++ ? " | " : ""), $0 }' | cut -c1-900; }
# kioskd_status NAME: marks NAME with `kioskctl status --json`.
kioskd_status() { mark "$1" "$("$KIOSKCTL" status --socket /tmp/k.sock --json 2>&1 | tr '\n' ' ' | sed 's/@@//g')"; }
# kioskd_status_at NAME: marks NAME with the guest's time (before kioskctl ran), a space and the status.
kioskd_status_at() {
  local t=$EPOCHREALTIME
  mark "$1" "$t $("$KIOSKCTL" status --socket /tmp/k.sock --json 2>&1 | tr '\n' ' ' | sed 's/@@//g')"
}
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
