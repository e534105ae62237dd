#!/usr/bin/env bash
# The arm64 CI job's first part: toolchain (cached in /var/cache/kioskd-ci), the aarch64 cross
# build, and the tier-1 tests under qemu-user. Exits non-zero on the first failing step.
set -euo pipefail
cd "$(dirname "$0")/../.."
now() { date +%s; }
T0=$(now)
step() {  # name command...
    local name="$1" t; shift
    t=$(now)
    echo "arm64-ci: == $name"
    if ! "$@"; then
        echo "arm64-ci: FAILED: $name after $(( $(now) - t )) s (job $(( $(now) - T0 )) s)"
        exit 1
    fi
    echo "arm64-ci: $name: $(( $(now) - t )) s"
}
toolchain() { out="$(bash scripts/arm64/toolchain.sh)" && eval "$out" && export SID_ROOT SYSROOT; }
step toolchain toolchain
step build-arm64 bash scripts/build-arm64.sh
step tier1 bash scripts/arm64/tier1.sh
echo "arm64-ci: done in $(( $(now) - T0 )) s"
