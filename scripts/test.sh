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

export KIOSK_VM_TESTS="${KIOSK_VM_TESTS:-1}"
export KIOSK_SLOW_TESTS="${KIOSK_SLOW_TESTS:-1}"
# Unit, pixel, daemon and process tests first; then the QEMU kernel tests on their own
# (KIOSK_VM_TESTS=0 skips them). They wait on QEMU for tens of seconds at a time, which would
# hold the test runner's threads away from the timing-sensitive daemon tests.
swift test --skip-build --skip VMTests 2>&1 | tee .build/test-output.txt
# The phone page in a real browser (headless chromium + Playwright); KIOSK_BROWSER_TESTS=0 skips it.
if [ "${KIOSK_BROWSER_TESTS:-1}" = 1 ]; then bash scripts/browser-test.sh; fi
# The kernel-test harness itself (no VM): its oracles and waits (scripts/vm/test_vmharness.py),
# and every guest shell script it runs in the VM, through shellcheck.
python3 -m unittest discover -s scripts/vm -p 'test_*.py'
shellcheck -x -P SCRIPTDIR scripts/vm/guest/*.sh scripts/vm/guest/lib/*.sh scripts/vm/systemd-boot.sh
# A short fuzz run of each parser (config, theme, control request; docs/fuzzing.md): a debug
# libFuzzer build, 20 000 executions a target with a fixed seed. KIOSK_FUZZ=0 skips it;
# `scripts/fuzz.sh TARGET -runs=1000000` is the long run.
if [ "${KIOSK_FUZZ:-1}" = 1 ]; then
    KIOSK_FUZZ_CONFIG=debug bash scripts/fuzz.sh --ci 20000
fi
if [ "$KIOSK_VM_TESTS" = 1 ]; then
    swift test --skip-build --filter VMTests 2>&1 | tee .build/vm-test-output.txt
fi
echo "test.sh: done in $(( $(date +%s) - start )) s"
