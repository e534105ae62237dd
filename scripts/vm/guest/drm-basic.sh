# shellcheck shell=bash
# drm-basic-*: the probe on one display and API (API=atomic|legacy, BUFFERS=2|3; EXTRAS=1 also
# checks --list and the error messages). The host takes a screendump at each wait_host.
# shellcheck source=lib/probe.sh
. "$REPO/scripts/vm/guest/lib/probe.sh"
console_banner
ask_host console-ready 60
if [ "${EXTRAS:-0}" = 1 ]; then
  mark list "$("$KIOSK_VMTOOL" drm --list 2>&1 | tr '\n' '|' | sed 's/@@//g')"
  mark eacces "$(setpriv --reuid=65534 --regid=65534 --clear-groups "$KIOSK_VMTOOL" drm 2>/dev/null | head -n 1)"
  mark badoutput "$("$KIOSK_VMTOOL" drm --output HDMI-A-9 2>/dev/null | head -n 1)"
  mark badmode "$("$KIOSK_VMTOOL" drm --mode 1234x567@89 2>/dev/null | head -n 1)"
fi
probe_start --api "$API" --buffers "$BUFFERS"
cmd status status
wait_host 60
cmd fill fill ff0000
wait_host 60
cmd pattern pattern
wait_host 60
cmd rect1 rect 100 100 50 50 00ffff
cmd rect2 rect 300 100 50 50 ffff00
cmd rect3 rect 500 100 50 50 ff00ff
wait_host 60
cmd flips flips 30
wait_host 60
cmd blank blank 1
wait_host 60
cmd unblank blank 0
wait_host 60
probe_term
wait_host 60
probe_log 15
