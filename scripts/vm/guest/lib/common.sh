# shellcheck shell=bash
# Helpers shared by every guest script (both preludes source this).

# mark NAME [PAYLOAD]: tells the host something happened (a console marker; PAYLOAD without "@@").
# A carriage return or newline in PAYLOAD (apt's output ends progress lines with \r) becomes a
# space: a marker split over two lines is never seen by the host.
mark() { local p=${2:-}; p=${p//$'\r'/ }; echo "@@KIOSK:$1:${p//$'\n'/ }@@" > /dev/console; }
# ask_host NAME [TIMEOUT]: marks NAME, then waits for the host's answer (the script ends without one).
ask_host() { mark "$1"; wait_host "${2:-120}" || exit 1; }
# wait_for_file PATH [SECONDS]: bounded wait for a file (e.g. a device node) to appear.
wait_for_file() {
  local i=0
  while [ ! -e "$1" ] && [ $i -lt $(( ${2:-20} * 10 )) ]; do sleep 0.1; i=$((i+1)); done
  [ -e "$1" ]
}
# now_us: the wall clock in microseconds.
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
# wait_count FILE TEXT COUNT [SECONDS] [PID]: bounded wait (by the clock: each process start is
# slow under emulation) until FILE has COUNT lines containing TEXT (fixed string); stops early
# when PID (if given) has exited. Prints the count; true when it was reached.
wait_count() {
  local file=$1 text=$2 want=$3 end=$(( $(now_us) + ${4:-20} * 1000000 )) pid=${5:-} n
  while :; do
    n=$(grep -cF -- "$text" "$file" 2>/dev/null) || n=0
    if [ "$n" -ge "$want" ]; then echo "$n"; return 0; fi
    if [ "$(now_us)" -ge "$end" ] || { [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; }; then echo "$n"; return 1; fi
    sleep 0.1
  done
}
# wait_until SECONDS COMMAND…: polls COMMAND every 0.1 s for at most SECONDS (wall time).
wait_until() {
  local end=$(( $(now_us) + $1 * 1000000 )); shift
  while :; do "$@" && return 0; [ "$(now_us)" -ge "$end" ] && return 1; sleep 0.1; done
}
# console_banner: clears tty1 (the kernel's text console, shown while no DRM client is master),
# hides its cursor (no blink between two screendumps) and writes a few lines on it, so that "the
# console is back" can be told from a black screen by comparing with a screendump taken now.
console_banner() {
  printf '\033[2J\033[H\033[?25l' > /dev/tty1
  printf 'kioskd kernel test: the text console before the display client\n%s\n' "$(uname -r)" > /dev/tty1
  printf '0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz\n' > /dev/tty1
}

# The host answers on the second serial port (x86) or on the virtio-serial port kiosk.ctl
# (aarch64: `virt` has one UART), kept open (fd 5) for the whole script: the 8250 driver clears
# its receive FIFO whenever the port is opened, so a line the host sent while it was closed would
# be lost. Both preludes call this once.
host_port() {
  local d
  for d in /sys/class/virtio-ports/vport*; do
    if [ "$(cat "$d/name" 2>/dev/null)" = kiosk.ctl ]; then echo "/dev/${d##*/}"; return; fi
  done
  echo /dev/ttyS1
}
open_host_port() {
  local port
  port=$(host_port)
  if [ "$port" = /dev/ttyS1 ]; then stty -F /dev/ttyS1 raw -echo 2>/dev/null; fi
  exec 5<"$port"
}
# wait_host [TIMEOUT]: waits for one line from the host into $HOST_REPLY.
wait_host() {
  HOST_REPLY=""
  if ! IFS= read -r -t "${1:-120}" HOST_REPLY <&5; then mark harness-error "no host reply"; return 1; fi
  HOST_REPLY="${HOST_REPLY%$'\r'}"
}
