"""Endurance: the real kioskd on virtio-gpu with a counter, through many connector unplug/replug
cycles and touch devices plugged in and out (every other one pulled out mid-stroke). Its open
file descriptors must be the same after the first cycle and at the end, threads no more (idle
dispatch workers exit after 5 s, so the count may fall), and resident memory flat: a leak per
hotplug would show as a steady climb. The daemon must still be alive and the screen
pixel-identical to its first frame once the counter is set back to 0.

  KIOSK_ENDURANCE_CYCLES=N   cycles (default 10: one connector unplug/replug and one touch
                             device each; the documented long run is 100)
"""

import os

from vmharness import NO_TIMER_CHECK, Session, scenario

CYCLES = int(os.environ.get("KIOSK_ENDURANCE_CYCLES", "10"))
# Warm-up (glyph caches, allocator arenas) can add a few MB over the first cycles; a leak keeps
# climbing, so the second half of the run must be flat too.
RSS_TOLERANCE_KB = 4096
RSS_SECOND_HALF_KB = 1024

GUEST = r'''
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
ask_host how-many
N=$HOST_REPLY
mkdir -p /tmp/kstate
cat > /tmp/k.toml <<'TOML'
state_dir = "/tmp/kstate"
[display]
backend = "drm"
[gestures]
# A slow guest may stretch a tap; the counter must count every tap that finished.
tap_max_ms = 5000
long_press_ms = 20000
[scene.score]
kind = "counter"
digits = 4
roll_ms = 0
[[scene.score.counter]]
name = "HOME"
[control]
socket = "/tmp/k.sock"
TOML
"$KIOSKD" --config /tmp/k.toml --log-level info > /tmp/kioskd.log 2>&1 &
KPID=$!
n() { grep -c -- "$1" /tmp/kioskd.log; }
# wait_n TEXT COUNT SECONDS: bounded wait until the log has COUNT lines with TEXT.
wait_n() { local i=0; while [ "$(n "$1")" -lt "$2" ] && [ $i -lt $(( $3 * 10 )) ]; do kill -0 $KPID 2>/dev/null || return 1; sleep 0.1; i=$((i+1)); done; [ "$(n "$1")" -ge "$2" ]; }
stats() { echo "fds=$(ls /proc/$KPID/fd | wc -l) threads=$(sed -n 's/^Threads:[[:space:]]*//p' /proc/$KPID/status) rss_kb=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$KPID/status)"; }
if ! wait_n "first frame on screen" 1 120 || ! wait_n "input: libinput on seat" 1 60; then
  sed 's/@@//g' /tmp/kioskd.log | tail -n 30 > /dev/console; mark kioskd-up failed; exit 1
fi
mark kioskd-up "$(stats)"
ask_host shown 120
conn=$(ls -d /sys/class/drm/card0-Virtual-1)
off0=$(n "no connected output"); set0=$(n "mode set")
taps=0; cut=0; done_cycles=0
for i in $(seq 1 "$N"); do
  # The connector forced off, then back to detection (with the card's udev change event).
  echo off > "$conn/status"
  udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
  wait_n "no connected output" $((off0 + i)) 60 || { mark endure-error "cycle $i: kioskd did not see the connector go"; break; }
  echo detect > "$conn/status"
  udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
  wait_n "mode set" $((set0 + i)) 60 || { mark endure-error "cycle $i: no mode set after the connector came back"; break; }
  # A touchscreen plugged in and out: a tap, or (every other cycle) pulled out mid-stroke.
  name=endure-$i
  if [ $((i % 2)) -eq 1 ]; then
    "$KIOSK_VMTOOL" touch --name "$name" --wait-log /tmp/kioskd.log --wait-text "input device added: $name (" \
      --stroke 0.5,0.5:0.5,0.5 --steps 1 --step-ms 30 --settle-ms 50 --hold-ms 0 >> /tmp/t.log 2>&1 && taps=$((taps + 1))
  else
    "$KIOSK_VMTOOL" touch --name "$name" --wait-log /tmp/kioskd.log --wait-text "input device added: $name (" \
      --stroke 0.2,0.3:0.8,0.3 --stroke 0.8,0.7:0.2,0.7 --steps 10 --step-ms 20 --unplug-after 4 --settle-ms 50 >> /tmp/t.log 2>&1 && cut=$((cut + 1))
  fi
  wait_n "input device removed: $name (" 1 60 || { mark endure-error "cycle $i: kioskd did not see $name go"; break; }
  done_cycles=$i
  [ "$i" -eq 1 ] && mark first "$(stats)"
  mark progress "$i $(stats)"
done
mark end "cycles=$done_cycles $(stats) taps=$taps cut=$cut offs=$(( $(n 'no connected output') - off0 )) modesets=$(( $(n 'mode set') - set0 ))"
kill -0 $KPID 2>/dev/null && mark alive yes || mark alive no
mark value "$("$KIOSKCTL" counter HOME get --socket /tmp/k.sock 2>&1)"
"$KIOSKCTL" counter HOME set 0 --socket /tmp/k.sock > /dev/null 2>&1
mark reset "$?"
ask_host reset-shown 60
kill -TERM $KPID; wait $KPID; mark kioskd-exit "$?"
sed 's/@@//g' /tmp/kioskd.log | grep -iE "error|critical" | tail -n 10 > /dev/console
'''


