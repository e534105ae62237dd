# shellcheck shell=bash
# input-libinput-output-permissions: map_to_output follows udev's WL_OUTPUT; calibration with
# rotation; the source without access to /dev/input.
# shellcheck source=lib/listen.sh
. "$REPO/scripts/vm/guest/lib/listen.sh"
# udev names the output of two panels (WL_OUTPUT, as a hwdb/rule on a real kiosk would).
mkdir -p /run/udev/rules.d
cat > /run/udev/rules.d/99-kiosk-output.rules <<'RULES'
SUBSYSTEM=="input", KERNEL=="event*", ATTRS{name}=="kvm-other", ENV{WL_OUTPUT}="DP-9"
SUBSYSTEM=="input", KERNEL=="event*", ATTRS{name}=="kvm-mine", ENV{WL_OUTPUT}="Virtual-1"
RULES
udevadm control --reload
EV=/tmp/ev.log
listen $EV --map-to-output Virtual-1
for n in kvm-other kvm-mine kvm-plain; do
  "$KIOSK_VMTOOL" touch --name $n --wait-log $EV --wait-text "device-added $n" --stroke 0.2,0.2:0.6,0.6 --steps 4 >> /tmp/t.log 2>&1
  wait_line $EV "device-removed $n"
done
kill $LISTENER; wait $LISTENER
mark events "$(gzip -c $EV | base64 -w0)"
# A calibration matrix that mirrors x, with the display turned 180 degrees.
EVC=/tmp/evc.log
listen $EVC --calibration "-1 0 1 0 1 0" --rotation 180
"$KIOSK_VMTOOL" touch --name kvm-cal --wait-log $EVC --wait-text "device-added kvm-cal" --stroke 0.2,0.3:0.6,0.3 --steps 4 >> /tmp/t.log 2>&1
wait_line $EVC "device-removed kvm-cal"
kill $LISTENER; wait $LISTENER
mark calibrated "$(gzip -c $EVC | base64 -w0)"
# Without permission on /dev/input: run the source as nobody while a touchscreen is plugged in.
"$KIOSK_VMTOOL" touch --name kvm-held --stroke 0.1,0.1:0.2,0.2 --steps 1 --hold-ms 15000 > /tmp/held.log 2>&1 &
HELD=$!
wait_line /tmp/held.log "drew"
udevadm settle --timeout=10
setpriv --reuid=65534 --regid=65534 --clear-groups "$KIOSK_VMTOOL" input-events --duration-ms 3000 > /tmp/perm.log 2>&1
mark perm-exit "$?"
mark perm "$(grep -v '^vmtool: event' /tmp/perm.log | tail -c 1500 | tr '\n@' '|_')"
kill $HELD; wait $HELD
