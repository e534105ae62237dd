#!/usr/bin/env bash
# Runs every test of kioskd: unit and pixel tests, the QEMU kernel tests (real DRM and input
# drivers, x86_64 and aarch64), the aarch64 build under qemu-user, the Debian packages, the
# systemd unit checks, the kill test and Home Assistant. Used by .ci/run.
# Parts can be skipped: KIOSK_VM_TESTS=0 (x86 kernel tests), KIOSK_ARM64=0 (the whole aarch64
# job), KIOSK_ARM64_VM=0 (its kernel tests), KIOSK_BROWSER_TESTS=0, KIOSK_FUZZ=0, KIOSK_BENCH=0,
# KIOSK_HA_TESTS=0.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Everything every step below needs (commands, packages, QEMU, binfmt_misc, disk, the toolchain),
# checked in seconds: stops here with the whole list of what is missing, not an hour later.
bash scripts/preflight.sh
start=$(date +%s)
# Prints how long the step since the previous mark took (the CI budget is judged from these).
mark_at=$start
mark() { local now; now=$(date +%s); echo "test.sh: $1 took $(( now - mark_at )) s (total $(( now - start )) s)"; mark_at=$now; }
# The later steps' caches that are cold (a fresh machine: the aarch64 toolchain, the arm64 and
# Home Assistant roots, the kernels) are filled in the background at the lowest priority while
# the Swift builds run, and waited for before the first timing-sensitive step. A warm run starts
# nothing; a failure there is only logged (the step tries again). A run that stops before the
# wait leaves it to finish filling the caches.
mkdir -p .build
bash scripts/prefetch-caches.sh > .build/prefetch.log 2>&1 &
prefetch_pid=$!

swift build --build-tests
swift build --product kioskd
swift build --product kiosk-vmtool
swift build --product kioskctl
mark "debug build"
# The release build (static Swift runtime, as installed) for the quick benchmark below, the
# process tests that check it (KIOSKD_RELEASE_BIN) and the amd64 package (no relink there), and
# the check of its link map: FoundationEssentials alone, no full Foundation or ICU (issue 33).
bash scripts/release-kioskd.sh
swift build -c release --scratch-path .build-bench --product kioskctl
swift build -c release --scratch-path .build-bench --product kioskd-bench
export KIOSKD_RELEASE_BIN="$PWD/.build-bench/release/kioskd"
mark "release build"
wait "$prefetch_pid" || true
cat .build/prefetch.log
mark "waiting for the cache prefetch"

[ -x scripts/check-systemd.sh ] && bash scripts/check-systemd.sh
[ -x scripts/kill-test.sh ] && bash scripts/kill-test.sh
mark "systemd checks and kill test"

# aarch64 (scripts/arm64/README.md): the cross toolchain and sysroot (cached in
# /var/cache/kioskd-ci), release kioskd, kioskctl and kiosk-vmtool cross-built, and the tier-1
# tests of those binaries under qemu-user (pixels, configs, kioskctl against a daemon).
if [ "${KIOSK_ARM64:-1}" = 1 ]; then
    bash scripts/arm64/ci.sh
    bash scripts/package.sh --arch arm64
    mark "aarch64 toolchain, cross build, tier 1, arm64 package"
    # Version N+1 of that package (the same source, another version: version.c recompiled and
    # the binaries linked again) and the signed repositories before and after it, for the VM's
    # upgrade scenario below.
    if [ "${KIOSK_ARM64_VM:-1}" = 1 ]; then
        bash scripts/upgrade-debs.sh
        mark "arm64 package N+1 and its repositories"
    fi
fi
# The Debian packages: files, Depends, lintian, the unit, dpkg install/remove/purge into an
# empty root (and the arm64 .deb's files, binaries and lintian when it was built above).
bash scripts/package-test.sh
# The signed apt repository of those packages (reprepro, a test key): apt installs from it, sees
# a new version as an upgrade, and refuses a changed InRelease, Packages or .deb and another key.
bash scripts/apt-repo-test.sh
mark "packages"

export KIOSK_VM_TESTS="${KIOSK_VM_TESTS:-1}"
export KIOSK_SLOW_TESTS="${KIOSK_SLOW_TESTS:-1}"
# Unit, pixel, daemon and process tests first; then the QEMU kernel tests on their own
# (KIOSK_VM_TESTS=0 skips them). They wait on QEMU for tens of seconds at a time, which would
# hold the test runner's threads away from the timing-sensitive daemon tests.
swift test --skip-build --skip VMTests 2>&1 | tee .build/test-output.txt
# The skip gate: every test must run here except the one XCTest that only runs as a child of
# another test; a tool that is missing or a binary not built fails the run with the names.
if [ "$KIOSK_SLOW_TESTS" = 1 ]; then
    python3 scripts/check-skips.py .build/test-output.txt --expect ChildClient.testRunAsChild
