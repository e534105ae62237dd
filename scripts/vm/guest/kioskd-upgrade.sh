# shellcheck shell=bash
# kioskd-upgrade: kioskd N installed from the signed apt repository (a file: URI in the run
# directory, Signed-By the repository's key), the admin's edits to /etc/kioskd/kioskd.toml (the
# score scene, a light theme, [web]), a score set and a phone paired; then the repository moves
# to N+1 and `apt-get upgrade` runs during a burst of counter increments from this guest: the
# score, the pairing and the edited conffile are kept without a prompt, the unit runs N+1, and
# every acknowledged increment is in the final value. Then a downgrade to N: kioskd refuses the
# state N+1 wrote (exit 78, both versions named) and leaves its bytes alone. systemd is PID 1.
U=kioskd.service
export DEBIAN_FRONTEND=noninteractive
R=$KIOSK_VM_RUNDIR
VN=$(cat "$R/version-n"); VN1=$(cat "$R/version-n1")
apt_tail() { tr -d '\r' < "$1" | sed 's/@@//g; /^ *$/d' | tail -n "${2:-15}" | tr '\n' '|' | cut -c1-700; }
dump_journal() { journalctl -q -u "$U" -o short-monotonic --no-hostname | tail -n 30 | sed 's/@@//g' > /dev/console; }
use_repo() {  # apt-n or apt-n1: the repository as it is at version N or N+1
  cat > /etc/apt/sources.list.d/kioskd.sources <<SRC
Types: deb
URIs: file:$R/$1
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/kioskd-archive-keyring.gpg
SRC
  apt-get update > "/tmp/apt-update-$1.log" 2>&1
}
# shellcheck source=lib/web.sh
. "$REPO/scripts/vm/guest/lib/web.sh"
state_sums() { find /var/lib/kioskd -type f ! -name kioskd.lock -printf '%P ' -exec sha256sum {} \; 2>&1 | awk '{ print $1, $2 }' | sort | sha256sum | cut -c1-16; }
ctl_wait() { wait_until "$1" kioskctl status > /dev/null 2>&1; }

# The VM has no network: Debian's own sources are put away, kioskd's is the only one.
mkdir -p /root/apt-sources-away
mv /etc/apt/sources.list /etc/apt/sources.list.d/* /root/apt-sources-away/ 2>/dev/null || true
install -m 0644 "$R/apt-n/kioskd-archive-keyring.gpg" /usr/share/keyrings/kioskd-archive-keyring.gpg
use_repo apt-n
t0=$EPOCHREALTIME
apt-get install -y kioskd > /tmp/apt-install.log 2>&1
rc=$?
t1=$EPOCHREALTIME
mark installed "rc=$rc|version=$(dpkg-query -W -f='${Version}' kioskd 2>&1)|active=$(systemctl is-active "$U")|t=$t0 $t1|update=$(apt_tail /tmp/apt-update-apt-n.log 2)|log=$(apt_tail /tmp/apt-install.log 3)"
[ $rc = 0 ] || { apt_tail /tmp/apt-install.log 30 | tr '|' '\n' > /dev/console; exit 1; }

# The admin's edits: the score scene first, the museum theme (a light background, unlike the
# console), and the packaged phone page moved to the loopback address, without the first-boot
# setup code (this kiosk is set up over SSH; the code's card would cover the score).
sed -i 's/^theme = "default"/theme = "museum"/; s/^order = \["clock"\]/order = ["score", "clock"]/' /etc/kioskd/kioskd.toml
sed -i 's|^listen = "0.0.0.0:8080".*|listen = "127.0.0.1:8080"\nurl = "http://127.0.0.1:8080/"|; s/^setup = true .*/setup = false/' /etc/kioskd/kioskd.toml
grep -q '^listen = "127.0.0.1:8080"' /etc/kioskd/kioskd.toml || { mark harness-error "the packaged config has no [web] listen = \"0.0.0.0:8080\" to edit"; exit 1; }
cat >> /etc/kioskd/kioskd.toml <<'TOML'

[scene.score]
kind = "counter"
[[scene.score.counter]]
name = "HOME"
TOML
cp /etc/kioskd/kioskd.toml /tmp/kioskd.toml.edited
# The packaged unit allows IP to the local network only; the drop-in is what an owner would write for another network (docs/install.md).
mkdir -p /etc/systemd/system/kioskd.service.d
printf '[Service]\nRestrictAddressFamilies=AF_UNIX AF_NETLINK AF_INET AF_INET6\nIPAddressAllow=localhost\n' > /etc/systemd/system/kioskd.service.d/web.conf
systemctl daemon-reload
systemctl restart "$U"
ctl_wait 60 || { dump_journal; mark harness-error "kioskd did not answer after the config edit: kioskctl status: $(kioskctl status 2>&1 | tr '\n' ' ' | sed 's/@@//g' | cut -c1-300) (exit $?)"; exit 1; }
kioskctl counter HOME set 42 > /dev/null
code=$(kioskctl pair --role owner --print 2>&1 | sed -n 's/^code: *//p')
pair=$(http POST /api/pair "{\"code\": \"$code\", \"name\": \"phone\"}" | tr -d '\r')
cookie=$(echo "$pair" | sed -n 's/^[Ss]et-[Cc]ookie: *\([^;]*\).*/\1/p' | head -n 1)
session() { http GET /api/session "" "$cookie" | tr -d '\r' | head -n 1 | cut -d' ' -f2; }
# A setting from the owner's phone (the settings layer in the state directory, not the conffile):
# the clock scene's hour format, which the score's screen does not show.
set=$(http PATCH /api/settings '{"scene.clock.hour_format": 12}' "$cookie" | tr -d '\r' | head -n 1 | cut -d' ' -f2)
setting() { kioskctl config show scene.clock.hour_format 2>&1 | head -n 1 | sed 's/@@//g' | tr '|' ' ' | cut -c1-200; }
mark prepared "score=$(kioskctl counter HOME get 2>&1)|code=${code:+yes}|cookie=${cookie:+yes}|session=$(session)|devices=$(kioskctl devices 2>&1 | cut -f1,2 | tr '\t\n' ' ;')|version=$(kioskctl status 2>&1 | sed -n 's/^version: //p')|settings=$set|setting=$(setting)"
wait_until 20 sh -c 'journalctl -q -u kioskd.service | grep -q "first frame on screen"' || true
mark score-shown "$EPOCHREALTIME"
wait_host 60

