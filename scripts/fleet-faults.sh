#!/bin/sh
# "Fleet under faults" with a chosen number of increments (default 1000; CI runs 200):
# a real mosquitto, a primary and two followers (kioskd processes) in one group, broker
# restarts and SIGKILLs while five clients send increments. Needs the Debian packages
# mosquitto and mosquitto-clients. See docs/mqtt.md, "Fleets".
set -eu
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
swift build --build-tests
KIOSK_SLOW_TESTS=1 KIOSK_FLEET_INCREMENTS="${1:-1000}" swift test --skip-build --filter FleetFaultTests