fi
mark "swift test"
# The phone page in a real browser (headless chromium + Playwright); KIOSK_BROWSER_TESTS=0 skips it.
if [ "${KIOSK_BROWSER_TESTS:-1}" = 1 ]; then bash scripts/browser-test.sh; mark "browser tests"; fi
# The kernel-test harness itself (no VM): its oracles and waits (scripts/vm/test_vmharness.py),
# and every guest shell script it runs in the VM, through shellcheck. The checks of
# scripts/preflight.sh (scripts/test_preflight.py: what is missing is named with its package).
# The cut-down ICU data (scripts/test_icu_data.py: the zones and English kept, the rest dropped).
# The FoundationEssentials-only check (scripts/test_size_map.py: fails on a static program that
# imports Foundation, naming the member and symbol; passes on one that imports FoundationEssentials).
python3 -m unittest discover -s scripts/vm -p 'test_*.py'
python3 -m unittest discover -s scripts -p 'test_preflight.py'
python3 -m unittest discover -s scripts -p 'test_icu_data.py'
python3 -m unittest discover -s scripts -p 'test_size_map.py'
shellcheck -x -P SCRIPTDIR scripts/vm/guest/*.sh scripts/vm/guest/lib/*.sh scripts/vm/systemd-boot.sh
# A short fuzz run of each parser (config, theme, control request; docs/fuzzing.md): a debug
# libFuzzer build, 20 000 executions a target with a fixed seed. KIOSK_FUZZ=0 skips it;
# `scripts/fuzz.sh TARGET -runs=1000000` is the long run.
if [ "${KIOSK_FUZZ:-1}" = 1 ]; then
    KIOSK_FUZZ_CONFIG=debug bash scripts/fuzz.sh --ci 20000
    mark "fuzz"
fi
# A short benchmark run (BENCHMARKS.md): kioskd against the pygame peer at 1080p, ratios in
# one run. It checks that the bench runs and prints the figures; the targets are judged on a
# full run on a quiet machine, so a missed target does not fail CI. KIOSK_BENCH=0 skips it.
if [ "${KIOSK_BENCH:-1}" = 1 ]; then
    Benchmarks/setup-peer.sh || echo "test.sh: the pygame peer could not be installed; the bench runs without it"
    .build-bench/release/kioskd-bench --quick --sizes 1920x1080 --idle-seconds 3 2>&1 | tee .build/bench-quick.txt
    # A row that could not run at all (not a missed target) fails the run: it means a road the
    # bench drives no longer works (e.g. a daemon started without its command pipeline).
    if grep -E '^kioskd-bench: .* failed: ' .build/bench-quick.txt; then
        echo "test.sh: kioskd-bench rows failed (above); .build/bench-quick.txt has the run" >&2
        exit 1
    fi
    # The game clock against CLOCK_MONOTONIC for a minute (the documented run is 20 minutes:
    # `kioskd-bench clock-drift`): it fails on a wrong time left or an early face.
    .build-bench/release/kioskd-bench clock-drift --seconds 60
    # Start-up side by side: kioskd, the peer and the C floor (the same first frame with the
    # same libraries and nothing else), 11 rounds in turn.
    Benchmarks/build-floor.sh || echo "test.sh: the C floor could not be built; the start-up bench runs without it"
    .build-bench/release/kioskd-bench startup --kioskd "$KIOSKD_RELEASE_BIN" --runs 11
    mark "bench"
fi
# kioskd against a real Home Assistant (a cached Debian forky root with Python 3.14 and Home
# Assistant from PyPI; scripts/ha/): discovery's entity ids, commands both ways.
if [ "${KIOSK_HA_TESTS:-1}" = 1 ]; then bash scripts/ha/test.sh; mark "Home Assistant"; fi
if [ "$KIOSK_VM_TESTS" = 1 ]; then
    swift test --skip-build --filter VMTests --skip MultiOutputVMTests 2>&1 | tee .build/vm-test-output.txt
    python3 scripts/check-skips.py .build/vm-test-output.txt
    mark "x86_64 kernel tests"
    # Two outputs on one virtio-gpu (scripts/vm/scenarios_multihead.py): a single-output kioskd on
    # the second head (39-73 s), then one kioskd driving both heads ([[output]]: two scenes, a
    # touchscreen mapped to head 1, head 1 unplugged and back, SIGTERM; 60 s quiet).
    swift test --skip-build --filter MultiOutputVMTests 2>&1 | tee .build/vm-multioutput-test-output.txt
    python3 scripts/check-skips.py .build/vm-multioutput-test-output.txt
    mark "x86_64 kernel tests, two outputs"
fi
# The aarch64 kernel tests: Debian 13's arm64 kernel in qemu-system-aarch64 (the clock on DRM by
# pixels, two fingers painting, a connector hotplug, the .deb installed under systemd), then the
# upgrade N -> N+1 from the signed repository during a counter burst, and the refused downgrade.
if [ "${KIOSK_ARM64:-1}" = 1 ] && [ "${KIOSK_ARM64_VM:-1}" = 1 ]; then
    bash scripts/arm64/vm-tier2.sh
    mark "aarch64 kernel tests"
    bash scripts/arm64/vm-tier2.sh kioskd-upgrade-apt
    mark "aarch64 upgrade test"
fi
echo "test.sh: done in $(( $(date +%s) - start )) s"
