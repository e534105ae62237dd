#!/usr/bin/env bash
# Installs what kioskd needs to build, run and test on Debian 12 (apt packages), then builds it.
# Every scripts/apt-*.txt lists packages one per line; this script installs them all.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# scripts/apt-build.txt: building kioskd; apt-swift.txt: the Swift toolchain's own needs; the others
# one step of scripts/test.sh each (scripts/preflight.sh checks them, and what the steps call).
pkgs=""
for f in scripts/apt-*.txt; do
    [ -f "$f" ] || continue
    pkgs="$pkgs $(grep -v '^\s*#' "$f" | tr '\n' ' ')"
done

missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup: installing$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# The kernel tests fetch Debian's kernel package with apt-get download: that needs package lists.
if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
    echo "setup: no apt package lists yet; apt-get update"
    $SUDO apt-get update -qq
fi
command -v swift >/dev/null || { echo "setup: swift is not on PATH (Swift 6.x toolchain needed, e.g. /opt/swift/usr/bin)"; exit 1; }
echo "setup: packages ok"
