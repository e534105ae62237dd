#!/usr/bin/env bash
# Runs every test of kioskd: unit and pixel tests, the QEMU kernel tests (real DRM and
# input drivers), the systemd unit checks and the kill test. Used by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
start=$(date +%s)

swift build --build-tests
swift build --product kioskd
swift build --product kiosk-vmtool
swift build --product kioskctl

[ -x scripts/check-systemd.sh ] && bash scripts/check-systemd.sh
[ -x scripts/kill-test.sh ] && bash scripts/kill-test.sh

# Everything, the QEMU kernel tests included (KIOSK_VM_TESTS=0 skips them).
export KIOSK_VM_TESTS="${KIOSK_VM_TESTS:-1}"
export KIOSK_SLOW_TESTS="${KIOSK_SLOW_TESTS:-1}"
swift test --skip-build 2>&1 | tee .build/test-output.txt
echo "test.sh: done in $(( $(date +%s) - start )) s"
