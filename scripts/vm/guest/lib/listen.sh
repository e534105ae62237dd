# shellcheck shell=bash
# kiosk-vmtool input-events (kioskd's libinput source, one "vmtool: event …" line per event).

# listen LOG [ARGS…]: starts the event printer in the background ($LISTENER) and waits until
# libinput is ready.
listen() {
  local log=$1; shift
  "$KIOSK_VMTOOL" input-events --duration-ms 120000 "$@" > "$log" 2>&1 &
  LISTENER=$!
  wait_count "$log" "input ready" 1 20 "$LISTENER" > /dev/null && return 0
  mark listener-failed "$(tail -c 300 "$log" | tr '\n@' ' _')"; return 1
}
# wait_line LOG TEXT [SECONDS]: bounded wait for a line containing TEXT.
wait_line() { wait_count "$1" "$2" 1 "${3:-10}" > /dev/null; }
