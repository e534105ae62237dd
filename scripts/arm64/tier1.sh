#!/usr/bin/env bash
# Tier-1 tests of the aarch64 build under qemu-user: see scripts/arm64/tier1.py (same options).
set -euo pipefail
exec python3 "$(dirname "$0")/tier1.py" "$@"
