# shellcheck shell=bash
# input-libinput-usb-tablet: QEMU's usb-tablet, driven by the host through QMP, seen as one finger.
# shellcheck source=lib/listen.sh
. "$REPO/scripts/vm/guest/lib/listen.sh"
EV=/tmp/ev.log
listen $EV
wait_line $EV "device-added QEMU QEMU USB Tablet" 20
mark ready "$(grep device-added $EV | tr '\n@' '; ')"
wait_host 60
wait_line $EV "touch up" 20
kill $LISTENER; wait $LISTENER
mark events "$(gzip -c $EV | base64 -w0)"
