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
# The release build (static Swift runtime, as installed) for the quick benchmark below and
# the process tests that check it (KIOSKD_RELEASE_BIN).
swift build -c release --scratch-path .build-bench --product kioskd
swift build -c release --scratch-path .build-bench --product kioskd-bench
export KIOSKD_RELEASE_BIN="$PWD/.build-bench/release/kioskd"

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
# A short benchmark run (BENCHMARKS.md): kioskd against the pygame peer at 1080p, ratios in
# one run. It checks that the bench runs and prints the figures; the targets are judged on a
# full run on a quiet machine, so a missed target does not fail CI. KIOSK_BENCH=0 skips it.
if [ "${KIOSK_BENCH:-1}" = 1 ]; then
    Benchmarks/setup-peer.sh || echo "test.sh: the pygame peer could not be installed; the bench runs without it"
    .build-bench/release/kioskd-bench --quick --sizes 1920x1080 --idle-seconds 3 | tee .build/bench-quick.txt
fi
if [ "$KIOSK_VM_TESTS" = 1 ]; then
    swift test --skip-build --filter VMTests 2>&1 | tee .build/vm-test-output.txt
fi
echo "test.sh: done in $(( $(date +%s) - start )) s"
