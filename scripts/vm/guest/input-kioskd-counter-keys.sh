# shellcheck shell=bash
# input-kioskd-counter-keys: kioskd's counter on DRM driven by uinput keys, a tap, a swipe and a
# long press, with kioskctl setting values in between; the host compares screendumps at each
# wait_host.
mkdir -p /tmp/kstate
cat > /tmp/counter.toml <<TOML
state_dir = "/tmp/kstate"
[display]
backend = "drm"
[scenes]
order = ["count"]
[scene.count]
kind = "counter"
digits = 4
roll_ms = 0
[scene.count.keys]
KEY_UP = "increment"
KEY_KP_PLUS = "increment"
KEY_DOWN = "decrement"
[control]
socket = "/tmp/kioskd.sock"
TOML
export KIOSKD_SOCKET=/tmp/kioskd.sock
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
# kset VALUE: kioskctl counter count set VALUE, marks setVALUE with its exit status.
kset() { "$KIOSKCTL" counter count set "$1" >> /tmp/ctl.log 2>&1; mark "set$1" "$?"; }
"$KIOSKD" --config /tmp/counter.toml > /tmp/kioskd.log 2>&1 &
KPID=$!
wait_count /tmp/kioskd.log "first frame on screen" 1 30 $KPID > /dev/null
wait_count /tmp/kioskd.log "input: libinput on seat" 1 30 $KPID > /dev/null
mark started
wait_host 60
"$KIOSK_VMTOOL" keys --name kvm-keys --wait-log /tmp/kioskd.log --wait-text "input device added: kvm-keys" \
  KEY_UP*2 KEY_KP_PLUS KEY_DOWN KEY_UP > /tmp/t.log 2>&1
mark pressed "$?"
wait_host 60
kset 0
wait_host 60
kset 3
wait_host 60
# A tap on a uinput touchscreen (down and up at one point within 60 ms) increments.
"$KIOSK_VMTOOL" touch --name kvm-tap --wait-log /tmp/kioskd.log --wait-text "input device added: kvm-tap" \
  --stroke 0.5,0.5:0.5,0.5 --steps 1 --step-ms 30 >> /tmp/t.log 2>&1
mark tapped "$?"
wait_host 60
# 0004 drawn independently of the tap: from 0005, set by kioskctl.
kset 5
wait_host 60
kset 4
wait_host 60
# A swipe down decrements; a finger held still past long_press (800 ms) resets.
"$KIOSK_VMTOOL" touch --name kvm-swipe --wait-log /tmp/kioskd.log --wait-text "input device added: kvm-swipe" \
  --stroke 0.5,0.3:0.5,0.7 --steps 8 --step-ms 20 >> /tmp/t.log 2>&1
mark swiped "$?"
wait_host 60
"$KIOSK_VMTOOL" touch --name kvm-hold --wait-log /tmp/kioskd.log --wait-text "input device added: kvm-hold" \
  --stroke 0.5,0.5:0.5,0.5 --steps 1 --step-ms 1200 >> /tmp/t.log 2>&1
mark held "$?"
wait_host 60
if kill -0 $KPID 2>/dev/null; then mark alive yes; else mark alive no; fi
kill -TERM $KPID; wait $KPID; mark exit "$?"
mark log "$(cat /tmp/ctl.log /tmp/t.log /tmp/kioskd.log | gzip -c | base64 -w0)"
