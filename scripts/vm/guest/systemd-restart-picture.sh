# shellcheck shell=bash
# systemd-restart-picture: kioskd installed by scripts/install.sh under systemd 252 as PID 1
# (scripts/vm/systemd-boot.sh); the score is timed off the screen (host screendumps) through
# `systemctl restart` with systemd's file descriptor store off (FileDescriptorStoreMax=0) and on
# (the shipped unit), through a crash restarted by Restart=, and 10 restarts count framebuffers.
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
CONF=/etc/kioskd/kioskd.toml
U=kioskd.service
prop() { systemctl show -p "$1" --value "$U"; }
props() { systemctl show -p ActiveState -p SubState -p MainPID -p NRestarts -p NFileDescriptorStore -p FileDescriptorStoreMax "$U" | tr '\n' '|' | sed 's/@@//g'; }
dump_journal() { journalctl -q -u "$U" -o short-monotonic --no-hostname | tail -n "${1:-25}" | sed 's/@@//g' > /dev/console; }
# The framebuffers the DRM device holds now (every file's, the console's too).
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
fbs() { grep -c '^framebuffer\[' /sys/kernel/debug/dri/0/framebuffer 2>/dev/null || echo "?"; }
store() {
    mkdir -p /etc/systemd/system/kioskd.service.d
    if [ "$1" = shipped ]; then rm -f /etc/systemd/system/kioskd.service.d/fdstore.conf
    else printf '[Service]\nFileDescriptorStoreMax=%s\n' "$1" > /etc/systemd/system/kioskd.service.d/fdstore.conf; fi
    systemctl daemon-reload
}
# wait_active OLDPID: until a kioskd other than OLDPID is active (bounded).
wait_active() {
    local deadline=$((SECONDS + 90))
    while [ $SECONDS -lt $deadline ]; do
        [ "$(prop ActiveState)" = active ] && [ "$(prop MainPID)" != "$1" ] && [ "$(prop MainPID)" != 0 ] && return 0
        sleep 0.2
    done
    return 1
}

BINDIR="$(dirname "$KIOSKD")" bash scripts/install.sh --no-build > /tmp/install.log 2>&1
rc=$?
mark install "$rc|$(grep -E '^FileDescriptorStore' /etc/systemd/system/kioskd.service | tr '\n' ' ')"
if [ $rc != 0 ]; then sed 's/@@//g' /tmp/install.log | tail -n 20 > /dev/console; exit 1; fi
cat > "$CONF" <<'TOML'
[display]
backend = "drm"
[scenes]
order = ["score"]
[scene.score]
kind = "counter"
shading = false
[[scene.score.counter]]
name = "HOME"
TOML

# --- the store off: the old kioskd's picture goes when its file closes ---
store 0
systemctl start "$U"
rc=$?
"$KIOSKCTL" counter HOME set 7 > /dev/null 2>&1 || { "$KIOSKCTL" counter HOME inc; "$KIOSKCTL" counter HOME inc; } > /dev/null 2>&1
mark started "rc=$rc|score=$("$KIOSKCTL" counter HOME get 2>&1)|$(props)"
if [ $rc != 0 ]; then dump_journal 30; exit 1; fi

# measure LABEL COMMAND…: the host takes screendumps from `restart-LABEL` until a while after
# `restarted-LABEL`.
measure() {
    local label=$1 old
    shift
    old=$(prop MainPID)
    mark "restart-$label" "fbs=$(fbs)|$(props)"
    wait_host 60
    local t0=$EPOCHREALTIME
    "$@"
    local rc=$?
    wait_active "$old" || rc=99
    mark "restarted-$label" "rc=$rc|t=$t0 $EPOCHREALTIME|fbs=$(fbs)|score=$("$KIOSKCTL" counter HOME get 2>&1)|$(props)"
    wait_host 60
}
measure off systemctl restart "$U"

# --- the shipped unit (FileDescriptorStoreMax=): the file outlives each kioskd ---
store shipped
# The running kioskd opened its card while the store was off: one restart to store it.
systemctl restart "$U"
measure on systemctl restart "$U"
measure crash systemctl kill -s KILL "$U"

# --- many restarts: the framebuffers the device holds stay as many ---
before=$(fbs)
n=0
for _ in $(seq 1 10); do systemctl restart "$U" && n=$((n + 1)); done
mark leak "restarts=$n|before=$before|after=$(fbs)|$(props)|kept=$(journalctl -q -u "$U" -o cat | grep -c 'took the DRM device kept by systemd')"
mark before-stop
wait_host 60

# --- stop: the store is emptied, the kernel gives the console back ---
systemctl stop "$U"
mark stopped "rc=$?|fbs=$(fbs)|$(props)"
wait_host 60
journalctl -q -u "$U" -o cat | grep -E 'kept by systemd|picture stays|released a DRM' | sort | uniq -c | tr '\n' '|' | sed 's/@@//g' | cut -c1-900 > /tmp/lines
mark journal "$(cat /tmp/lines)"
