# shellcheck shell=bash
# kioskd-connector-hotplug-virtio: the connector forced off and back to detection through its
# sysfs status (virtio-gpu does not poll connectors, so the card's udev change event is raised
# too); each change is awaited in kioskd's log.
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
conn=$(ls -d /sys/class/drm/card0-Virtual-1)
kioskd_start "$(printf '[display]\nbackend = "drm"\n')
$COUNTER_SCENE"
mark shown
wait_host 60
off0=$(grep -c "no connected output" /tmp/kioskd.log)
set0=$(grep -c "mode set" /tmp/kioskd.log)
echo off > "$conn/status"
udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
if wait_count /tmp/kioskd.log "no connected output" $((off0 + 1)) 30 "$KPID" > /dev/null; then mark seen-off yes; else mark seen-off no; fi
mark alive-off "$(kill -0 "$KPID" 2>/dev/null && echo yes || echo no)"
kioskd_status status-off
echo detect > "$conn/status"
udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
if wait_count /tmp/kioskd.log "mode set" $((set0 + 1)) 30 "$KPID" > /dev/null; then mark seen-on yes; else mark seen-on no; fi
mark alive-on "$(kill -0 "$KPID" 2>/dev/null && echo yes || echo no)"
kioskd_status status-on
wait_host 60
kioskd_term
kioskd_log 12
