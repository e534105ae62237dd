# shellcheck shell=bash
# input-libinput-usb-tablet: QEMU's usb-tablet, driven by the host through QMP, seen as one finger.
# shellcheck source=lib/listen.sh
. "$REPO/scripts/vm/guest/lib/listen.sh"
EV=/tmp/ev.log
listen $EV
wait_line $EV "device-added QEMU QEMU USB Tablet" 20
mark ready "$(grep device-added $EV | tr '\n@' '; ')"
wait_host 60
# The host presses, moves in five steps and releases, each step once the previous one was seen.
if wait_line $EV "touch down" 20; then mark down; fi
for i in 1 2 3 4 5; do
  if wait_count $EV "touch motion" $i 20 > /dev/null; then mark "moved$i"; fi
done
wait_line $EV "touch up" 20
kill $LISTENER; wait $LISTENER
mark events "$(gzip -c $EV | base64 -w0)"
