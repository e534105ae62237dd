# shellcheck shell=bash
# kioskd-time-unsynced: the RTC far off and no NTP client (no timesyncd, the kernel's clock
# unsynchronised): kioskd starts at once and the clock shows the "time not synchronised" mark;
# systemd-timesyncd's flag file appears and the mark goes (scripts/vm/scenarios_wall.py).
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
rm -rf /run/systemd/timesync
kioskd_start "$(printf '[display]\nbackend = "drm"\n[scenes]\norder = ["clock"]\n[scene.clock]\nkind = "clock"\nbackground = "theme"\nshow_label = false\n')"
kioskd_status status-unsynced
mark unsynced-shown "$EPOCHREALTIME"
wait_host 60
# What systemd-timesyncd does at its first successful sync.
mkdir -p /run/systemd/timesync
: > /run/systemd/timesync/synchronized
wait_count /tmp/kioskd.log "system clock synchronised" 1 30 "$KPID" > /dev/null
kioskd_status status-synced
mark synced "$EPOCHREALTIME"
wait_host 60
kioskd_term
kioskd_log 12
