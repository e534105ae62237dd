# shellcheck shell=bash
# systemd-unit: kioskd installed by scripts/install.sh and driven with systemctl under systemd 252
# as PID 1 (scripts/vm/systemd-boot.sh).
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
CONF=/etc/kioskd/kioskd.toml
U=kioskd.service
prop() { systemctl show -p "$1" --value "$U"; }
props() { systemctl show -p ActiveState -p SubState -p Result -p MainPID -p NRestarts -p ExecMainStatus -p StatusText "$U" | tr '\n' '|' | sed 's/@@//g'; }
cursor() { journalctl -q -n 1 -o cat --show-cursor | sed -n 's/^-- cursor: //p'; }
# kioskd's journal lines at priority warning or more important: nwarn counts them, jwarn N prints
# those after the first N (journalctl -p does not combine with --after-cursor in systemd 252).
nwarn() { journalctl -q -u "$U" -p warning -o cat | wc -l; }
jwarn() { journalctl -q -u "$U" -p warning -o cat | tail -n +$(( $1 + 1 )) | sed 's/@@//g'; }
# jprio CURSOR: PRIORITY and MESSAGE of kioskd's journal entries after CURSOR.
jprio() { journalctl -q -u "$U" --after-cursor="$1" -o export | grep -aE '^(PRIORITY|MESSAGE)=' | tr '\n' '|' | sed 's/@@//g' | cut -c1-900; }
dump_journal() { journalctl -q -u "$U" -o short-monotonic --no-hostname | tail -n "${1:-25}" | sed 's/@@//g' > /dev/console; }

# --- install as documented: scripts/install.sh (the user, the unit, /etc/kioskd) ---
ti=$(cut -d' ' -f1 /proc/uptime)
# (bash ignores PS4 from the environment when run as root: set it inside, then source the script)
BINDIR="$(dirname "$KIOSKD")" bash -c 'PS4="+ \${EPOCHREALTIME} "; set -x; . "$0" "$@"' scripts/install.sh --no-build > /tmp/install.log 2>&1
rc=$?
mark install-trace "$(grep -a '^+* [0-9]' /tmp/install.log | sed 's/^+* /+ /' | cut -c1-90 | tr '\n' '|' | sed 's/@@//g')"
mark install "$rc|$ti $(cut -d' ' -f1 /proc/uptime)|$(id kioskd 2>&1)|$(grep -E '^(ExecStart|ExecStartPre|LimitNOFILE|LimitNICE)=' /etc/systemd/system/kioskd.service | tr '\n' ' ')"
if [ $rc != 0 ]; then sed 's/@@//g' /tmp/install.log | tail -n 20 > /dev/console; exit 1; fi
mark groups "video=$(getent group video | cut -d: -f3) input=$(getent group input | cut -d: -f3) render=$(getent group render | cut -d: -f3) kioskd=$(id -u kioskd):$(id -g kioskd)"
cat > "$CONF" <<'TOML'
[display]
backend = "drm"
[scenes]
order = ["clock", "score"]
[scene.clock]
kind = "clock"
color_mode = "scaled"
unsynced = "ignore"
[scene.score]
kind = "counter"
shading = false
[[scene.score.counter]]
name = "HOME"
TOML
cp "$CONF" /tmp/good.toml
sed 's/color_mode = "scaled"/color_mode = "rainbow"/' /tmp/good.toml > /tmp/bad.toml
BADLINE=$(grep -n 'color_mode' /tmp/bad.toml | cut -d: -f1)
journalctl -f -q -u "$U" -o cat > /tmp/kj.log 2>&1 &

# --- the text console before kioskd, for "the console is back on stop" ---
console_banner
mark console-ready
wait_host 60
# --- start: active only once the first frame is on screen ---
systemctl start "$U"
rc=$?
mark active "rc=$rc|t=$EPOCHREALTIME|$(props)"
wait_host 60
mark shot1-done "$EPOCHREALTIME"
ff=$(journalctl -q -u "$U" -o short-monotonic --no-hostname | grep -m1 'first frame on screen' | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p')
mark timing "first_frame=${ff:-none} active_us=$(prop ActiveEnterTimestampMonotonic) exec_us=$(prop ExecMainStartTimestampMonotonic)"
if [ $rc != 0 ]; then dump_journal 30; exit 1; fi

# --- the process and its sandbox ---
PID=$(prop MainPID)
mark creds "$(grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/"$PID"/status | tr -s '\t\n' '  ')"
mark limits "$(grep -E '^Max open files' /proc/"$PID"/limits | tr -s ' ')"
mark mounts "$(grep -E ' /(run|run/systemd|etc/kioskd|tmp|dev/shm) ' /proc/"$PID"/mountinfo | cut -d' ' -f5,6 | tr '\n' ';')"
# What is writable in kioskd's mount namespace, even for root (the read-only view of the
# sandbox), and then for the kioskd user with its groups (as the unit runs it).
# shellcheck disable=SC2016 # expanded by the shell in the unit's namespace
PROBE='for d in "$@"; do
  if out=$(touch "$d/.kiosk-probe" 2>&1); then rm -f "$d/.kiosk-probe"; printf "%s=writable " "$d"
  else case "$out" in *"Read-only"*) printf "%s=ro " "$d" ;; *"ermission denied"*) printf "%s=denied " "$d" ;; *) printf "%s=other " "$d" ;; esac; fi
