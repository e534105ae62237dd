# shellcheck shell=bash
# input-libinput-touch: uinput touchscreens and a keyboard through kioskd's libinput source;
# the evemu recording ($KIOSK_VM_RUNDIR/panel.evemu, written by the host, device EVEMU_NAME).
# shellcheck source=lib/listen.sh
. "$REPO/scripts/vm/guest/lib/listen.sh"
EV=/tmp/ev0.log
listen $EV
# Two fingers at once on a tidy panel: a horizontal stroke and a vertical one.
"$KIOSK_VMTOOL" touch --name kvm-ideal --wait-log $EV --wait-text "device-added kvm-ideal" \
  --stroke 0.1,0.2:0.9,0.2 --stroke 0.2,0.9:0.2,0.3 --steps 8 --step-ms 20 > /tmp/t.log 2>&1
mark ideal "$?"
wait_line $EV "device-removed kvm-ideal"
# A real-world-like panel: 0-799 x 0-479, resolution 0, ABS_MT_TOOL_TYPE.
"$KIOSK_VMTOOL" touch --panel odd --name kvm-odd --wait-log $EV --wait-text "device-added kvm-odd" \
  --stroke 0.25,0.5:0.75,0.5 --steps 4 >> /tmp/t.log 2>&1
mark odd "$?"
wait_line $EV "device-removed kvm-odd"
# Ten fingers at once (vertical strokes side by side).
ten=()
for x in 0.05 0.15 0.25 0.35 0.45 0.55 0.65 0.75 0.85 0.95; do ten+=(--stroke "$x,0.2:$x,0.8"); done
"$KIOSK_VMTOOL" touch --name kvm-ten --wait-log $EV --wait-text "device-added kvm-ten" "${ten[@]}" --steps 6 >> /tmp/t.log 2>&1
mark ten "$?"
wait_line $EV "device-removed kvm-ten"
# Unplugged mid-stroke: both fingers must end cancelled, the listener must keep running.
"$KIOSK_VMTOOL" touch --name kvm-unplug --wait-log $EV --wait-text "device-added kvm-unplug" \
  --stroke 0.3,0.3:0.7,0.7 --stroke 0.7,0.3:0.3,0.7 --steps 10 --unplug-after 4 >> /tmp/t.log 2>&1
mark unplug "$?"
wait_line $EV "device-removed kvm-unplug"
# Keys after the unplug: the source still works.
"$KIOSK_VMTOOL" keys --name kvm-keys --wait-log $EV --wait-text "device-added kvm-keys" KEY_UP*2 KEY_KP_PLUS >> /tmp/t.log 2>&1
mark keys "$?"
wait_line $EV "device-removed kvm-keys"
# The evemu recording: its device first, then the events (three fingers, all lifted at the end).
evemu-device "$KIOSK_VM_RUNDIR/panel.evemu" > /tmp/evemu-device.log 2>&1 &
EPID=$!
wait_count /tmp/evemu-device.log /dev/input/event 1 10 > /dev/null
NODE=$(grep -o '/dev/input/event[0-9]*' /tmp/evemu-device.log | head -1)
wait_line $EV "device-added $EVEMU_NAME"
ups=$(grep -c "event touch up" $EV)
evemu-play "$NODE" < "$KIOSK_VM_RUNDIR/panel.evemu" > /tmp/evemu-play.log 2>&1
mark evemu "$? $NODE"
# All three fingers lifted (seen by the source) before the device goes.
wait_count $EV "event touch up" $((ups + 3)) 10 > /dev/null
kill $EPID; wait $EPID
wait_line $EV "device-removed $EVEMU_NAME"
if kill -0 $LISTENER; then mark alive yes; else mark alive no; fi
kill $LISTENER; wait $LISTENER
mark events "$(gzip -c $EV | base64 -w0)"
# Rotation 90: the same tidy stroke, seen by a listener told the display is turned.
EV2=/tmp/ev90.log
listen $EV2 --rotation 90
"$KIOSK_VMTOOL" touch --name kvm-rot --wait-log $EV2 --wait-text "device-added kvm-rot" \
  --stroke 0.1,0.2:0.9,0.2 --stroke 0.2,0.9:0.2,0.3 --steps 8 >> /tmp/t.log 2>&1
mark rot "$?"
wait_line $EV2 "device-removed kvm-rot"
kill $LISTENER; wait $LISTENER
mark events90 "$(gzip -c $EV2 | base64 -w0)"
mark tool "$(gzip -c /tmp/t.log | base64 -w0)"
