# shellcheck shell=bash
# Guest prelude when systemd is PID 1 (scripts/vm/systemd-boot.sh): kiosk-test.service sources
# it before the scenario's script, once udev settled and basic.target is reached.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
cd "$REPO" || exit 1
# shellcheck source=lib/common.sh
. "$REPO/scripts/vm/guest/lib/common.sh"
open_host_port
t0=$(cut -d' ' -f1 /proc/uptime)
udevadm settle --timeout=30 >/dev/null 2>&1
mark udev-ready "$t0 $(cut -d' ' -f1 /proc/uptime)"
# The rest of the boot (basic.target), bounded; what is still queued is shown while waiting.
end=$((SECONDS + 120)); next=$((SECONDS + 10))
until [ "$(systemctl is-active basic.target)" = active ]; do
  if [ $SECONDS -ge $end ]; then systemctl list-jobs --no-pager | sed 's/@@//g' > /dev/console; mark harness-error "basic.target not reached in 120 s"; exit 1; fi
  if [ $SECONDS -ge $next ]; then next=$((SECONDS + 10)); echo "waiting for basic.target: $(systemctl list-jobs --no-pager --no-legend | tr -s ' \n' ' ' | cut -c1-300)" > /dev/console; fi
  sleep 0.3
done
mark basic "$t0 $(cut -d' ' -f1 /proc/uptime)"
# Where the boot spent its time: journal entries more than 2 s after the previous one.
mark boot-gaps "$(journalctl -b -q -o short-monotonic --no-hostname | awk '{ s = $0; sub(/^\[ */, "", s); t = s + 0; sub(/^[0-9.]+\] /, "", s); if (t - p > 2) printf "%.1f+%.1f %s|", p, t - p, substr(s, 1, 70); p = t }' | sed 's/@@//g' | cut -c1-900)"
mark systemd "$(systemctl --version | head -n 1) pid1=$(cat /proc/1/comm) state=$(systemctl is-system-running 2>&1)"
