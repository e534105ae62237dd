#!/usr/bin/env bash
# Cross-compiles release kioskd, kioskctl and kiosk-vmtool for aarch64-unknown-linux-gnu with
# Debian sid's Swift 6.2 (in the compiler root from scripts/arm64/toolchain.sh) against a Debian 13
# arm64 sysroot. Output: .build-arm64/aarch64-unknown-linux-gnu/release/, listed with the sysroot
# in .build-arm64/READY.
#   --native   also build kioskd for amd64 with sid's compiler (.build-sid; several minutes)
# Run as root. Environment: SID_ROOT and SYSROOT to skip toolchain.sh.
# KIOSK_ARM64_BUILD_CACHE (default /var/cache/kioskd-ci/arm64-build; empty: off): the build runs in
# a mirror of the checkout kept there, updated by content (rsync --checksum, without times), so
# a fresh clone rebuilds only the files that differ from the last build on this machine; the
# binaries are then copied into the checkout's .build-arm64.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout="$PWD"
native=0
for a in "$@"; do
    case "$a" in
        --native) native=1 ;;
        *) echo "usage: build-arm64.sh [--native]" >&2; exit 2 ;;
    esac
done
now() { date +%s; }
T0=$(now)

if [ -z "${SID_ROOT:-}" ] || [ -z "${SYSROOT:-}" ]; then
    eval "$(bash scripts/arm64/toolchain.sh)"
fi
# shellcheck source=arm64/flags.sh
. scripts/arm64/flags.sh
out="$checkout/.build-arm64/$ARM64_TRIPLE/release"
rm -f .build-arm64/READY

cache=${KIOSK_ARM64_BUILD_CACHE-/var/cache/kioskd-ci/arm64-build}
src="$checkout"
if [ -n "$cache" ]; then
    mkdir -p "$cache"
    exec 9> "$cache/.lock"
    flock 9
    src="$cache/src"
    mkdir -p "$src"
    t=$(now)
    # No -t: a file whose content is unchanged keeps the mirror's older time, so SwiftPM and the
    # compiler see only the changed files as new.
    rsync -rlpc --delete --exclude '/.git/' --exclude '/.build*/' --exclude '/out/' --exclude '/vm/work/' \
        --exclude '/Package.resolved' "$checkout/" "$src/"
    echo "build-arm64: source mirror $src updated in $(( $(now) - t )) s"
fi
built="$src/.build-arm64/$ARM64_TRIPLE/release"

run() { bash scripts/arm64/chroot.sh "$SID_ROOT" "$SYSROOT" "$src" "$@"; }

# kioskd's ICU data cut down to what it reaches (scripts/icu-data.py; the package ships kioskd,
# kioskctl is a link to it): assembled here for aarch64, linked in the chroot (the same paths);
# nothing is taken from it when the link has no ICU. kioskd's link map is checked as amd64's
# (scripts/release-kioskd.sh): the loaded bytes per library, FoundationEssentials alone.
icu_data=$(python3 scripts/icu-data.py --archive "$SYSROOT/usr/lib/swift_static/linux/lib_FoundationICU.a" \
    --out "$src/.build-arm64/icu-data" --target aarch64-linux-gnu --clang /opt/swift/usr/bin/clang)
t=$(now)
for p in kioskd kioskctl kiosk-vmtool; do
    tp=$(now)
    extra=; [ "$p" = kioskd ] && extra="KIOSKD_ICU_DATA=$icu_data"
    opts=; [ "$p" = kioskd ] && opts=$(python3 scripts/size-map.py --link-options "$src/.build-arm64")
    run "$ARM64_ENV $extra nice -n 5 swift build -c release --scratch-path .build-arm64 $ARM64_SWIFT_FLAGS --product $p $opts" \
        || { echo "build-arm64: FAILED building $p for $ARM64_TRIPLE" >&2; exit 1; }
    if [ "$p" = kioskd ]; then
        if [ "$src" != "$checkout" ]; then mkdir -p "$checkout/.build-arm64"; cp -f "$src/.build-arm64/kioskd.map" "$src/.build-arm64/kioskd.why" "$checkout/.build-arm64/"; fi
        python3 scripts/size-map.py "$checkout/.build-arm64/kioskd.map" --essentials-only
    fi
    [ -x "$built/$p" ] || { echo "build-arm64: $built/$p missing after the build" >&2; exit 1; }
    if [ "$built" != "$out" ]; then mkdir -p "$out"; cp -f "$built/$p" "$out/$p"; fi
    file -b "$out/$p" 2>/dev/null | grep -q 'ARM aarch64' || { echo "build-arm64: $out/$p is not an aarch64 executable" >&2; exit 1; }
    echo "build-arm64: $p built in $(( $(now) - tp )) s"
done
echo "build-arm64: cross build $(( $(now) - t )) s"
{
    for p in kioskd kioskctl kiosk-vmtool; do echo "$p=$out/$p"; done
    echo "sysroot=$SYSROOT"
    echo "commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- Sources Package.swift 2>/dev/null || echo +changes)"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > .build-arm64/READY.tmp
mv .build-arm64/READY.tmp .build-arm64/READY
echo "build-arm64: binaries in $out (listed in $checkout/.build-arm64/READY)"

if [ "$native" = 1 ]; then
    t=$(now)
    run "nice -n 5 swift build -c release --scratch-path .build-sid --product kioskd" \
        || { echo "build-arm64: FAILED: native amd64 build with sid's Swift" >&2; exit 1; }
    echo "build-arm64: native amd64 kioskd with sid's Swift built in $(( $(now) - t )) s: $checkout/.build-sid/release/kioskd"
fi
echo "build-arm64: done in $(( $(now) - T0 )) s"
