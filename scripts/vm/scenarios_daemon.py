"""kioskd started the way systemd/kioskd.service starts it: an unprivileged user with only the
video, input and render groups, no capabilities, no new privileges; state and control socket in
directories that user owns. It must get the display (DRM master as first opener) and the input
(libinput through udev), answer kioskctl, and keep the counter across a SIGTERM + restart."""

from vmharness import Session, scenario

UNIT_GUEST = r'''
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
U=65534
G=$(getent group video | cut -d: -f3),$(getent group input | cut -d: -f3),$(getent group render | cut -d: -f3)
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
# As the unit: User= (here nobody), SupplementaryGroups=video input render, NoNewPrivileges=yes,
# CapabilityBoundingSet= (empty).
start_unit() {
  setpriv --reuid=$U --regid=$U --groups=$G --no-new-privs --inh-caps=-all --bounding-set=-all -- \
    "$KIOSKD" --config /tmp/unit.toml > /tmp/kioskd.log 2>&1 &
  KPID=$!
  local i=0
  while [ $i -lt 600 ] && kill -0 $KPID 2>/dev/null; do
    grep -q "first frame on screen" /tmp/kioskd.log && grep -q "input: libinput on seat" /tmp/kioskd.log && break
    sleep 0.1; i=$((i+1))
  done
  if grep -q "first frame on screen" /tmp/kioskd.log; then mark up "$(grep -E '^(Uid|Gid|Groups|CapEff|NoNewPrivs):' /proc/$KPID/status | tr -s '\t\n' '  ')"; else
    sed 's/@@//g' /tmp/kioskd.log | tail -n 30 > /dev/console; mark up failed; exit 1; fi
}
start_unit
mark sock "$(stat -c '%a %U' /run/kioskd/control.sock)"
wait_host 60
"$KIOSK_VMTOOL" touch --name unit-tap --wait-log /tmp/kioskd.log --wait-text "input device added: unit-tap" \
  --stroke 0.5,0.5:0.5,0.5 --steps 1 --step-ms 30 > /tmp/t.log 2>&1
sleep 1
mark value "$("$KIOSKCTL" counter HOME get --socket /run/kioskd/control.sock 2>&1)"
"$KIOSKCTL" counter HOME inc --socket /run/kioskd/control.sock > /dev/null 2>&1
mark value2 "$("$KIOSKCTL" counter HOME get --socket /run/kioskd/control.sock 2>&1)"
wait_host 60
kill -TERM $KPID; wait $KPID; mark exit "$?"
wait_host 60
start_unit
mark value3 "$("$KIOSKCTL" counter HOME get --socket /run/kioskd/control.sock 2>&1)"
mark status "$("$KIOSKCTL" status --json --socket /run/kioskd/control.sock 2>&1 | tr '\n' ' ' | sed 's/@@//g')"
# Hand the display over and take it back (SIGUSR1 / SIGUSR2), unprivileged.
kill -USR1 $KPID; sleep 1
grep -q "released DRM master" /tmp/kioskd.log && mark released yes || mark released no
kill -USR2 $KPID; sleep 1
grep -q "cannot take the display back" /tmp/kioskd.log && mark reacquired no || mark reacquired "$(grep -c 'acquired DRM master' /tmp/kioskd.log)"
wait_host 60
kill -TERM $KPID; wait $KPID; mark exit2 "$?"
sed 's/@@//g' /tmp/kioskd.log | grep -iE "error|warn|denied" | tail -n 10 > /dev/console
'''


@scenario("kioskd-unit-user", display="VGA", timeout=300, guest=UNIT_GUEST)
def kioskd_unit_user(s: Session) -> None:
    """kioskd as an unprivileged user with video/input/render groups (as the unit) drives DRM, reads a uinput touchscreen, keeps the counter across a restart."""
    up = s.wait_marker("up", 120)
    s.result("credentials", up)
    s.expect(up != "failed", "kioskd started as nobody with the video/input/render groups and showed a frame")
    if up == "failed":
        return
    f = up.split()
    s.expect(len(f) > 1 and f[0] == "Uid:" and f[1] == "65534", f"kioskd runs as uid 65534, not root ({up})")
    s.expect("CapEff: 0000000000000000" in up, f"no effective capabilities ({up})")
    sock = s.wait_marker("sock", 30)
    s.result("socket", sock)
    s.expect(sock == "660 nobody", f"control socket mode 0660 owned by the service user ({sock})")
    img = s.wait_screen(lambda i: i.count((0, 255, 255)) > i.width * i.height // 50, 20, "counter")
    s.expect(img.count((0, 255, 255)) > img.width * img.height // 50, "the counter is on screen (cyan windows, default theme)")
    s.answer("go")
    v = s.wait_marker("value", 90)
    s.result("after_tap", v)
    s.expect(v == "1", f"a tap on the uinput touchscreen incremented the counter to 1 (kioskctl says {v})")
    v2 = s.wait_marker("value2", 30)
    s.expect(v2 == "2", f"kioskctl counter inc made it 2 (got {v2})")
    s.answer("go")
    s.expect(s.wait_marker("exit", 30) == "0", "SIGTERM: kioskd exits 0")
    s.answer("go")
    s.wait_marker("up", 120)
    v3 = s.wait_marker("value3", 30)
    s.result("after_restart", v3)
    s.expect(v3 == "2", f"the counter survived the restart (got {v3})")
    st = s.wait_marker("status", 30)
    s.expect('"scene":"score"' in st.replace(" ", ""), f"status after restart names the scene: {st[:160]}")
    s.expect(s.wait_marker("released", 30) == "yes", "SIGUSR1 released DRM master")
    re = s.wait_marker("reacquired", 30)
    s.result("reacquired", re)
    s.expect(re not in ("no", "0"), f"SIGUSR2 took DRM master back as the unprivileged user ({re})")
    img = s.wait_screen(lambda i: i.count((0, 255, 255)) > i.width * i.height // 50, 20, "after-usr2")
    s.expect(img.count((0, 255, 255)) > img.width * img.height // 50, "the counter is shown again after SIGUSR2")
    s.answer("go")
    s.expect(s.wait_marker("exit2", 30) == "0", "second SIGTERM: exit 0")
