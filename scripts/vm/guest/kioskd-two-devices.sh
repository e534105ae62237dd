# shellcheck shell=bash
# kioskd-two-devices: one kioskd, two DRM devices (a virtio-gpu and a bochs-display, each a card
# of its own; card numbers follow the drivers' probe order). `kioskd --list-outputs` first; then
# the clock on the device named by its driver "virtio_gpu" and the score counter on "bochs-drm",
# no card number and no connector in the config. The host takes each device's screendump at every
# wait_host. Then the bochs device's connector is forced off, and then the device is unbound from
# its driver (unplugged): the virtio output's frames are counted across each. Last the bochs
# device is bound again and the host looks for the counter on it.
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
# card_of DRIVER: the /sys/class/drm/cardN whose device is bound to DRIVER (a PCI driver's name).
card_of() {
  local c
  for c in /sys/class/drm/card[0-9]; do
    [ "$(basename "$(readlink -f "$c/device/driver")")" = "$1" ] && { echo "$c"; return; }
  done
}
bochs=$(card_of bochs-drm)
mark cards "bochs-drm=$(basename "$bochs") by-path: $(cd /dev/dri/by-path && echo *)"
"$KIOSKD" --list-outputs > /tmp/list.txt 2>&1
mark list-exit "$?"
mark list "$(sed 's/@@//g' /tmp/list.txt | awk '{ printf "%s%s", (n++ ? " | " : ""), $0 }' | cut -c1-1500)"

kioskd_start '[display]
backend = "drm"
[[output]]
device = "virtio_gpu"
scenes = ["clock"]
[[output]]
device = "bochs-drm"
scenes = ["score"]
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
name = "AWAY"'
# Both outputs have shown a frame (kioskd_start waited for the first one).
wait_count /tmp/kioskd.log "first frame on screen" 2 30 "$KPID" > /dev/null || true
mark opened "$(grep -F 'opened DRM device' /tmp/kioskd.log | sed 's/@@//g' | cut -c1-200 | tr '\n' ' ')"
mark shot1 "$EPOCHREALTIME"
wait_host 60
mark shot1-done "$EPOCHREALTIME"
kioskd_status_at status1

# The bochs device's connector forced off (and the card's udev change event).
for bconn in "$bochs"-*; do break; done
mark bochs-connector "$(basename "$bconn")"
kioskd_status_at before-off
echo off > "$bconn/status"
udevadm trigger --action=change --subsystem-match=drm --sysname-match="$(basename "$bochs")"
sleep 1
kioskd_status_at off0
sleep 5
kioskd_status_at off1
mark shot2 "$EPOCHREALTIME"
wait_host 60
mark shot2-done "$EPOCHREALTIME"

# The bochs device unplugged: unbound from its driver (its card node goes away).
pci=$(basename "$(readlink -f "$bochs/device")")
rc=0
printf '%s' "$pci" > /sys/bus/pci/drivers/bochs-drm/unbind || rc=$?
mark unbound "$rc $(cd /dev/dri && echo *)"
sleep 1
kioskd_status_at gone0
sleep 5
kioskd_status_at gone1
mark shot3 "$EPOCHREALTIME"
wait_host 60
mark shot3-done "$EPOCHREALTIME"
# The bochs device bound to its driver again: its node comes back (udev add) and kioskd shows
# the counter there again.
rc=0
printf '%s' "$pci" > /sys/bus/pci/drivers/bochs-drm/bind || rc=$?
udevadm settle -t 10 || true
mark rebound "$rc $(cd /dev/dri && echo *)"
wait_host 60
mark alive "$(kill -0 "$KPID" 2>/dev/null && echo yes || echo no)"
mark kioskd-said "$(grep -E 'bochs|card[0-9]|removed|no connected' /tmp/kioskd.log | sed 's/@@//g' | tail -n 4 | cut -c1-200 | tr '\n' ' ')"
kioskd_term
kioskd_log 20