# The burst: increments one after another until told to stop; each acknowledged one ("ok VALUE")
# or not ("fail …") is logged.
rm -f /tmp/stop-burst /tmp/burst.log
( while [ ! -e /tmp/stop-burst ]; do
    if v=$(kioskctl counter HOME inc 2>&1); then echo "ok $v"; else echo "fail $(echo "$v" | tr '\n' ' ')"; sleep 0.2; fi
  done > /tmp/burst.log 2>&1 ) &
burst=$!
# shellcheck disable=SC2016 # expanded by sh -c
wait_until 60 sh -c '[ "$(grep -c "^ok" /tmp/burst.log)" -ge 2 ]' || true
use_repo apt-n1
mark upgrading "$EPOCHREALTIME"
t0=$EPOCHREALTIME
apt-get upgrade -y > /tmp/apt-upgrade.log 2>&1
rc=$?
t1=$EPOCHREALTIME
wait_until 60 sh -c "kioskctl status 2>/dev/null | grep -qx 'version: kioskd ${VN1%-*}'" || true
# A few more acknowledged increments by the new kioskd, then the burst ends.
n=$(grep -c '^ok' /tmp/burst.log)
wait_until 60 sh -c "[ \$(grep -c '^ok' /tmp/burst.log) -ge $((n + 3)) ]" || true
touch /tmp/stop-burst
wait "$burst"
acked=$(grep -c '^ok' /tmp/burst.log); failed=$(grep -c '^fail' /tmp/burst.log)
final=$(kioskctl counter HOME get 2>&1)
# The restart: systemd's "Stopping" of the old kioskd to the new one's first frame (journal, monotonic).
gap=$(journalctl -q -u "$U" --since "@${t0%.*}" -o short-monotonic --no-hostname | tr -d '[]' | awk '
  /Stopping kioskd.service/ { s = $1 } s && /first frame on screen/ && !f { f = $1 } END { if (s && f) printf "%.2f", f - s; else print "?" }')
# The restart's steps as systemd and kioskd logged them (monotonic seconds), for the report.
restart=$(journalctl -q -u "$U" --since "@${t0%.*}" -o short-monotonic --no-hostname | tr -d '[]' \
  | grep -E 'Stopping|Stopped|Starting|Started|timed out|Failed|Main process exited|restart|first frame on screen|READY' \
  | head -n 12 | sed 's/@@//g' | cut -c1-110 | tr '\n' ';')
mark upgraded "rc=$rc|t=$t0 $t1|version=$(kioskctl status 2>&1 | sed -n 's/^version: //p')|dpkg=$(dpkg-query -W -f='${Version}' kioskd)|active=$(systemctl is-active "$U")|conf_kept=$(cmp -s /etc/kioskd/kioskd.toml /tmp/kioskd.toml.edited && echo yes || echo no)|dist=$(find /etc/kioskd -name 'kioskd.toml.dpkg-*' | tr '\n' ' ')|prompt=$(grep -c -i "configuration file\|modified (by you" /tmp/apt-upgrade.log)|acked=$acked|failed=$failed|first=$(grep -m1 '^ok' /tmp/burst.log | awk '{ print $NF }')|last=$(grep '^ok' /tmp/burst.log | tail -n 1 | awk '{ print $NF }')|final=$final|session=$(session)|devices=$(kioskctl devices 2>&1 | cut -f1,2 | tr '\t\n' ' ;')|setting=$(setting)|gap=$gap|restart=$restart|fails=$(grep -m2 '^fail' /tmp/burst.log | tr '\n' ';' | cut -c1-200)|log=$(apt_tail /tmp/apt-upgrade.log 4)"
[ $rc = 0 ] || { apt_tail /tmp/apt-upgrade.log 30 | tr '|' '\n' > /dev/console; dump_journal; }
wait_host 60

# The downgrade: apt does what it is told; kioskd N refuses the state N+1 wrote. The unit is
# stopped first so that the state's bytes are compared with what N+1 left at its stop.
systemctl stop "$U"
before=$(state_sums)
use_repo apt-n
apt-get install -y --allow-downgrades "kioskd=$VN" > /tmp/apt-downgrade.log 2>&1
rc=$?
wait_until 60 systemctl -q is-failed "$U" || true
why=$(journalctl -q -u "$U" -o cat | grep -m1 'written by kioskd' | sed 's/@@//g' | cut -c1-400)
mark downgraded "rc=$rc|dpkg=$(dpkg-query -W -f='${Version}' kioskd)|active=$(systemctl is-active "$U")|status=$(systemctl show -p ExecMainStatus --value "$U")|same=$([ "$before" = "$(state_sums)" ] && echo yes || echo no)|version_file=$(tr '\n' ' ' < /var/lib/kioskd/kioskd.version)|why=$why|postinst=$(grep -m1 'refuse' /tmp/apt-downgrade.log | sed 's/@@//g' | cut -c1-300)"
