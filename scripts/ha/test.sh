#!/usr/bin/env bash
# kioskd against a real Home Assistant: mosquitto on a free loopback port, kioskd headless with
# [mqtt], Home Assistant (scripts/ha/setup.sh's cached forky root, chroot) onboarded and given the
# MQTT integration through its HTTP API; checks discovery's entity ids and both directions
# (scripts/ha/ha_test.py). Needs root, mosquitto, mmdebstrap (scripts/apt-ha.txt) and the
# debug builds of kioskd and kioskctl ($KIOSKD, $KIOSKCTL). KIOSK_HA_TESTS=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${KIOSK_HA_TESTS:-1}" = 0 ]; then echo "ha-test: skipped (KIOSK_HA_TESTS=0)"; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "ha-test: needs root (chroot, mount namespace)" >&2; exit 1; }
KIOSKD=${KIOSKD:-$PWD/.build/debug/kioskd}
KIOSKCTL=${KIOSKCTL:-$PWD/.build/debug/kioskctl}
for f in "$KIOSKD" "$KIOSKCTL" /usr/sbin/mosquitto; do
    [ -x "$f" ] || { echo "ha-test: $f missing (swift build; apt-get install \$(cat scripts/apt-mqtt.txt))" >&2; exit 1; }
done

t0=$SECONDS
root=$(bash scripts/ha/setup.sh)
echo "ha-test: Home Assistant root ready in $((SECONDS - t0)) s: $root"
t1=$SECONDS
# In the background so that a TERM or INT to this script reaches the driver, which stops
# Home Assistant, kioskd and mosquitto.
nice python3 scripts/ha/ha_test.py --root "$root" --kioskd "$KIOSKD" --kioskctl "$KIOSKCTL" \
    --themes "$PWD/config/themes" "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM INT
rc=0
wait "$pid" || rc=$?
if kill -0 "$pid" 2>/dev/null; then rc=0; wait "$pid" || rc=$?; fi
echo "ha-test: $([ $rc = 0 ] && echo PASS || echo FAIL) (setup $((t1 - t0)) s, test $((SECONDS - t1)) s)"
exit $rc
