#!/bin/sh
# Checks systemd/kioskd.service: `systemd-analyze verify` must pass and
# `systemd-analyze security --offline=true` must give an exposure of at most 1.5.
# When kioskd is not installed in /usr/local/bin, the unit is verified against the built binary
# (KIOSKD_BIN, default .build/debug/kioskd) through a temporary copy of the unit.
set -eu
cd "$(dirname "$0")/.."
unit=systemd/kioskd.service
max=1.5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check=$unit
if [ ! -x /usr/local/bin/kioskd ]; then
    bin=${KIOSKD_BIN:-.build/debug/kioskd}
    if [ ! -x "$bin" ]; then
        echo "check-systemd: no kioskd binary at /usr/local/bin/kioskd or $bin (build it, or set KIOSKD_BIN)" >&2
        exit 1
    fi
    bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
    sed "s|/usr/local/bin/kioskd|$bin|g" "$unit" > "$tmp/kioskd.service"
    check=$tmp/kioskd.service
fi

echo "== systemd-analyze verify $unit"
if ! out=$(systemd-analyze verify "$check" 2>&1); then
    echo "$out" >&2
    echo "check-systemd: FAIL: systemd-analyze verify reported problems" >&2
    exit 1
fi
[ -n "$out" ] && echo "$out"
echo "verify: OK"

echo "== systemd-analyze security --offline=true $unit"
report=$(systemd-analyze security --offline=true "$check" 2>&1) || true
score=$(printf '%s\n' "$report" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' | tail -n 1)
if [ -z "$score" ]; then
    echo "$report" >&2
    echo "check-systemd: FAIL: no exposure score in the report" >&2
    exit 1
fi
printf '%s\n' "$report" | grep '✗' || true
echo "exposure: $score (limit $max)"
if awk -v s="$score" -v m="$max" 'BEGIN { exit !(s > m) }'; then
    echo "check-systemd: FAIL: exposure $score is above $max" >&2
    exit 1
fi
echo "check-systemd: OK"
