# shellcheck shell=bash
# kioskd-power-cut: kioskd with its state on an ext4 disk; "stream N" runs N concurrent clients
# incrementing HOME (even clients) and AWAY (odd ones) and reports every acknowledged value on a
# virtio-serial port until the host cuts the power; "final" stops cleanly and runs e2fsck.
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
ask_host which-mode      # "stream N [eatmydata]": increment until the power goes; "final": check and stop cleanly
read -r -a reply <<< "$HOST_REPLY"
set -- "${reply[@]}"
MODE=${1:-} CLIENTS=${2:-1} PRELOAD=""
# Checking the check: with "eatmydata" every fsync of kioskd is a no-op, and cuts must lose values.
if [ "${3:-}" = eatmydata ]; then
  for lib in /usr/lib/*-linux-gnu/libeatmydata.so*; do [ -e "$lib" ] && PRELOAD=$lib && break; done
fi
wait_for_file /dev/vda 30 || { mark pc-error "no /dev/vda"; exit 1; }
mkdir -p /tmp/pc
if ! mount -t ext4 /dev/vda /tmp/pc; then mark pc-error "mount failed: $(dmesg | tail -n 5 | tr '\n@' ' _')"; exit 1; fi
mark mounted "$(grep ' /tmp/pc ' /proc/mounts) | replayed=$(dmesg | grep -c 'recovery complete')"
PORT=""
for p in /sys/class/virtio-ports/*; do [ "$(cat "$p/name" 2>/dev/null)" = kiosk.acks ] && PORT=/dev/${p##*/}; done
[ -c "$PORT" ] || { mark pc-error "no virtio-serial port kiosk.acks ($(cd /sys/class/virtio-ports 2>&1 && echo *))"; exit 1; }
cat > /tmp/k.toml <<'TOML'
state_dir = "/tmp/pc/state"
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
socket = "/tmp/k.sock"
TOML
LD_PRELOAD=$PRELOAD "$KIOSKD" --config /tmp/k.toml > /tmp/kioskd.log 2>&1 &
KPID=$!
i=0
while [ $i -lt 1200 ] && kill -0 $KPID 2>/dev/null && ! grep -q "control interface listening" /tmp/kioskd.log; do sleep 0.1; i=$((i+1)); done
values=""
for name in HOME AWAY; do
  if ! v=$("$KIOSKCTL" counter "$name" get --socket /tmp/k.sock --timeout 60 2>&1); then
    sed 's/@@//g' /tmp/kioskd.log | tail -n 20 > /dev/console; mark pc-error "kioskd did not answer: $v"; exit 1
  fi
  values="$values ${v##* = }"
done
mark recovery "damaged=$(grep -c 'damaged' /tmp/kioskd.log) bak=$(grep -c 'previous good copy' /tmp/kioskd.log) files=$(cd /tmp/pc/state && echo *)"
mark start-value "${values# }"
if [ "$MODE" = stream ]; then
  # One open file on the port for every writer (the port can be opened once at a time); each
  # line is one write(2), which returns only after QEMU has taken it.
  exec 4>"$PORT"
  # The pipeline's largest batch so far, one status after the other (each takes most of a
  # second under emulation; the host keeps the last one it got before the cut).
  ( while out=$("$KIOSKCTL" status --socket /tmp/k.sock --timeout 60 2>&1); do
      b=$(sed -n 's/^commits: .*(largest \([0-9]*\)).*/\1/p' <<< "$out")
      [ -n "$b" ] && echo "largest $b" >&4
      sleep 0.2
    done ) &
  mark streaming
  # The clients (lib/inc_clients.py: one thread and one kept-alive connection each, one request
  # in flight per client, each answer's value written to fd 4 before the next request).
  python3 "$REPO/scripts/vm/guest/lib/inc_clients.py" /tmp/k.sock 4 "$CLIENTS"
  sed 's/@@//g' /tmp/kioskd.log | tail -n 20 > /dev/console
  mark pc-error "the clients stopped before the power cut"
  exit 1
fi
kill -TERM $KPID; wait $KPID; mark kioskd-exit "$?"
umount /tmp/pc; mark umount "$?"
e2fsck -fn /dev/vda > /tmp/fsck.log 2>&1
mark fsck "$? $(tail -n 1 /tmp/fsck.log)"
