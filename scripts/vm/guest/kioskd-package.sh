# shellcheck shell=bash
# kioskd-package: the .deb (copied into the run directory by the host) installed with apt on a
# root without kioskd, offline (every dependency is already there), with its own
# /etc/kioskd/kioskd.toml as shipped; the unit the package enables and starts shows the clock with
# the first-boot setup code over it; "the phone" (the page's API on the loopback address) pairs
# with that code as the owner and changes a setting, and the code leaves the screen; `apt-get
# remove` stops it and gives the console back; `apt-get purge` deletes /var/lib/kioskd and
# /etc/kioskd. systemd is PID 1 (systemd-boot.sh).
U=kioskd.service
export DEBIAN_FRONTEND=noninteractive
debs=("$KIOSK_VM_RUNDIR"/*.deb)
DEB=${debs[0]}
dump_journal() { journalctl -q -u "$U" -o short-monotonic --no-hostname | tail -n 30 | sed 's/@@//g' > /dev/console; }
# apt_tail LOG N: the last N non-empty lines of LOG on one line (dpkg writes carriage returns).
apt_tail() { tr -d '\r' < "$1" | sed 's/@@//g; /^ *$/d' | tail -n "${2:-15}" | tr '\n' '|' | cut -c1-900; }
exists() { if [ -e "$1" ]; then echo yes; else echo no; fi; }
# shellcheck source=lib/web.sh
. "$REPO/scripts/vm/guest/lib/web.sh"
setup_line() { kioskctl status 2>&1 | sed -n 's/^setup: //p' | sed 's/@@//g'; }

mark fresh "kioskd=$(dpkg-query -W -f='${Status}' kioskd 2>/dev/null || echo not-installed)|bin=$(exists /usr/bin/kioskd)|state=$(exists /var/lib/kioskd)|deb=${DEB##*/}"
[ -f "$DEB" ] || { mark harness-error "no .deb in $KIOSK_VM_RUNDIR"; exit 1; }
# No config is written: the package's /etc/kioskd/kioskd.toml as shipped (the clock in scaled
# colours, the phone page with the first-boot setup code). Without a time source the clock marks
# the time as not synchronised in its top-left corner; the host reads the colour elsewhere.

# man-db's trigger would index every manual page of the root (on x86 the host's, hundreds of
# packages) under TCG for many minutes: not what is tested here.
rm -f /var/lib/man-db/auto-update
# A build container's root (x86: the host's) may forbid starting services (policy-rc.d exit 101);
# a board's does not, and the package's postinst must start the unit.
rm -f /usr/sbin/policy-rc.d
console_banner
ask_host console-ready 60
t0=$EPOCHREALTIME
# Offline: the VM has no network device, so a missing dependency fails here.
apt-get install -y "$DEB" > /tmp/apt-install.log 2>&1
rc=$?
t1=$EPOCHREALTIME
wait_until 60 systemctl -q is-active "$U" || true
mark installed "rc=$rc|active=$(systemctl is-active "$U")|enabled=$(systemctl is-enabled "$U" 2>&1)|t=$t0 $t1|user=$(id kioskd 2>&1)|log=$(apt_tail /tmp/apt-install.log 6)"
if [ $rc != 0 ] || [ "$(systemctl is-active "$U")" != active ]; then apt_tail /tmp/apt-install.log 30 | tr '|' '\n' > /dev/console; dump_journal; exit 1; fi
# First boot: the setup code on the screen and in `kioskctl status`.
wait_until 30 sh -c 'kioskctl status 2>/dev/null | grep -q "^setup: waiting for an owner; code "' || true
setup=$(setup_line)
code=$(printf '%s' "$setup" | sed -n 's/.*#pair=\([A-Za-z0-9]*\).*/\1/p')
url=$(printf '%s' "$setup" | sed -n 's/.* on the screen (\(.*\))$/\1/p')
mark setup "setup=$setup|code=$code|url=$url|web=$(sed -n '/^\[web\]/,/^\[/p' /etc/kioskd/kioskd.toml | grep -E '^(listen|setup) ' | sed 's/ *#.*//' | tr '\n' ';')"
wait_host 60
# The owner's phone pairs with it and changes a setting; the file under /etc is not written.
conf=$(sha256sum /etc/kioskd/kioskd.toml | cut -c1-16)
pair=$(http POST /api/pair "{\"code\": \"$code\", \"name\": \"owner phone\"}" | tr -d '\r')
cookie=$(echo "$pair" | sed -n 's/^[Ss]et-[Cc]ookie: *\([^;]*\).*/\1/p' | head -n 1)
role=$(echo "$pair" | grep -o '"role" *: *"[a-z]*"' | sed 's/.*"\([a-z]*\)"$/\1/')
set=$(http PATCH /api/settings '{"scene.clock.hour_format": 12}' "$cookie" | tr -d '\r')
mark paired "pair=$(echo "$pair" | head -n 1 | cut -d' ' -f2)|cookie=${cookie:+yes}|role=$role|settings=$(echo "$set" | head -n 1 | cut -d' ' -f2)|hour_format=$(kioskctl config show scene.clock.hour_format 2>&1 | head -n 1 | sed 's/@@//g')|setup=$(setup_line)|conf_same=$([ "$(sha256sum /etc/kioskd/kioskd.toml | cut -c1-16)" = "$conf" ] && echo yes || echo no)|set_error=$(echo "$set" | grep -o '"error" *: *"[^"]*"' | cut -c1-200)"
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
