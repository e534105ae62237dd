# shellcheck shell=bash
# kioskd-unit-user: kioskd started as systemd/kioskd.service starts it (an unprivileged user with
# the video, input and render groups, no capabilities, no new privileges): display, a uinput tap,
# the control socket, the counter across a restart, DRM master handed over by SIGUSR1/SIGUSR2.
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
U=65534
G=$(getent group video | cut -d: -f3),$(getent group input | cut -d: -f3),$(getent group render | cut -d: -f3)
mark gids "$G"
mkdir -p /tmp/kstate /run/kioskd
chown $U:$U /tmp/kstate /run/kioskd
chmod 0750 /tmp/kstate
cat > /tmp/unit.toml <<'TOML'
state_dir = "/tmp/kstate"
[display]
backend = "drm"
[scene.score]
kind = "counter"
shading = false
[[scene.score.counter]]
name = "HOME"
[control]
socket = "/run/kioskd/control.sock"
TOML
value() { "$KIOSKCTL" counter HOME get --socket /run/kioskd/control.sock 2>&1; }
# As the unit: User= (here nobody), SupplementaryGroups=video input render, NoNewPrivileges=yes,
# CapabilityBoundingSet= (empty).
start_unit() {
  setpriv --reuid=$U --regid=$U --groups="$G" --no-new-privs --inh-caps=-all --bounding-set=-all -- \
    "$KIOSKD" --config /tmp/unit.toml > /tmp/kioskd.log 2>&1 &
  KPID=$!
  wait_count /tmp/kioskd.log "first frame on screen" 1 60 $KPID > /dev/null
  wait_count /tmp/kioskd.log "input: libinput on seat" 1 30 $KPID > /dev/null
  if grep -q "first frame on screen" /tmp/kioskd.log; then
    mark up "$(grep -E '^(Uid|Gid|Groups|CapEff|NoNewPrivs):' /proc/$KPID/status | tr -s '\t\n' '  ')"
  else
    sed 's/@@//g' /tmp/kioskd.log | tail -n 30 > /dev/console; mark up failed; exit 1
  fi
}
start_unit
mark sock "$(stat -c '%a %U' /run/kioskd/control.sock)"
wait_host 60
"$KIOSK_VMTOOL" touch --name unit-tap --wait-log /tmp/kioskd.log --wait-text "input device added: unit-tap" \
  --stroke 0.5,0.5:0.5,0.5 --steps 1 --step-ms 30 > /tmp/t.log 2>&1
is_one() { [ "$(value)" = 1 ]; }
wait_until 20 is_one
mark value "$(value)"
"$KIOSKCTL" counter HOME inc --socket /run/kioskd/control.sock > /dev/null 2>&1
mark value2 "$(value)"
wait_host 60
kill -TERM $KPID; wait $KPID; mark exit "$?"
wait_host 60
start_unit
mark value3 "$(value)"
mark status "$("$KIOSKCTL" status --json --socket /run/kioskd/control.sock 2>&1 | tr '\n' ' ' | sed 's/@@//g')"
# Hand the display over and take it back (SIGUSR1 / SIGUSR2), unprivileged.
kill -USR1 $KPID
if wait_count /tmp/kioskd.log "released DRM master" 1 20 $KPID > /dev/null; then mark released yes; else mark released no; fi
kill -USR2 $KPID
back() { grep -qE "acquired DRM master|cannot take the display back" /tmp/kioskd.log; }
wait_until 20 back
if grep -q "cannot take the display back" /tmp/kioskd.log; then mark reacquired no; else mark reacquired "$(grep -c 'acquired DRM master' /tmp/kioskd.log)"; fi
wait_host 60
kill -TERM $KPID; wait $KPID; mark exit2 "$?"
sed 's/@@//g' /tmp/kioskd.log | grep -iE "error|warn|denied" | tail -n 10 > /dev/console