def _kv(payload: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in payload.split() if "=" in p)


@scenario("kioskd-endurance-virtio", display="virtio-gpu-pci", timeout=3600, kernel_args=NO_TIMER_CHECK, guest=GUEST)
def endurance(s: Session) -> None:
    """kioskd on virtio-gpu: N connector unplug/replug cycles and N touch devices added and removed (half mid-stroke); fds unchanged, threads not more, RSS within 4 MB of the first cycle and flat (≤ 1 MB) over the second half, screen still right."""
    s.wait_marker("how-many", 120)
    s.answer(str(CYCLES))
    up = s.wait_marker("kioskd-up", 180)
    s.expect(up != "failed", "kioskd showed its first frame on virtio-gpu")
    if up == "failed":
        return
    s.result("at_start", _kv(up))
    first = s.wait_screen(lambda i: i.count((0, 255, 255)) > i.width * i.height // 50, 30, "start")
    cyan = first.count((0, 255, 255))
    s.expect(cyan > first.width * first.height // 50, f"the counter is on screen ({cyan} cyan pixels)")
    s.wait_marker("shown", 60)
    s.answer("go")
    base = _kv(s.wait_marker("first", 240))
    end = _kv(s.wait_marker("end", 60 + CYCLES * 45))
    errors = s.markers("endure-error")
    s.expect(not errors, f"every cycle completed: {errors}")
    s.result("cycles", int(end.get("cycles", "0")))
    s.expect(end.get("cycles") == str(CYCLES), f"{CYCLES} cycles done (guest: {end})")
    s.result("after_first_cycle", base)
    s.result("at_end", {k: end.get(k) for k in ("fds", "threads", "rss_kb")})
    # RSS (kB) after each cycle: a leak climbs steadily; warming up (glyphs, allocator) levels off.
    s.result("rss_kb_by_cycle", [int(_kv(p).get("rss_kb", "0")) for p in s.markers("progress")])
    s.result("events", {k: end.get(k) for k in ("taps", "cut", "offs", "modesets")})
    s.expect(end.get("fds") == base.get("fds"), f"open fds after the first cycle {base.get('fds')}, at the end {end.get('fds')}")
    # Threads may fall (idle dispatch workers exit after 5 s) but never climb: one leaked thread
    # a cycle would end well above the first cycle's count.
    s.expect(base.get("threads") is not None and end.get("threads") is not None
             and int(end["threads"]) <= int(base["threads"]),
             f"threads after the first cycle {base.get('threads')}, at the end {end.get('threads')} (may fall, must not climb)")
    growth = int(end.get("rss_kb", "0")) - int(base.get("rss_kb", "0"))
    s.result("rss_growth_kb", growth)
    s.expect(growth <= RSS_TOLERANCE_KB,
             f"RSS after the first cycle {base.get('rss_kb')} kB, at the end {end.get('rss_kb')} kB (+{growth} kB, allowed +{RSS_TOLERANCE_KB})")
    by_cycle = [int(_kv(p).get("rss_kb", "0")) for p in s.markers("progress")]
    if len(by_cycle) >= 4:
        mid = by_cycle[len(by_cycle) // 2]
        late = int(end.get("rss_kb", "0")) - mid
        s.result("rss_growth_second_half_kb", late)
        s.expect(late <= RSS_SECOND_HALF_KB,
                 f"RSS in the second half of the run: {mid} kB at cycle {len(by_cycle) // 2 + 1}, {end.get('rss_kb')} kB at the end (+{late} kB, allowed +{RSS_SECOND_HALF_KB})")
    s.expect(end.get("cut") == str(CYCLES // 2) and end.get("taps") == str(CYCLES - CYCLES // 2),
             f"kiosk-vmtool: {CYCLES - CYCLES // 2} taps and {CYCLES // 2} devices pulled out mid-stroke ({end})")
    s.expect(s.wait_marker("alive", 30) == "yes", "kioskd still running after the cycles")
    value = s.wait_marker("value", 60)
    s.result("counter", value)
    s.expect(value == end.get("taps"), f"every finished tap counted and no cut-off stroke did anything: counter {value}, taps {end.get('taps')}")
    s.expect(s.wait_marker("reset", 60) == "0", "kioskctl counter HOME set 0")
    s.wait_marker("reset-shown", 60)
    img = s.wait_screen(lambda i: i.differs(first) == 0, 30, "end")
    d = img.differs(first)
    s.result("pixels_differing_from_first_frame", d)
    s.expect(d == 0, f"at 0 again the screen is identical to the first frame ({d} pixels differ)")
    s.answer("go")
    s.expect(s.wait_marker("kioskd-exit", 60) == "0", "kioskd exits 0 on SIGTERM")
