# shellcheck shell=bash
# kioskd-no-monitor: the only head of a virtio-gpu forced off on the kernel command line
# (video=Virtual-1:d), as a TV switched off at boot. kioskd starts with a notification socket
# standing in for systemd's (lib/notify_listen.py): it must say READY=1 with a STATUS= that it
# waits for a display, and stay up. Then the connector is forced on through sysfs — no udev
# event is raised (virtio-gpu does not poll its connectors) — and the host looks for the clock.
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
conn=/sys/class/drm/card0-Virtual-1
mark head-before "$(cat "$conn/status" 2>&1)"
python3 -u "$REPO/scripts/vm/guest/lib/notify_listen.py" /tmp/notify.sock > /tmp/notify.log 2>&1 &
NPID=$!
wait_until 20 test -S /tmp/notify.sock || { mark harness-error "the notification socket did not appear"; exit 1; }
kioskd_config /tmp/k.toml '[display]
backend = "drm"
[scene.clock]
kind = "clock"
color_mode = "scaled"
unsynced = "ignore"'
: > /tmp/kioskd.log
# Each log line with the guest's time, for the time each step took after the connector appeared
# (through a FIFO: the guest has no /dev/fd for a process substitution).
mkfifo /tmp/kioskd.fifo
while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done < /tmp/kioskd.fifo > /tmp/kioskd.log &
TZ=UTC NOTIFY_SOCKET=/tmp/notify.sock "$KIOSKD" --config /tmp/k.toml --log-level debug > /tmp/kioskd.fifo 2>&1 &
KPID=$!
t_start=$EPOCHREALTIME
if wait_count /tmp/notify.log "READY=1" 1 90 "$KPID" > /dev/null; then
  mark ready "$t_start $(grep -m1 -F 'READY=1' /tmp/notify.log | cut -d' ' -f1)"
else
  kioskd_log 30; mark ready "none"
fi
mark status-waiting "$(grep -F 'STATUS=' /tmp/notify.log | tail -n 1 | cut -d' ' -f2- | sed 's/@@//g' | cut -c1-400)"
# Still up a while later (no exit, no restart needed): 3 s of waiting.
sleep 3
mark alive-waiting "$(kill -0 "$KPID" 2>/dev/null && echo yes || echo no) $(grep -c 'first frame on screen' /tmp/kioskd.log)"
kioskd_status status-waiting-ctl
ask_host before-on 60
# The TV is switched on: forced on through sysfs, and nothing else.
mark forced-on "$EPOCHREALTIME"
echo on > "$conn/status"
mark head-after "$(cat "$conn/status" 2>&1)"
wait_count /tmp/kioskd.log "first frame on screen" 1 30 "$KPID" > /dev/null
# The time of each step after the connector was forced on: seen, mode set, first frame.
step() { grep -m1 -F "$1" /tmp/kioskd.log | cut -d' ' -f1; }
mark steps "$(step 'connectors changed') $(step 'output ready') $(step 'mode set') $(step 'first frame on screen')"
mark first-frame "$(grep -m1 -F 'first frame on screen' /tmp/kioskd.log | cut -d' ' -f2- | sed 's/@@//g' | cut -c1-300)"
wait_host 60
mark notify-after "$(grep -cF 'READY=1' /tmp/notify.log) $(grep -F 'STATUS=' /tmp/notify.log | tail -n 1 | cut -d' ' -f2- | sed 's/@@//g' | cut -c1-400)"
kioskd_status status-shown
kioskd_term
kill "$NPID" 2>/dev/null
kioskd_log 15