done'
mark writable "$(nsenter -t "$PID" -m -- /bin/sh -c "$PROBE" sh / /etc /etc/kioskd /usr /usr/local/bin /opt /var /var/lib \
  /var/log /var/cache /srv /root /home /run /run/systemd "$REPO" /dev/shm /var/lib/kioskd /run/kioskd /tmp /var/tmp 2>&1)"
mark user-writable "$(nsenter -t "$PID" -m -- setpriv --reuid=kioskd --regid=kioskd --init-groups /bin/sh -c "$PROBE" sh \
  /var/lib/kioskd /run/kioskd /etc/kioskd /var/lib /run /dev/shm /tmp 2>&1)"

# --- control socket, state in the StateDirectory, input as the kioskd user ---
touch /tmp/stamp; sleep 0.01
"$KIOSKCTL" scene score > /dev/null 2>&1
inc=$("$KIOSKCTL" counter HOME inc 2>&1)
mark inc "$(echo "$inc" | tr '\n' ' ' | sed 's/@@//g')|$("$KIOSKCTL" counter HOME get 2>&1)"
mark state "$(stat -c '%U:%G %a' /var/lib/kioskd)|$(find /var/lib/kioskd -maxdepth 2 -type f -newer /tmp/stamp -printf '%u:%f ' 2>&1)"
"$KIOSK_VMTOOL" touch --name sd-tap --wait-log /tmp/kj.log --wait-text "input device added: sd-tap" \
  --stroke 0.5,0.5:0.5,0.5 --steps 1 --step-ms 30 > /tmp/tap.log 2>&1
tapped() { [ "$("$KIOSKCTL" counter HOME get 2>/dev/null)" = 2 ]; }
wait_until 20 tapped
mark tap "$("$KIOSKCTL" counter HOME get 2>&1)|$(grep -m1 'input device added: sd-tap' /tmp/kj.log | sed 's/@@//g')"
"$KIOSKCTL" scene clock > /dev/null 2>&1

# --- watchdog: a stopped render loop is killed and restarted, the picture comes back ---
P1=$(prop MainPID)
C=$(cursor)
kill -STOP "$P1"
mark hung "pid=$P1|t=$EPOCHREALTIME|watchdog=$(prop WatchdogUSec)"
restarted() { local p; p=$(prop MainPID); [ "$(prop ActiveState)" = active ] && [ "$p" != "$P1" ] && [ "$p" != 0 ]; }
wait_until 90 restarted
mark restarted "t=$EPOCHREALTIME|$(props)"
wait_host 60
mark shot2-done "$EPOCHREALTIME"
mark wd-journal "$(journalctl -q -u "$U" -o cat --after-cursor="$C" | grep -iE 'watchdog|signal|Scheduled restart' | head -n 4 | tr '\n' '|' | sed 's/@@//g')"
mark after-restart "$("$KIOSKCTL" counter HOME get 2>&1)|$("$KIOSKCTL" status --json 2>&1 | tr '\n' ' ' | sed 's/@@//g' | cut -c1-300)"

# --- reload with a bad config: keeps running, the journal names file:line:key ---
P2=$(prop MainPID)
C=$(cursor); W=$(nwarn)
cp /tmp/bad.toml "$CONF"
systemctl reload "$U"
rc=$?
reload_logged() { jwarn "$W" | grep -q 'kioskd.toml:'; }
wait_until 30 reload_logged || dump_journal 20
mark reload "rc=$rc|line=$BADLINE|pid=$P2|$(props)|$(jwarn "$W" | grep -m1 'kioskd.toml:')"
mark reload-prio "$(jprio "$C")"
cp /tmp/good.toml "$CONF"

# --- stop gives the console back ---
mark before-stop
wait_host 60
systemctl stop "$U"
mark stop "rc=$?|$(props)"
wait_host 60

# --- a bad config at start: exit 78, failed, and never restarted ---
C=$(cursor); W=$(nwarn)
cp /tmp/bad.toml "$CONF"
systemctl start "$U" > /dev/null 2>&1
rc=$?
rs=$(prop RestartUSec)
case "$rs" in *ms) win=$(( ${rs%ms} * 35 / 10000 + 1 )) ;; *s) win=$(( ${rs%s} * 35 / 10 + 1 )) ;; *) win=10 ;; esac
seen=""
end=$(( $(date +%s) + win ))
while [ "$(date +%s)" -lt $end ]; do
  s="$(prop ActiveState)/$(prop SubState)/$(prop NRestarts)"
  case " $seen " in *" $s "*) ;; *) seen="$seen $s" ;; esac
  sleep 0.3
done
mark badstart "rc=$rc|restart=$rs|window=${win}s|seen=${seen# }|$(props)"
mark badstart-log "$(jwarn "$W" | grep -m1 'kioskd.toml:')"
mark badstart-prio "$(jprio "$C" | grep -o 'PRIORITY=[0-9]|MESSAGE=[^|]*kioskd.toml:[^|]*' | head -n 1)"
mark badstart-exit "$(journalctl -q -u "$U" -o cat --after-cursor="$C" | grep -m1 -E 'status=78|code=exited' | sed 's/@@//g')"
mark badstart-lines "$(journalctl -q -u "$U" -o cat --after-cursor="$C" | sed 's/@@//g' | head -n 8 | tr '\n' '|')"
systemctl reset-failed "$U" 2>/dev/null
cp /tmp/good.toml "$CONF"

# --- no thread-priority noise anywhere in this boot's journal ---
mark noise "$(journalctl -q -b -o cat | grep -c 'Failed to set thread priority')|$(journalctl -q -b -o cat | grep -m1 'Failed to set thread priority' | sed 's/@@//g')"
