# shellcheck shell=bash
# The DRM probe (kiosk-vmtool drm) as a coprocess, one command line and one reply at a time.

# probe_start ARGS…: starts the probe (its log goes to /tmp/probe.log).
probe_start() {
  coproc PROBE { exec "$KIOSK_VMTOOL" drm "$@" 2>/tmp/probe.log; }
  PROBE_KEEP_PID=$PROBE_PID
}
# cmd NAME ARGS…: sends the command ARGS to the probe and marks its reply as marker NAME.
cmd() {
  local name="$1"; shift
  echo "$*" >&"${PROBE[1]}"
  local reply=""
  if ! IFS= read -r -t 90 reply <&"${PROBE[0]}"; then reply="error no reply from probe"; fi
  mark "$name" "$reply"
}
probe_log() { sed 's/@@//g' /tmp/probe.log | tail -n "${1:-40}" > /dev/console; }
# probe_term: SIGTERM (the probe restores the CRTC), bounded wait, marks probe-exit STATUS.
probe_term() {
  local pid=$PROBE_KEEP_PID
  kill -TERM "$pid" 2>/dev/null
  local i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
  wait "$pid" 2>/dev/null; mark probe-exit "$?"
}
