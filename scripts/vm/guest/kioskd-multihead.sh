# shellcheck shell=bash
# kioskd-multihead: one kioskd, two outputs on one virtio-gpu (heads=2): the clock on Virtual-1
# (head 0), the score counter on Virtual-2 (head 1), uinput touchscreens named kioskd-vm-touch*
# mapped to Virtual-2. First a config whose second output names a connector the card does not
# have (exit 78). Then: both scenes at once; a tap on head 1's HOME counter; Virtual-2 forced off
# (the clock's frame rate measured on each side of it) and on again; an increment by kioskctl on
# the reconnected head; SIGTERM. The host takes each head's screendump at every wait_host.
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
conn2=/sys/class/drm/card0-Virtual-2
# two_outputs CONNECTOR2 [TOUCH-OUTPUT]: the config body (clock on Virtual-1, score on CONNECTOR2;
# touchscreens named kioskd-vm-touch* mapped to TOUCH-OUTPUT).
two_outputs() {
  cat <<TOML
[display]
backend = "drm"
[[output]]
connector = "Virtual-1"
scenes = ["clock"]
[[output]]
connector = "$1"
scenes = ["score"]
TOML
  if [ -n "${2:-}" ]; then printf '[[input.device]]\nmatch = "kioskd-vm-touch*"\noutput = "%s"\n' "$2"; fi
  cat <<'TOML'
[scene.clock]
kind = "clock"
color_mode = "scaled"
unsynced = "ignore"
[scene.score]
kind = "counter"
shading = false
[[scene.score.counter]]
name = "HOME"
[[scene.score.counter]]
name = "AWAY"
TOML
}
counter() { "$KIOSKCTL" counter "$1" get --socket /tmp/k.sock 2>&1; }
exited() { ! kill -0 "$1" 2>/dev/null; }

console_banner
ask_host console-ready 60

# A second output on a connector the card does not have: kioskd exits 78 naming it.
kioskd_config /tmp/bad.toml "$(two_outputs Virtual-9)" /tmp/kbad.sock
TZ=UTC "$KIOSKD" --config /tmp/bad.toml > /tmp/bad.log 2>&1 &
bpid=$!
if wait_until 60 exited "$bpid"; then wait "$bpid"; mark bad-exit "$?"; else kill -9 "$bpid"; wait "$bpid"; mark bad-exit "still running after 60 s"; fi
mark bad-log "$(log_tail /tmp/bad.log 6)"
ask_host bad-done 60

kioskd_start "$(two_outputs Virtual-2 Virtual-2)"
wait_count /tmp/kioskd.log "input: libinput on seat" 1 30 "$KPID" > /dev/null
mark shot1 "$EPOCHREALTIME"
wait_host 60
mark shot1-done "$EPOCHREALTIME"
kioskd_status_at status1

# A tap at the middle of the left half of the touchscreen: HOME's half of head 1.
"$KIOSK_VMTOOL" touch --name kioskd-vm-touch-1 --wait-log /tmp/kioskd.log --wait-text "input device added: kioskd-vm-touch-1" \
  --stroke 0.25,0.5:0.25,0.5 --steps 1 --step-ms 30 > /tmp/t.log 2>&1
mark tapped "$?"
home_is_1() { [ "$(counter HOME)" = 1 ]; }
wait_until 20 home_is_1 || true
mark values "HOME=$(counter HOME) AWAY=$(counter AWAY)"
mark shot2 "$EPOCHREALTIME"
wait_host 60
mark shot2-done "$EPOCHREALTIME"

# Virtual-2 forced off (virtio-gpu does not poll connectors: the card's udev change event too).
kioskd_status_at before-off
lines=$(grep -c . /tmp/kioskd.log)
echo off > "$conn2/status"
udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
# Bounded wait for kioskd to say anything about Virtual-2 (what it says is up to it).
seen=no
if wait_until 20 eval "tail -n +$((lines + 1)) /tmp/kioskd.log | grep -q Virtual-2"; then seen=yes; fi
mark seen-off "$seen $(tail -n +$((lines + 1)) /tmp/kioskd.log | grep Virtual-2 | head -n 2 | sed 's/@@//g' | tr '\n' ' ' | cut -c1-300)"
kioskd_status_at off0
t_off0=$(now_us)
mark shot3 "$EPOCHREALTIME"
wait_host 60
mark shot3-done "$EPOCHREALTIME"
# The clock's frame rate is measured over at least 5 s with Virtual-2 off (a measuring window,
# not a wait for something to happen).
left=$(( 5000000 - ($(now_us) - t_off0) ))
if [ "$left" -gt 0 ]; then sleep "$(printf '%d.%06d' $((left / 1000000)) $((left % 1000000)))"; fi
kioskd_status_at off1
mark shot4 "$EPOCHREALTIME"
wait_host 60
mark shot4-done "$EPOCHREALTIME"

# Back on. Not `detect`: without a UI QEMU reports head 1 disabled, so detection would keep it
# disconnected; `on` forces it as the boot's video= argument did.
echo on > "$conn2/status"
udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
mark reconnected "$EPOCHREALTIME"
wait_host 60
"$KIOSKCTL" counter AWAY inc --socket /tmp/k.sock > /dev/null 2>&1
mark away-inc "$? $(counter AWAY)"
wait_host 60
kioskd_status_at status-end
mark alive "$(kill -0 "$KPID" 2>/dev/null && echo yes || echo no)"
kioskd_term
ask_host stopped 60
kioskd_log 20
