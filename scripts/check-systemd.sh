#!/bin/sh
# Checks systemd/kioskd.service (or $UNIT): `systemd-analyze verify` must pass,
# `systemd-analyze security --offline=true` must give an exposure of at most 1.5, and the unit
# must keep the properties proven under a real systemd by the VM scenario systemd-unit:
#   - no ExecStartPre= (RestartPreventExitStatus=78 covers only the main process: a failing
#     pre-check is restarted every RestartSec forever);
#   - LimitNOFILE= with a hard limit of at least 4096;
#   - setpriority allowed after the @resources deny list, with LimitNICE= (otherwise the Swift
#     runtime logs "Failed to set thread priority" for its worker threads).
# When kioskd is not installed in /usr/local/bin, the unit is verified against the built binary
# (KIOSKD_BIN, default .build/debug/kioskd) through a temporary copy of the unit.
set -eu
cd "$(dirname "$0")/.."
unit=${UNIT:-systemd/kioskd.service}
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

echo "== unit properties $unit"
problems=$(awk '
    /^[[:space:]]*#/ { next }
    /^ExecStartPre=/ { print "ExecStartPre= is set (" $0 "): a failing pre-check is restarted forever; let kioskd exit 78 itself" }
    /^LimitNOFILE=/ { nofile = $0; v = $0; sub(/^LimitNOFILE=/, "", v); n = split(v, p, ":"); hard = p[n] }
    /^LimitNICE=/ { nice = 1 }
    /^SystemCallFilter=/ {
        v = $0; sub(/^SystemCallFilter=/, "", v)
        if (v ~ /^~/ && v ~ /@resources/) { denied = 1; allowed = 0 }
        else if (v !~ /^~/ && v ~ /(^|[[:space:]])setpriority([[:space:]]|$)/ && denied) { allowed = 1 }
    }
    END {
        if (nofile == "") print "no LimitNOFILE= (the default soft limit of 1024 is too small)"
        else if (hard != "infinity" && hard + 0 < 4096) print nofile ": hard limit below 4096"
        if (denied && !allowed) print "setpriority is denied (~@resources) and not allowed again after it"
        if (allowed && !nice) print "setpriority is allowed but LimitNICE= is missing"
    }' "$unit")
if [ -n "$problems" ]; then
    printf '%s\n' "$problems" >&2
    echo "check-systemd: FAIL: unit properties" >&2
    exit 1
fi
echo "unit properties: OK"

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
