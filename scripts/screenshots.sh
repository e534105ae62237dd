#!/usr/bin/env bash
# Renders the README's screenshots with kioskd's headless backend: one per example config,
# written to docs/screenshots/. The paint screenshot has two fingers drawn with --stroke.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product kioskd >/dev/null
swift build --product kioskctl >/dev/null
bin=$(swift build --show-bin-path)/kioskd
out=docs/screenshots
mkdir -p "$out"
run() { "$bin" --backend headless --log-level warning "$@"; }
run --config config/wall-clock.toml --snapshot "$out/clock.png"
run --config config/scoreboard.toml --snapshot "$out/counter.png"
run --config config/scoreboard-clock.toml --snapshot "$out/scoreboard-clock.png"
# The game clock under a minute, set through the control socket of a running headless kioskd.
live=$(mktemp -d)
{ echo "state_dir = \"$live/state\""; sed -n '/^theme/,$p' config/scoreboard-clock.toml
  printf '\n[control]\nsocket = "%s/control.sock"\n' "$live"; } > config/.screenshot-live.toml
run --config config/.screenshot-live.toml & pid=$!
ctl() { KIOSKD_SOCKET="$live/control.sock" "$(dirname "$bin")/kioskctl" "$@"; }
for _ in $(seq 50); do [ -S "$live/control.sock" ] && break; sleep 0.1; done
ctl clock set 0:45 >/dev/null && ctl screenshot "$out/scoreboard-clock-tenths.png" >/dev/null
kill "$pid"; wait "$pid" || true
rm -rf "$live" config/.screenshot-live.toml
# Two outputs: two-screens.png (HDMI-A-1) and two-screens-DSI-1.png.
run --config config/two-screens.toml --snapshot "$out/two-screens.png"
# Two fingers at once along smooth waves (points x,y in 0…1 of the screen).
wave() { python3 -c "import math,sys; y,a,f,p=map(float,sys.argv[1:]); print(':'.join(f'{0.06+0.88*i/8:.3f},{y+a*math.sin(f*i/8*math.pi*2+p):.3f}' for i in range(9)))" "$@"; }
run --config config/painting-kiosk.toml --snapshot "$out/paint.png" \
    --stroke "$(wave 0.30 0.14 1.5 0)" --stroke "$(wave 0.62 0.08 2.5 1.2)"
ls -l "$out"
