# shellcheck shell=bash
# kioskd-endurance-virtio: kioskd (counter on virtio-gpu) through N connector unplug/replug
# cycles and N touch devices plugged in and out; fds, threads and RSS reported per cycle.
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
ask_host how-many
N=$HOST_REPLY
mkdir -p /tmp/kstate
cat > /tmp/k.toml <<'TOML'
state_dir = "/tmp/kstate"
[display]
backend = "drm"
[gestures]
# A slow guest may stretch a tap; the counter must count every tap that finished.
tap_max_ms = 5000
long_press_ms = 20000
[scene.score]
kind = "counter"
digits = 4
roll_ms = 0
[[scene.score.counter]]
name = "HOME"
[control]
socket = "/tmp/k.sock"
TOML
"$KIOSKD" --config /tmp/k.toml --log-level info > /tmp/kioskd.log 2>&1 &
KPID=$!
n() { grep -c -- "$1" /tmp/kioskd.log; }
# wait_n TEXT COUNT SECONDS: bounded wait until the log has COUNT lines with TEXT.
wait_n() { local i=0; while [ "$(n "$1")" -lt "$2" ] && [ $i -lt $(( $3 * 10 )) ]; do kill -0 $KPID 2>/dev/null || return 1; sleep 0.1; i=$((i+1)); done; [ "$(n "$1")" -ge "$2" ]; }
stats() { echo "fds=$(find /proc/$KPID/fd -mindepth 1 -maxdepth 1 | wc -l) threads=$(sed -n 's/^Threads:[[:space:]]*//p' /proc/$KPID/status) rss_kb=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$KPID/status)"; }
if ! wait_n "first frame on screen" 1 120 || ! wait_n "input: libinput on seat" 1 60; then
  sed 's/@@//g' /tmp/kioskd.log | tail -n 30 > /dev/console; mark kioskd-up failed; exit 1
fi
mark kioskd-up "$(stats)"
ask_host shown 120
conn=$(ls -d /sys/class/drm/card0-Virtual-1)
off0=$(n "no connected output"); set0=$(n "mode set")
taps=0; cut=0; done_cycles=0
for i in $(seq 1 "$N"); do
  # The connector forced off, then back to detection (with the card's udev change event).
  echo off > "$conn/status"
  udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
  wait_n "no connected output" $((off0 + i)) 60 || { mark endure-error "cycle $i: kioskd did not see the connector go"; break; }
  echo detect > "$conn/status"
  udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
  wait_n "mode set" $((set0 + i)) 60 || { mark endure-error "cycle $i: no mode set after the connector came back"; break; }
  # A touchscreen plugged in and out: a tap, or (every other cycle) pulled out mid-stroke.
  name=endure-$i
  if [ $((i % 2)) -eq 1 ]; then
    "$KIOSK_VMTOOL" touch --name "$name" --wait-log /tmp/kioskd.log --wait-text "input device added: $name (" \
      --stroke 0.5,0.5:0.5,0.5 --steps 1 --step-ms 30 --settle-ms 50 --hold-ms 0 >> /tmp/t.log 2>&1 && taps=$((taps + 1))
  else
    "$KIOSK_VMTOOL" touch --name "$name" --wait-log /tmp/kioskd.log --wait-text "input device added: $name (" \
      --stroke 0.2,0.3:0.8,0.3 --stroke 0.8,0.7:0.2,0.7 --steps 10 --step-ms 20 --unplug-after 4 --settle-ms 50 >> /tmp/t.log 2>&1 && cut=$((cut + 1))
  fi
  wait_n "input device removed: $name (" 1 60 || { mark endure-error "cycle $i: kioskd did not see $name go"; break; }
  done_cycles=$i
  [ "$i" -eq 1 ] && mark first "$(stats)"
  mark progress "$i $(stats)"
done
mark end "cycles=$done_cycles $(stats) taps=$taps cut=$cut offs=$(( $(n 'no connected output') - off0 )) modesets=$(( $(n 'mode set') - set0 ))"
if kill -0 $KPID 2>/dev/null; then mark alive yes; else mark alive no; fi
mark value "$("$KIOSKCTL" counter HOME get --socket /tmp/k.sock 2>&1)"
"$KIOSKCTL" counter HOME set 0 --socket /tmp/k.sock > /dev/null 2>&1
mark reset "$?"
ask_host reset-shown 60
kill -TERM $KPID; wait $KPID; mark kioskd-exit "$?"
sed 's/@@//g' /tmp/kioskd.log | grep -iE "error|critical" | tail -n 10 > /dev/console
