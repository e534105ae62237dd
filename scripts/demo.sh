#!/usr/bin/env bash
# Sets up, builds and runs kioskd. With a DRM device it shows the wall clock on the screen;
# without one (no /dev/dri) it runs headless and writes what the screen shows for each example
# config to out/*.png.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build -c release --product kioskd
bin=.build/release/kioskd
mkdir -p out
if ls /dev/dri/card* >/dev/null 2>&1 && [ "${KIOSK_HEADLESS:-0}" != 1 ]; then
    exec "$bin" --config config/wall-clock.toml --backend drm
fi
for c in wall-clock scoreboard painting-kiosk; do
    "$bin" --config "config/$c.toml" --backend headless --snapshot "out/$c.png"
    echo "demo: wrote out/$c.png (what the screen shows with config/$c.toml)"
done
