#!/usr/bin/env bash
# Fills the caches of scripts/test.sh's later steps that are still cold, so that on a fresh
# machine their downloads and root builds run while the Swift builds hold the CPU instead of
# after them: the aarch64 compiler root and sysroot (scripts/arm64/toolchain.sh), the Debian 13
# arm64 root with its kernel and initramfs (vmtest.py --arch aarch64 --prepare), the Home
# Assistant root (scripts/ha/setup.sh), the x86_64 kernel and initramfs (vmtest.py --prepare).
# Each is made by the script its step runs, at the lowest CPU and I/O priority, all at once; a
# cache that is already there is not touched, so a warm run does nothing here. A failure is only
# logged: the step itself then tries again and reports it. Honours the skip variables of
# scripts/test.sh. Prints one line per cache with its time and status, and exits 0.
#   scripts/prefetch-caches.sh            (test.sh starts it in the background after preflight)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 0
cache=${KIOSK_CI_CACHE:-/var/cache/kioskd-ci}
on() { [ "${!1:-1}" = 1 ]; }
low() { nice -n 19 ionice -c 3 "$@"; }

fill() {  # name command...: runs in the background, prints its line when done
    local name=$1; shift
    (
        t=$SECONDS
        mkdir -p .build
        if low "$@" > ".build/prefetch-$name.log" 2>&1; then
            echo "prefetch: $name ready in $((SECONDS - t)) s"
        else
            echo "prefetch: $name FAILED after $((SECONDS - t)) s (its step tries again; log .build/prefetch-$name.log)"
        fi
    ) &
}

root=0; [ "$(id -u)" = 0 ] && root=1
started=0
if on KIOSK_ARM64 && [ $root = 1 ]; then
    if ! ls -d "$cache"/sid-swift-*/usr/bin/swift >/dev/null 2>&1 || ! ls "$cache"/sysroot-arm64-*/.complete >/dev/null 2>&1; then
        fill "aarch64-toolchain" bash scripts/arm64/toolchain.sh; started=$((started + 1))
    fi
    if on KIOSK_ARM64_VM && ! ls "$cache"/arm64-root-*/kernel/package >/dev/null 2>&1; then
        fill "arm64-root" python3 scripts/vm/vmtest.py --arch aarch64 --prepare; started=$((started + 1))
    fi
fi
if on KIOSK_HA_TESTS && [ $root = 1 ] && ! ls "$cache"/ha-root-*/opt/ha/.complete >/dev/null 2>&1; then
    fill "home-assistant-root" bash scripts/ha/setup.sh; started=$((started + 1))
fi
if on KIOSK_VM_TESTS && ! ls vm/work/vmlinux-* >/dev/null 2>&1; then
    fill "x86_64-kernel" python3 scripts/vm/vmtest.py --prepare; started=$((started + 1))
fi
[ $started = 0 ] && echo "prefetch: every cache is warm"
wait
exit 0
