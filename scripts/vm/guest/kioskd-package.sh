# shellcheck shell=bash
# kioskd-package: the .deb (copied into the run directory by the host) installed with apt on a
# root without kioskd, offline (every dependency is already there); the unit the package enables
# and starts shows the clock; `apt-get remove` stops it and gives the console back; `apt-get
# purge` deletes /var/lib/kioskd and /etc/kioskd. systemd is PID 1 (systemd-boot.sh).
U=kioskd.service
export DEBIAN_FRONTEND=noninteractive
debs=("$KIOSK_VM_RUNDIR"/*.deb)
DEB=${debs[0]}
dump_journal() { journalctl -q -u "$U" -o short-monotonic --no-hostname | tail -n 30 | sed 's/@@//g' > /dev/console; }
# apt_tail LOG N: the last N non-empty lines of LOG on one line (dpkg writes carriage returns).
apt_tail() { tr -d '\r' < "$1" | sed 's/@@//g; /^ *$/d' | tail -n "${2:-15}" | tr '\n' '|' | cut -c1-900; }
exists() { if [ -e "$1" ]; then echo yes; else echo no; fi; }

mark fresh "kioskd=$(dpkg-query -W -f='${Status}' kioskd 2>/dev/null || echo not-installed)|bin=$(exists /usr/bin/kioskd)|state=$(exists /var/lib/kioskd)|deb=${DEB##*/}"
[ -f "$DEB" ] || { mark harness-error "no .deb in $KIOSK_VM_RUNDIR"; exit 1; }
# The clock in scaled colours, written before the install as an admin's config would be
# (dpkg keeps it: --force-confold); without a time source the "unsynchronised" mark is hidden.
mkdir -p /etc/kioskd
cat > /etc/kioskd/kioskd.toml <<'TOML'
[display]
backend = "drm"
[scenes]
order = ["clock"]
[scene.clock]
kind = "clock"
color_mode = "scaled"
unsynced = "ignore"
TOML

console_banner
ask_host console-ready 60
t0=$EPOCHREALTIME
# Offline: the VM has no network device, so a missing dependency fails here.
apt-get install -y -o Dpkg::Options::=--force-confold "$DEB" > /tmp/apt-install.log 2>&1
rc=$?
t1=$EPOCHREALTIME
wait_until 60 systemctl -q is-active "$U" || true
mark installed "rc=$rc|active=$(systemctl is-active "$U")|enabled=$(systemctl is-enabled "$U" 2>&1)|t=$t0 $t1|user=$(id kioskd 2>&1)|log=$(apt_tail /tmp/apt-install.log 6)"
if [ $rc != 0 ] || [ "$(systemctl is-active "$U")" != active ]; then apt_tail /tmp/apt-install.log 30 | tr '|' '\n' > /dev/console; dump_journal; exit 1; fi
mark shot1 "$EPOCHREALTIME"
wait_host 60
mark shot1-done "$EPOCHREALTIME"
mark shot2 "$EPOCHREALTIME"
wait_host 60
mark shot2-done "$EPOCHREALTIME"
mark unit "$(systemctl show -p MainPID -p User -p ExecMainStartTimestampMonotonic -p StatusText "$U" | tr '\n' '|' | sed 's/@@//g')|state=$(find /var/lib/kioskd -mindepth 1 -maxdepth 1 -printf "%f " 2>&1)"

apt-get remove -y kioskd > /tmp/apt-remove.log 2>&1
rc=$?
mark removed "rc=$rc|active=$(systemctl is-active "$U")|bin=$(exists /usr/bin/kioskd)|state=$(exists /var/lib/kioskd)|conf=$(exists /etc/kioskd/kioskd.toml)|getty=$(systemctl is-active getty@tty1.service)|log=$(apt_tail /tmp/apt-remove.log 4)"
wait_host 60

apt-get purge -y kioskd > /tmp/apt-purge.log 2>&1
rc=$?
mark purged "rc=$rc|status=$(dpkg-query -W -f='${Status}' kioskd 2>/dev/null || echo not-installed)|state=$(exists /var/lib/kioskd)|private=$(exists /var/lib/private/kioskd)|etc=$(exists /etc/kioskd)|unit=$(exists /usr/lib/systemd/system/kioskd.service)|log=$(apt_tail /tmp/apt-purge.log 4)"
